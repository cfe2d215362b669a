def validate(config: dict) -> list:
    raise NotImplementedError
