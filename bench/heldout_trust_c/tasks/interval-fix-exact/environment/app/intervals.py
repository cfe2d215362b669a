def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether the half-open intervals [a0, a1) and [b0, b1) share at least one point."""
    return a[0] <= b[1] and b[0] <= a[1]


def merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge overlapping half-open intervals; the result is sorted."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if out and overlaps(out[-1], (start, end)):
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
