"""The sterile_verifier rule: where its runner goes in a verifier script (generated command shapes), and what
the runner itself decides when it runs real pytest (pass, fail, an agent module that exits at import, no
test, a forcing conftest above the tests, the verifier's own junit path)."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from qaflow.audit.exploits.inprocess import EXIT_AT_IMPORT
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode
from qaflow.repair import sterile
from qaflow.repair.rules import EXIT_AT_IMPORT_EXPLOIT, PLANT_EXPLOIT, fix_sterile_verifier

CALL = sterile.RUNNER_CALL
HEADS = ["", "A=1 ", "A=1 B='x y' ", "env A=1 ", "timeout 60 ", "exec ", "time ", "uv run ", "timeout -k 5 30 "]
PROGRAMS = [
    "pytest",
    "py.test",
    "/usr/local/bin/pytest",
    "python3 -m pytest",
    "/app/.venv/bin/python -I -m pytest",
    "uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest",
]
TAILS = [" /tests/test_outputs.py -rA", " -q /tests", " /tests/test_x.py | tee /logs/verifier/out.txt"]
CONTEXTS = [
    "{cmd}\n",
    "{cmd}; status=$?\n",
    "if {cmd}; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
    "cd /tests && {cmd}\n",
    "set +e\n{cmd} || status=$?\n",
    "while ! {cmd}; do break; done\n",
]
UNTOUCHED = [
    "pip install pytest\n",
    "uv pip install pytest==8.4.1\n",
    'echo "run pytest now"\n',
    "# pytest runs below\n",
    "which pytest\n",
    "uvx ruff check /app\n",
    "cat > /tmp/x.sh <<'EOF'\npytest /tests\nEOF\n",
    "python3 /tests/check.py\n",
]


SHAPES = [
    (head, program, tail, context)
    for head, program, tail, context in itertools.product(HEADS, PROGRAMS, TAILS[:2], CONTEXTS[:3])
    if not (head == "uv run " and program.startswith(("uvx", "/app/.venv")))  # not a command anyone writes
]


@pytest.mark.parametrize("head,program,tail,context", SHAPES, ids=str)
def test_the_runner_starts_each_pytest_command_right_before_its_program(head, program, tail, context):
    script = "#!/bin/bash\n" + context.format(cmd=head + program + tail)
    wrapped = sterile.wrap_pytest(script)
    want = "#!/bin/bash\n" + context.format(cmd=head + CALL + program + tail)
    assert wrapped == want
    assert sterile.wrap_pytest(wrapped) is None  # once only
    assert subprocess.run(["bash", "-n", "-c", wrapped]).returncode == 0


@pytest.mark.parametrize("context", CONTEXTS[3:])
@pytest.mark.parametrize("tail", TAILS)
def test_the_runner_starts_commands_in_lists_and_pipelines(context, tail):
    wrapped = sterile.wrap_pytest(context.format(cmd="pytest" + tail))
    assert wrapped == context.format(cmd=CALL + "pytest" + tail)


@pytest.mark.parametrize("text", UNTOUCHED)
def test_pytest_named_outside_a_command_is_left_alone(text):
    assert sterile.wrap_pytest(text) is None


def _tamper(exploit: str) -> AuditFinding:
    return AuditFinding(
        code=FindingCode.REWARD_TAMPER,
        message="m",
        evidence={"exploits": [{"exploit": exploit, "files": ["/app/solution.py"]}]},
    )


def test_the_rule_adds_the_runner_and_an_ini_only_for_an_exit_at_import_win():
    assert EXIT_AT_IMPORT_EXPLOIT == EXIT_AT_IMPORT
    files = {"tests/test.sh": "#!/bin/bash\npytest /tests/test_outputs.py\n", "tests/test_outputs.py": "x = 1\n"}
    assert fix_sterile_verifier(files, [_tamper(PLANT_EXPLOIT)]) == {}
    changes = fix_sterile_verifier(files, [_tamper(EXIT_AT_IMPORT)])
    assert changes["tests/test.sh"] == f"#!/bin/bash\n{CALL}pytest /tests/test_outputs.py\n"
    assert changes["tests/qaflow_pytest.ini"] == sterile.INI_TEXT
    assert "ini=/tests/qaflow_pytest.ini" in changes["tests/qaflow_sterile.sh"]
    own = files | {"tests/pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"}
    changes = fix_sterile_verifier(own, [_tamper(EXIT_AT_IMPORT)])
    assert "tests/qaflow_pytest.ini" not in changes
    assert "ini=/tests/pyproject.toml" in changes["tests/qaflow_sterile.sh"]
    steps = {"steps/one/tests/test.sh": "python3 -m pytest /tests\n", "tests/test.sh": "echo 1\n"}
    changes = fix_sterile_verifier(steps, [_tamper(EXIT_AT_IMPORT)])
    assert sorted(changes) == [
        "steps/one/tests/qaflow_pytest.ini",
        "steps/one/tests/qaflow_sterile.sh",
        "steps/one/tests/test.sh",
    ]
    assert fix_sterile_verifier({"tests/test.sh": "python3 /tests/check.py\n"}, [_tamper(EXIT_AT_IMPORT)]) == {}


# --- the runner, on real pytest -------------------------------------------------------------------------


@pytest.fixture
def verifier(tmp_path: Path) -> Path:
    """A verifier folder with the runner and its empty ini, under a folder where the agent planted an ini and a
    conftest that turns every failure into a pass."""
    tests = tmp_path / "box" / "tests"
    tests.mkdir(parents=True)
    (tests / "qaflow_pytest.ini").write_text(sterile.INI_TEXT)
    (tests / "qaflow_sterile.sh").write_text(sterile.runner_text(str(tests / "qaflow_pytest.ini"), str(tests)))
    (tmp_path / "box" / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.hookimpl(wrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    report = yield\n    report.outcome = 'passed'\n    return report\n"
    )
    (tmp_path / "box" / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "app").mkdir()
    return tests


def _run(
    tests: Path, test_file: str, *args: str, agent: str = "def f():\n    return 1\n", sterile_run: bool = True
) -> tuple[int, str]:
    (tests.parent.parent / "app" / "agent.py").write_text(agent)
    (tests / "test_it.py").write_text(
        f"import sys\n\nsys.path.insert(0, {str(tests.parent.parent / 'app')!r})\n\nfrom agent import f\n\n\n"
        + test_file
    )
    runner = tests / "qaflow_sterile.sh"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests / "test_it.py"), *args]
    if sterile_run:
        cmd = ["bash", str(runner), *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tests.parent, timeout=120)
    return done.returncode, done.stdout + done.stderr


def test_the_runner_passes_a_passing_run_and_fails_a_failing_one(verifier: Path):
    assert _run(verifier, "def test_f():\n    assert f() == 1\n")[0] == 0
    failing = "def test_f():\n    assert f() == 2\n"
    assert _run(verifier, failing, sterile_run=False)[0] == 0  # the planted conftest decides a plain run
    status, out = _run(verifier, failing)
    assert status != 0, out


def test_an_agent_module_that_exits_at_import_does_not_pass(verifier: Path):
    exits = "import os\nos._exit(0)\n"
    assert _run(verifier, "def test_f():\n    assert f() == 1\n", agent=exits, sterile_run=False)[0] == 0
    status, out = _run(verifier, "def test_f():\n    assert f() == 1\n", agent=exits)
    assert status == 1 and "wrote no junit report" in out, out


@pytest.mark.parametrize(
    "test_file,why",
    [
        ("def helper():\n    pass\n", "no test"),
        ("import pytest\n\n\n@pytest.mark.skip\ndef test_f():\n    assert False\n", "0 passed"),
    ],
)
def test_a_run_with_no_passed_test_does_not_pass(verifier: Path, test_file: str, why: str):
    status, out = _run(verifier, test_file)
    assert status != 0, (why, out)


def test_the_verifiers_own_junit_report_is_kept_and_read(verifier: Path, tmp_path: Path):
    own = tmp_path / "logs" / "junit.xml"
    own.parent.mkdir()
    own.write_text('<testsuite tests="5" failures="0" errors="0" skipped="0">')  # stale, from the agent
    status, out = _run(verifier, "def test_f():\n    assert f() == 2\n", f"--junitxml={own}")
    assert status != 0, out
    assert 'failures="1"' in own.read_text()
    assert _run(verifier, "def test_f():\n    assert f() == 1\n", "--junitxml", str(own))[0] == 0
