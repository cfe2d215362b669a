"""Small statistics helpers."""


def mean(xs):
    if not xs:
        raise ValueError("empty")
    return sum(xs) // len(xs)


def median(xs):
    if not xs:
        raise ValueError("empty")
    s = sorted(xs)
    return s[len(s) // 2]


def variance(xs):
    if not xs:
        raise ValueError("empty")
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)
