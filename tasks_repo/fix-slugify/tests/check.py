"""Behavioural checks of slugify() on titles with punctuation, accents and a length limit."""

import importlib.util
import sys

spec = importlib.util.spec_from_file_location("slugify", "/app/slugify.py")
module = importlib.util.module_from_spec(spec)
try:
    spec.loader.exec_module(module)
    slugify = module.slugify
except Exception as e:  # a broken module is a failed check, not a verifier crash
    sys.exit(f"cannot import slugify from /app/slugify.py: {e!r}")

CASES = [
    (("Hello, World!",), "hello-world"),
    (("  Crème Brûlée -- Recipe  ",), "creme-brulee-recipe"),
    (("C'est la vie",), "c-est-la-vie"),
    (("2024: A Year in Review",), "2024-a-year-in-review"),
    (("The quick brown fox jumps", 10), "the-quick"),
    (("***",), ""),
    (("already-a-slug",), "already-a-slug"),
    (("Release Notes",), "release-notes"),
]
for args, want in CASES:
    try:
        got = slugify(*args)
    except Exception as e:
        sys.exit(f"slugify{args!r} raised {e!r}")
    if got != want:
        sys.exit(f"slugify{args!r} = {got!r}, expected {want!r}")
print("ok")
