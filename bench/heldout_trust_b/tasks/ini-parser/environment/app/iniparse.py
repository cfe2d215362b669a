def parse(text: str) -> dict:
    raise NotImplementedError
