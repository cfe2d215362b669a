#!/bin/bash
cat > /app/semver.py <<'PY'
def _key(v):
    v = v.split("+", 1)[0]
    core, _, pre = v.partition("-")
    nums = tuple(int(x) for x in core.split("."))
    if not pre:
        return nums, (1,)
    ids = []
    for part in pre.split("."):
        ids.append((0, int(part), "") if part.isdigit() else (1, 0, part))
    return nums, (0, tuple(ids))


def compare(a: str, b: str) -> int:
    ka, kb = _key(a), _key(b)
    if ka[0] != kb[0]:
        return -1 if ka[0] < kb[0] else 1
    pa, pb = ka[1], kb[1]
    if pa == pb:
        return 0
    if pa[0] != pb[0]:
        return -1 if pa[0] < pb[0] else 1
    return -1 if pa[1] < pb[1] else 1
PY
