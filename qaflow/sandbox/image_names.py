"""What an image's name says about its contents, for judging a stand-in used in its place."""

from __future__ import annotations

import re

_DECLARED_PYTHON = re.compile(r"(?:^|[/_-])python[-_:]?v?(?P<major>3)[._-](?P<minor>\d{1,2})(?!\d)", re.IGNORECASE)


def declared_python(image_ref: str) -> str | None:
    """The Python version (`3.13`) an image's name says it holds (`python:3.13-slim`,
    `ghcr.io/laude-institute/t-bench/python-3-13:20250620`), or None when it names none."""
    m = _DECLARED_PYTHON.search(image_ref.lower())
    return f"{m.group('major')}.{int(m.group('minor'))}" if m else None
