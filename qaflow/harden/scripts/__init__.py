"""Stand-alone scripts (python3 standard library only) copied into hardened task folders.

They are data for `qaflow.harden`: read with `script_text(name)`, never imported by qaflow itself.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def script_text(name: str) -> str:
    """The source of the script `name` (e.g. `workstate.py`)."""
    return (HERE / name).read_text(encoding="utf-8")
