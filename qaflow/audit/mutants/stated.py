"""What the instruction states about a correct answer that decides whether a changed answer is wrong.

A mutant is a wrong solution only by the instruction's own terms: answers in another order are wrong only
where the instruction asks for an order, and one wrong record among many is wrong only where the instruction
does not allow some wrong ones (a stated accuracy bar: "at least 90% of the labels must be right").
"""

from __future__ import annotations

import re

_ORDER = re.compile(
    r"\b(sort(?:ed|s|ing)?|ascending|descending|increasing|decreasing|alphabetical(?:ly)?|chronological(?:ly)?"
    r"|in (?:the )?(?:same |original |input |reverse |this |that )?order|ordered by|rank(?:ed|ing)?|newest first"
    r"|oldest first)\b",
    re.IGNORECASE,
)
_ANY_ORDER = re.compile(
    r"\b(?:in )?(?:any|arbitrary) order\b|\border (?:does not|doesn't|do not|don't|need not) matter\b"
    r"|\bregardless of (?:the )?order\b|\bunordered\b|\border is (?:not|un)important\b|\bnot (?:be )?sorted\b",
    re.IGNORECASE,
)
_SHARE = re.compile(
    r"\b(?:at least|no less than|a minimum of|>=?)\s*(\d{1,3}(?:\.\d+)?)\s*(%|percent)",
    re.IGNORECASE,
)
_FRACTION = re.compile(
    r"\b(?:accuracy|score|f1|precision|recall)[^.\n]{0,40}?(?:at least|of|>=?|above)\s*(0\.\d+)\b", re.IGNORECASE
)


def asks_for_order(instruction: str) -> bool:
    """Whether the instruction asks for the answer in an order (sorted, ranked, in the input's order) and does not
    also say that any order will do."""
    return bool(_ORDER.search(instruction)) and not _ANY_ORDER.search(instruction)


_CORRECT = re.compile(r"\b(right|correct(?:ly)?|accura(?:te|cy)|match(?:es)?|agree|pass(?:es)?)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n\s*\n")


def tolerated_share(instruction: str) -> float:
    """The share of an answer the instruction allows to be wrong (0.1 for "at least 90% must be right"): a bar in a
    sentence about being right; 0 where it states none (a share of something else, "30% faster", is no bar)."""
    bars: list[float] = []
    for sentence in _SENTENCE.split(instruction):
        if _CORRECT.search(sentence):
            bars += [float(m.group(1)) / 100 for m in _SHARE.finditer(sentence)]
        bars += [float(m.group(1)) for m in _FRACTION.finditer(sentence)]
    bars = [b for b in bars if 0 < b < 1]
    return 1 - max(bars) if bars else 0.0
