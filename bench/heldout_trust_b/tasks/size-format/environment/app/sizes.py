def format_size(n: int, binary: bool = True) -> str:
    raise NotImplementedError
