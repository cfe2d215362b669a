def bump(version: str, part: str) -> str:
    raise NotImplementedError
