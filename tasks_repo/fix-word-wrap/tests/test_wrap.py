"""wrap() keeps every word, in order, on lines no longer than the width (unless a word is longer)."""

import sys

sys.path.insert(0, "/app")
from wordwrap import wrap  # noqa: E402

CASES = [
    ("the quick brown fox jumps over the lazy dog", 10, ["the quick", "brown fox", "jumps over", "the lazy", "dog"]),
    ("a bb ccc", 3, ["a", "bb", "ccc"]),
    ("supercalifragilistic is long", 8, ["supercalifragilistic", "is long"]),
    ("", 5, []),
    ("one", 10, ["one"]),
]

for text, width, expected in CASES:
    got = wrap(text, width)
    if got != expected:
        sys.exit(f"wrap({text!r}, {width}) = {got!r}, expected {expected!r}")
print("ok")
