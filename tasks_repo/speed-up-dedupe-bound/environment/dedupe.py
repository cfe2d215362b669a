def dedupe(items):
    """The items without repeats, each kept where it first appears."""
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out
