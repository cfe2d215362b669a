"""Delta debugging over plant groups: from a set of plants that gets full reward, the smaller set that still does.

`ddmin` is a generator driven by the caller, which runs each round's candidates (in parallel) and sends
back which got full reward; it returns the smallest passing set it found. Zeller's ddmin, in rounds:
the set split in n parts, each part and (past two parts) each complement tried at once; the smallest
that passes becomes the set; none passing doubles n, up to single groups.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

from qaflow.audit.exploits import Exploit, Plant

MAX_ROUNDS = 8
MAX_CANDIDATES = 24


def _split(items: list[str], n: int) -> list[list[str]]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out


def ddmin(groups: Sequence[str], *, rounds: int = MAX_ROUNDS) -> Generator[list[list[str]], list[bool], list[str]]:
    current, n = list(groups), 2
    for _ in range(rounds):
        if len(current) <= 1:
            break
        chunks = _split(current, min(n, len(current)))
        candidates = chunks + ([[g for g in current if g not in c] for c in chunks] if len(chunks) > 2 else [])
        candidates = candidates[:MAX_CANDIDATES]
        results = yield candidates
        passing = [c for c, ok in zip(candidates, results, strict=True) if ok]
        if passing:
            best = min(passing, key=len)
            n = 2 if best in chunks else max(len(chunks) - 1, 2)
            current = best
        elif len(chunks) >= len(current):
            break
        else:
            n = min(len(current), 2 * len(chunks))
    return current


def group_of(plant: Plant) -> str:
    return plant.group or plant.path


def groups_of(exploit: Exploit) -> list[str]:
    return list(dict.fromkeys(group_of(p) for p in exploit.plants))


def only(exploit: Exploit, groups: Sequence[str], name: str) -> Exploit:
    """`exploit` with the plants of `groups` only, named `name`."""
    keep = set(groups)
    return Exploit(name=name, plants=[p for p in exploit.plants if group_of(p) in keep])
