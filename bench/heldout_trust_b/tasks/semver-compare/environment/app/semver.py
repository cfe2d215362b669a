def compare(a: str, b: str) -> int:
    raise NotImplementedError
