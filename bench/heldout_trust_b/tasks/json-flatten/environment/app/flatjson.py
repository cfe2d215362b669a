def flatten(doc, sep="."):
    raise NotImplementedError


def unflatten(flat, sep="."):
    raise NotImplementedError
