"""Writes small multi-step ([[steps]]) task folders for tests.

The stock task has three steps over one shop's stock list, in the manner of Harbor's advanced
multi-step example: `counter` (a script counting lines), `restock` (a file shipped in the step's
workdir/ with a setup.sh that tidies it and deletes itself; the verifier reads its expected value
from a step env var and a fixture), `total` (a sum, plus a regression check of both earlier steps).
Every step's test.sh sources the task-level tests/grade.sh helper.
"""

from __future__ import annotations

from pathlib import Path

DOCKERFILE = "FROM python:3.11-slim\nWORKDIR /app\n"

GRADE_SH = """\
# Shared by every step's test.sh (uploaded to /tests before the step's own files).
mkdir -p /logs/verifier
grade() { echo "$1" > /logs/verifier/reward.txt; exit 0; }
same_as() {
    [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]
}
"""

COUNTER = {
    "instruction.md": (
        "Write an executable bash script `/app/counter.sh` that prints how many lines the file named by\n"
        "its first argument has, as a bare number.\n"
    ),
    "solution/solve.sh": (
        "#!/bin/bash\nprintf '#!/bin/bash\\nwc -l < \"$1\"\\n' > /app/counter.sh\nchmod +x /app/counter.sh\n"
    ),
    "tests/test.sh": (
        "#!/bin/bash\nsource /tests/grade.sh\n"
        "printf 'a\\nb\\nc\\n' > /tmp/three.txt\n"
        '[ -x /app/counter.sh ] && [ "$(/app/counter.sh /tmp/three.txt)" = 3 ] && grade 1\n'
        "grade 0\n"
    ),
}

RESTOCK = {
    "instruction.md": (
        "The shop's stock is in `/app/stock.csv` (`item,count` rows). Write `/app/restock.txt` listing,\n"
        "in file order and one per line, the items whose count is zero.\n"
    ),
    "workdir/stock.csv": "apples,4\r\npears,0\r\nplums,7\r\nfigs,0\r\nkiwis,2\r\n",
    "workdir/setup.sh": (
        "#!/bin/bash\nset -euo pipefail\ntr -d '\\r' < stock.csv > stock.tmp && mv stock.tmp stock.csv\nrm -- \"$0\"\n"
    ),
    "solution/solve.sh": "#!/bin/bash\nawk -F, '$2 == 0 {print $1}' /app/stock.csv > /app/restock.txt\n",
    "tests/wanted.txt": "pears\nfigs\n",
    "tests/test.sh": (
        "#!/bin/bash\nsource /tests/grade.sh\n"
        "[ -e /app/setup.sh ] && grade 0\n"
        '[ "$(wc -l < /app/restock.txt)" = "$ZERO_ROWS" ] || grade 0\n'
        'same_as /app/restock.txt "$(cat /tests/wanted.txt)" && grade 1\n'
        "grade 0\n"
    ),
}

WEAK_RESTOCK_TEST = "#!/bin/bash\nsource /tests/grade.sh\n[ -f /app/restock.txt ] && grade 1\ngrade 0\n"

TOTAL = {
    "instruction.md": "Write to `/app/total.txt` the total count of all items in `/app/stock.csv`, as a bare number.\n",
    "solution/solve.sh": "#!/bin/bash\nawk -F, '{s += $2} END {print s}' /app/stock.csv > /app/total.txt\n",
    "tests/test.sh": (
        "#!/bin/bash\nsource /tests/grade.sh\n"
        'same_as /app/restock.txt "$(printf "pears\\nfigs")" || grade 0\n'
        '[ "$(/app/counter.sh /app/stock.csv)" = 5 ] || grade 0\n'
        "same_as /app/total.txt 13 && grade 1\n"
        "grade 0\n"
    ),
}


TIMEOUTS = {"counter": (30.0, 20.0), "restock": (40.0, 25.0), "total": (30.0, 20.0)}
"""Per step: (agent, verifier) timeout_sec."""


def _steps_toml(
    strategy: str | None, min_rewards: dict[str, str], timeouts: dict[str, tuple[float, float]]
) -> tuple[str, str]:
    head = f'multi_step_reward_strategy = "{strategy}"\n' if strategy else ""
    out = []
    for name, (agent_s, verifier_s) in timeouts.items():
        gate = f"min_reward = {min_rewards[name]}\n" if name in min_rewards else ""
        env = '\n[steps.verifier.env]\nZERO_ROWS = "2"\n' if name == "restock" else ""
        out.append(
            f'[[steps]]\nname = "{name}"\n{gate}\n[steps.agent]\ntimeout_sec = {agent_s}\n\n'
            f"[steps.verifier]\ntimeout_sec = {verifier_s}\n{env}\n"
        )
    return head, "".join(out)


def write_stock_task(
    root: Path,
    name: str = "stock",
    *,
    strategy: str | None = None,
    min_rewards: dict[str, str] | None = None,
    overrides: dict[str, str] | None = None,
    timeouts: dict[str, tuple[float, float]] | None = None,
) -> Path:
    """The three-step stock task under root/name; `overrides` replaces or adds files (path -> text),
    `min_rewards` replaces the gates (default: counter and restock at 1.0), `timeouts` some steps' timeouts."""
    gates = {"counter": "1.0", "restock": "1.0"} if min_rewards is None else min_rewards
    head, steps = _steps_toml(strategy, gates, {**TIMEOUTS, **(timeouts or {})})
    task = root / name
    files = {
        "task.toml": (
            f'schema_version = "1.4"\n{head}\n[task]\nname = "test/{name}"\n\n'
            "[agent]\ntimeout_sec = 60.0\n\n[verifier]\ntimeout_sec = 60.0\n\n" + steps
        ),
        "environment/Dockerfile": DOCKERFILE,
        "tests/grade.sh": GRADE_SH,
    }
    for step, content in (("counter", COUNTER), ("restock", RESTOCK), ("total", TOTAL)):
        files.update({f"steps/{step}/{rel}": text for rel, text in content.items()})
    files.update(overrides or {})
    for rel, text in files.items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    return task
