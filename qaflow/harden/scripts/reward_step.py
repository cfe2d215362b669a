"""One step of a composite verifier (qaflow harden): read the reward a sub-verifier left, then clear it.

Copied into the task's tests/ as `qaflow_reward.py`. Reads /logs/verifier/reward.json (every value
must be at least 1) or else reward.txt (the number must be at least 1), removes both files so the
next step starts clean, prints what it read, and exits 0 only for a full reward: a missing, empty
or non-numeric reward is a failed step, never a pass.

Usage: python3 qaflow_reward.py LABEL
"""

from __future__ import annotations

import json
import math
import os
import sys

LOGS = "/logs/verifier"
FILES = ("reward.json", "reward.txt")


def number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        out = float(value)
    except ValueError:
        return None
    return out if math.isfinite(out) else None


def values() -> dict[str, float | None] | None:
    for name in FILES:
        path = os.path.join(LOGS, name)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        if name == "reward.txt":
            return {"reward": number(text.strip())}
        try:
            data = json.loads(text)
        except ValueError:
            return {"reward.json": None}
        if isinstance(data, dict) and data:
            return {str(k): number(v) for k, v in data.items()}
        return {"reward.json": number(data)}
    return None


def main() -> int:
    label = sys.argv[1] if len(sys.argv) > 1 else "step"
    found = values()
    for name in FILES:
        path = os.path.join(LOGS, name)
        if os.path.lexists(path):
            os.remove(path)
    full = bool(found and all(v is not None and v >= 1.0 for v in found.values()))
    print(f"{label}: reward {json.dumps(found)} -> {'full' if full else 'not full'}")
    return 0 if full else 1


if __name__ == "__main__":
    sys.exit(main())
