"""title_case() capitalises words but the small ones (unless first)."""

import sys

sys.path.insert(0, "/app")
from titles import title_case  # noqa: E402

CASES = {
    "the lord of the rings": "The Lord of the Rings",
    "A TALE OF TWO CITIES": "A Tale of Two Cities",
    "war and peace": "War and Peace",
    "in the heat of the night": "In the Heat of the Night",
    "an apple a day": "An Apple a Day",
}
for text, expected in CASES.items():
    if title_case(text) != expected:
        sys.exit(f"title_case({text!r}) = {title_case(text)!r}, expected {expected!r}")
print("ok")
