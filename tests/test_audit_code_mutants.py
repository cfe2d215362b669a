"""Code mutants: one-change mutants of the reference solution's Python, the tests' inputs they are judged
on, and, run on bwrap, a weak test found by a surviving boundary mutant that computes something else,
while a test of the boundary stays clean and an equivalent survivor is never reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from qaflow.audit.mutants.code import code_mutants
from qaflow.audit.mutants.differential import DIFF_SCRIPT, diff_config, inputs_from_tests, public_functions
from qaflow.audit.runner import AuditConfig, Auditor
from qaflow.cli import app
from qaflow.models.records import FindingCode, RunKind
from qaflow.pool import Pool
from tests.conftest import require_backend
from tests.taskfactory import write_task

BELOW_ZERO = '''def below_zero(ops):
    """Whether the running balance of `ops` ever drops below zero."""
    balance = 0
    for op in ops:
        balance += op
        if balance < 0:
            return True
    return False
'''


def test_each_operator_makes_a_one_line_change() -> None:
    source = BELOW_ZERO + "\n\ndef pick(xs, i):\n    return sorted(xs, key=lambda x: x[0])[i - 1] * 2\n"
    mutants = code_mutants("/app/solution.py", source, limit=50)
    operators = {m.operator for m in mutants}
    assert operators == {"comparison", "arithmetic", "constant", "index", "negate", "remove", "return-input"}
    for m in mutants:
        changed = [ln for ln in m.diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        assert 1 <= len(changed) <= 2, m.diff
        assert m.source != source
    shown = {
        ln[1:].strip()
        for m in mutants
        if m.operator in ("comparison", "index")
        for ln in m.diff.splitlines()
        if ln.startswith("+") and not ln.startswith("+++")
    }
    assert "if balance <= 0:" in shown and "return sorted(xs, key=lambda x: x[1])[i - 1] * 2" in shown
    assert "return sorted(xs, key=lambda x: x[0])[i + 1] * 2" in shown
    # deterministic, bounded, every kind in a small sample
    again = code_mutants("/app/solution.py", source, limit=7)
    assert [m.name for m in again] == [m.name for m in code_mutants("/app/solution.py", source, limit=7)]
    assert len({m.operator for m in again}) == 7


def test_nothing_inside_a_while_loop_and_nothing_of_broken_code() -> None:
    looping = "def count(n):\n    i = 0\n    while i < n:\n        i = i + 1\n    return i\n"
    lines = {m.line for m in code_mutants("/app/c.py", looping, limit=50)}
    assert lines and not lines & {3, 4}
    assert code_mutants("/app/c.py", "def broken(:\n") == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["a < b", "a + 1", "xs[0]", "xs[i - 1]", "n * 2", "not a", "a == 3"]), min_size=1))
def test_every_mutant_parses_and_differs(expressions: list[str]) -> None:
    body = "".join(f"    r{i} = {e}\n" for i, e in enumerate(expressions))
    source = f"def f(a, b, xs, i, n):\n{body}    return r0\n"
    for m in code_mutants("/app/f.py", source, limit=20):
        compile(m.source, "f.py", "exec")
        assert m.source != source


def test_inputs_come_from_literal_calls_and_parametrize_rows(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('ops, want', [([1, -2], True), ([3], False)])\n"
        "def test_table(ops, want):\n    assert below_zero(ops) is want\n\n"
        "def test_calls():\n    assert below_zero([5, -1]) is False\n    assert other(1, 2, 3) == 0\n"
    )
    functions = public_functions(BELOW_ZERO)
    assert functions == {"below_zero": 1}
    calls = inputs_from_tests(tmp_path, functions)
    args = [a for name, a in calls if name == "below_zero"]
    assert [[1, -2]] in args and [[3]] in args and [[5, -1]] in args  # rows, the expected value dropped
    assert [[1, -1]] in args and [[5, 0]] in args  # items moved by one
    assert all(name == "below_zero" for name, _ in calls)


def test_inputs_are_calls_of_the_module_and_tables_of_inputs_written_as_source(tmp_path: Path) -> None:
    """Literal calls of other things (an import, a builtin, a method) are no inputs; a HumanEval-style table
    of inputs as source strings is: a tuple is one argument each, anything else one argument."""
    (tmp_path / "test_outputs.py").write_text(
        "import importlib.util\nfrom pathlib import Path\n\n"
        "def test_solution():\n"
        "    spec = importlib.util.spec_from_file_location('solution', Path('/app/solution.py'))\n"
        "    assert 'def '.startswith('de') and len('(') == 1\n"
        "    cases = [[\"'o dsf r|'\", [[4, 4], ['note', 'rest']]], ['[1, 2], 3', 'x'], ['(5,)', None],\n"
        "             ['1 + 1e-9', 2]]\n"
        "    names = [['note', 'rest'], ['rest', 'note']]\n"
        "    assert candidate('given') == 1\n"
    )
    one = inputs_from_tests(tmp_path, {"parse": 1})
    got = [a for _, a in one]
    assert all(want in got for want in (["o dsf r|"], [5], [4], [6], ["given"], [[1, 2], 3]))  # a table: as passed
    two = inputs_from_tests(tmp_path, {"pick": 2})
    assert [[1, 2], 3] in [a for _, a in two] and ["o dsf r|", [[4, 4], ["note", "rest"]]] not in [a for _, a in two]
    assert all(a[0] not in ("/app/solution.py", "def ", "(", "solution") for _, a in one + two)


TEST_SH = (
    "#!/bin/bash\ncd /tests\npython3 -m pytest -q -p no:cacheprovider --junitxml=/tmp/junit.xml /tests/test_bz.py\n"
    "mkdir -p /logs/verifier\npython3 -c \"import xml.etree.ElementTree as E, sys; r = E.parse('/tmp/junit.xml')"
    ".getroot(); s = r if r.tag == 'testsuite' else r[0]; ok = int(s.get('tests')) > 0 and int(s.get('failures')) "
    "+ int(s.get('errors')) == 0; print(int(ok))\" > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
)
TESTS = {
    # no run of the balance stops at exactly zero: `balance <= 0` passes, and differs on [1, 2, -3]
    "misses-the-boundary": (
        "def test_bz():\n    assert below_zero([1, 2, -4]) is True\n    assert below_zero([1, 2]) is False\n"
    ),
    "tests-the-boundary": (
        "def test_bz():\n    assert below_zero([1, 2, -4]) is True\n    assert below_zero([1, 2]) is False\n"
        "    assert below_zero([1, -1]) is False\n    assert below_zero([2, -3]) is True\n"
    ),
}
HEADER = "import sys\n\nsys.path.insert(0, '/app')\nfrom solution import below_zero  # noqa: E402\n\n\n"


@pytest.mark.bwrap
def test_a_surviving_mutant_that_computes_something_else_is_a_weak_test(tmp_path: Path) -> None:
    require_backend("bwrap")
    solve = f"#!/bin/bash\ncat > /app/solution.py <<'PY'\n{BELOW_ZERO}PY\n"
    for name, tests in TESTS.items():
        write_task(tmp_path, name, test_sh=TEST_SH, solve_sh=solve, files={"tests/test_bz.py": HEADER + tests},
                   instruction="Write /app/solution.py with below_zero(ops).\n")  # fmt: skip
    with Pool.open(tmp_path) as pool:
        pool.scan()
        run = pool.ledger.start_run(RunKind.AUDIT)
        auditor = Auditor(pool.ledger, run.run_id, AuditConfig(backend="bwrap", jobs=2, repeats=2))
        try:
            audits = {a.task.removeprefix("test/"): a for a in auditor.audit(sorted(tmp_path.glob("*-*")))}
        finally:
            auditor.close()
    weak = audits["misses-the-boundary"]
    (finding,) = [f for f in weak.findings if f.code is FindingCode.WEAK_VERIFIER]
    mutants = {m["mutant"]: m for m in finding.evidence["code_mutants"]}
    boundary = next(m for name, m in mutants.items() if name.startswith("code:comparison:"))
    assert "+        if balance <= 0:" in boundary["diff"]
    assert any(d["call"] == "below_zero([1, 2, -3])" for d in boundary["differs"]), boundary
    assert boundary["reproduce"].endswith(f"--agent mutant:{boundary['mutant']}")
    view = weak.probes["code_mutants"]
    assert view["generated"] >= 5 and boundary["mutant"] in view["survived"]
    strong = audits["tests-the-boundary"]
    assert [f for f in strong.findings if f.severity.value == "error"] == [], strong.findings
    assert strong.probes["code_mutants"]["generated"] >= 5
    # the evidence's reproduction replays that very mutant from the ledger: it passes again
    replay = CliRunner().invoke(
        app,
        [
            "run",
            str(tmp_path / "misses-the-boundary"),
            "--agent",
            f"mutant:{boundary['mutant']}",
            "--backend",
            "bwrap",
            "--json",
        ],
    )
    assert replay.exit_code == 0, replay.output
    assert json.loads(replay.stdout)["reward"] == 1.0
    missing = CliRunner().invoke(app, ["run", str(tmp_path / "misses-the-boundary"), "--agent", "mutant:nosuch"])
    assert missing.exit_code == 2 and "no mutant 'nosuch'" in missing.output


SORT = (
    "def sort_ints(values):\n    xs = [v for v in values if isinstance(v, int)]\n"
    "    for i in range(len(xs)):\n        for j in range(len(xs) - 1):\n"
    "            if xs[j] {op} xs[j + 1]:\n                xs[j], xs[j + 1] = xs[j + 1], xs[j]\n    return xs\n"
)


def test_equal_answers_of_one_type_are_no_difference(tmp_path: Path) -> None:
    """`>=` for `>` in a bubble sort only swaps equal items: [False, 0, True, 1] and [False, 0, 1, True] print
    differently but are the same answer to any test that compares with ==; a real difference still counts."""
    script = tmp_path / "diff.py"
    script.write_text(DIFF_SCRIPT)

    def differs(mutant: str, calls: list) -> list:
        config = tmp_path / "cfg.json"
        config.write_text(diff_config(str(tmp_path / "m.py"), SORT.format(op=">"), mutant, calls))
        out = subprocess.run([sys.executable, str(script), str(config)], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)["differs"]

    mixed = [["sort_ints", [[True, False, None, 0, 1, 2]]]]
    assert differs(SORT.format(op=">="), mixed) == []
    assert differs(SORT.format(op="<"), mixed) != []  # sorts the other way
    assert differs(SORT.format(op=">").replace("return xs", "return tuple(xs)"), [["sort_ints", [[2, 1]]]])
