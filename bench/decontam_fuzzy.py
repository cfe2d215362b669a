"""Decontamination's fuzzy test: difflib's `SequenceMatcher.ratio` (what qaflow had) against rapidfuzz's
`fuzz.ratio` (what it uses now), same pairs, same run.

Benchmark items are the bundled tasks' instructions (`tasks_repo/*/instruction.md`, normalised as the stage
does). Each item gets edited copies at word-edit rates from 2% to 40% (words replaced, inserted or deleted at
random): the copies at <= 10% are contaminated by definition (planted), those at >= 30% are not. Every copy is
scored against every item (the stage's exhaustive mode). Reported: seconds for all pairs with each scorer, and
at the stage's threshold (0.8) the recall on planted copies, the flags on heavily edited copies (>= 30%) of their
own item and on other items (none is expected there), and how many decisions differ between the two.

rapidfuzz's ratio is the normalised Indel similarity, 2 * LCS / (len a + len b); difflib's is 2 * M / (len a +
len b) with M the matches of its Ratcliff/Obershelp blocks, never more than the LCS: rapidfuzz's score is the
exact one, and never lower.

Usage: python bench/decontam_fuzzy.py [--items 30] [--copies 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import time
from difflib import SequenceMatcher
from pathlib import Path

from rapidfuzz import fuzz

from curation.dedup import normalise

REPO = Path(__file__).resolve().parent.parent
RATES = (0.02, 0.05, 0.10, 0.30, 0.40)
PLANTED, UNRELATED = 0.10, 0.30
THRESHOLD = 0.8


def difflib_ratio(a: str, b: str) -> float:
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def rapidfuzz_ratio(a: str, b: str) -> float:
    return fuzz.ratio(a, b) / 100


def edit(words: list[str], rate: float, vocabulary: list[str], rng: random.Random) -> list[str]:
    out = list(words)
    for _ in range(max(1, round(rate * len(words)))):
        i = rng.randrange(len(out))
        kind = rng.choice(("replace", "insert", "delete"))
        if kind == "replace":
            out[i] = rng.choice(vocabulary)
        elif kind == "insert":
            out.insert(i, rng.choice(vocabulary))
        elif len(out) > 1:
            del out[i]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=30, help="benchmark items (the first of tasks_repo)")
    parser.add_argument("--copies", type=int, default=3, help="edited copies per item and rate")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    paths = sorted((REPO / "tasks_repo").glob("*/instruction.md"))[: args.items]
    items = [normalise(p.read_text(errors="replace")) for p in paths]
    vocabulary = sorted({w for text in items for w in text.split()})
    copies = [
        (origin, rate, " ".join(edit(text.split(), rate, vocabulary, rng)))
        for origin, text in enumerate(items)
        for rate in RATES
        for _ in range(args.copies)
    ]
    pairs = [(c, i) for c in range(len(copies)) for i in range(len(items))]
    print(f"{len(items)} items ({sum(map(len, items)) // len(items)} characters on average), {len(copies)} copies, ")
    print(f"{len(pairs)} pairs")
    scores = {}
    for name, scorer in (("difflib", difflib_ratio), ("rapidfuzz", rapidfuzz_ratio)):
        t0 = time.perf_counter()
        scores[name] = [scorer(copies[c][2], items[i]) for c, i in pairs]
        seconds = time.perf_counter() - t0
        flagged = [s >= THRESHOLD for s in scores[name]]
        own = [(copies[c][1], f) for (c, i), f in zip(pairs, flagged, strict=True) if copies[c][0] == i]
        planted = [f for rate, f in own if rate <= PLANTED]
        heavy = [f for rate, f in own if rate >= UNRELATED]
        other = [f for (c, i), f in zip(pairs, flagged, strict=True) if copies[c][0] != i]
        print(
            f"{name:>9}: {seconds:7.2f} s ({seconds / len(pairs) * 1e6:8.1f} us a pair); recall on planted copies "
            f"{sum(planted)}/{len(planted)}; heavy edits flagged {sum(heavy)}/{len(heavy)}; other items flagged "
            f"{sum(other)}/{len(other)}"
        )
    differ = sum(
        (a >= THRESHOLD) != (b >= THRESHOLD) for a, b in zip(scores["difflib"], scores["rapidfuzz"], strict=True)
    )
    lower = sum(b < a - 1e-9 for a, b in zip(scores["difflib"], scores["rapidfuzz"], strict=True))
    print(f"decisions that differ at {THRESHOLD}: {differ}; pairs where rapidfuzz scores lower than difflib: {lower}")


if __name__ == "__main__":
    main()
