"""Writes small Harbor task folders for tests."""

from __future__ import annotations

from pathlib import Path

DEFAULT_DOCKERFILE = "FROM python:3.11-slim\nWORKDIR /app\n"
REWARD_FROM_FILE = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    'if [ "$(cat /app/out.txt 2>/dev/null)" = done ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
)

JUNIT_COUNTER = """import sys
import xml.etree.ElementTree as ET

try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print(0)
    raise SystemExit(0)
suites = [root] if root.tag == "testsuite" else list(root)
tests = sum(int(s.get("tests", 0)) for s in suites)
bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) + int(s.get("skipped", 0)) for s in suites)
print(1 if tests > 0 and bad == 0 else 0)
"""
"""A verifier file that prints 1 when a junit report lists at least one test and no failure, error or skip."""


def write_task(
    root: Path,
    name: str = "t",
    *,
    test_sh: str = REWARD_FROM_FILE,
    solve_sh: str = "#!/bin/bash\necho done > /app/out.txt\n",
    dockerfile: str = DEFAULT_DOCKERFILE,
    toml_extra: str = "",
    instruction: str = "Write `done` to /app/out.txt.\n",
    files: dict[str, str] | None = None,
) -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "solution").mkdir()
    (task / "task.toml").write_text(
        f'schema_version = "1.4"\n\n[task]\nname = "test/{name}"\n\n'
        "[verifier]\ntimeout_sec = 30.0\n\n[agent]\ntimeout_sec = 30.0\n" + toml_extra
    )
    (task / "instruction.md").write_text(instruction)
    (task / "environment" / "Dockerfile").write_text(dockerfile)
    (task / "tests" / "test.sh").write_text(test_sh)
    (task / "solution" / "solve.sh").write_text(solve_sh)
    for rel, text in (files or {}).items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    return task
