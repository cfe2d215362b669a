"""Tests a task ships disabled, enabled as proof: C-family code mutants that pass the verifier but fail them."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.audit.mutants.brace import brace_mutants
from qaflow.audit.mutants.skipped_tests import enable_c_guards, unskipped
from qaflow.cli import app
from tests.conftest import require_backend
from tests.taskfactory import write_task

# -- the mutator ------------------------------------------------------------------------------------------------

OPERATORS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "&&": "||", "||": "&&", "+": "-",
             "-": "+"}  # fmt: skip
WRAPPERS = ["int f(int a, int b) {{ return a {op} b; }}\n", "const f = (a, b) => a {op} b;\n",
            "fn f(a: i32, b: i32) -> bool {{ a {op} b }}\n", "if (a {op} b) {{ x = 1; }}\n"]  # fmt: skip


@pytest.mark.parametrize(("op", "wrapper"), list(itertools.product(OPERATORS, WRAPPERS)))
def test_each_operator_is_swapped_in_place_whatever_the_language(op: str, wrapper: str):
    head, tail = "// a + b < c\n", 'const s = "a < b + 1";\n'
    source = head + wrapper.format(op=op) + tail
    mutants = brace_mutants("/app/f.c", source)
    swapped = [m for m in mutants if m.operator != "constant"]
    assert len(swapped) == 1, [m.diff for m in mutants]
    assert swapped[0].source == head + wrapper.format(op=OPERATORS[op]) + tail
    assert swapped[0].line == 2 and swapped[0].name == "code:" + swapped[0].operator + ":app/f.c:2"


@pytest.mark.parametrize(
    "line",
    [
        "std::vector<int> v;",
        "Map<String, List<Integer>> m;",
        "let v: Vec<u8> = Vec::new();",
        "template <class T> T id(T x);",
        "#include <stdio.h>",
        "#define MAX(a, b) ((a) > (b) ? (a) : (b))",
        "std::cout << x >> y;",
        "for (int i = 0; i < n; i++) {}",
        "while (x > 0) {}",
        "x = -1; y = +z; i++; j--; p->q; f = () => 0;",
        "/* a < b */ s = \"x == y\"; c = '<';",
    ],
)
def test_no_change_where_a_token_is_not_a_binary_operator_or_a_loop_would_run_away(line: str):
    mutants = brace_mutants("/app/x.cpp", line + "\n")
    assert [m for m in mutants if m.operator != "constant"] == [], [m.diff for m in mutants]


def test_constants_and_booleans_move_and_the_sample_is_bounded_and_deterministic():
    source = "".join(f"int f{i}(int a) {{ return a + {i} == 3 && true; }}\n" for i in range(10))
    first, again = brace_mutants("/app/f.js", source, limit=6), brace_mutants("/app/f.js", source, limit=6)
    assert [m.source for m in first] == [m.source for m in again] and len(first) == 6
    assert {m.operator for m in first} == {"arithmetic", "comparison", "logic", "constant"}  # every kind first
    for m in first:  # one line out, one line in
        lines = m.diff.splitlines()[2:]
        assert (sum(x.startswith("-") for x in lines), sum(x.startswith("+") for x in lines)) == (1, 1), m.diff


# -- the disabled tests ----------------------------------------------------------------------------------------


def test_catch2_guards_go_and_every_other_preprocessor_line_stays():
    text = (
        '#include "x.h"\nTEST_CASE("a") { REQUIRE(f(0) == 0); }\n#if defined(EXERCISM_RUN_ALL_TESTS)\n'
        '#ifdef _WIN32\nint w;\n#endif\nTEST_CASE("b") { REQUIRE(f(1) == 2); }\n#endif\n#ifndef KEEP\nint k;\n#endif\n'
    )
    new, count, how = enable_c_guards(text)
    assert count == 1 and how == "EXERCISM_RUN_ALL_TESTS guard"
    assert new == text.replace("#if defined(EXERCISM_RUN_ALL_TESTS)\n", "").replace(
        "REQUIRE(f(1) == 2); }\n#endif\n", "REQUIRE(f(1) == 2); }\n"
    )
    assert enable_c_guards("#ifdef RUN_ALL_TESTS\nx\n#endif\n")[0] == "x\n"


@pytest.mark.parametrize(
    ("name", "text", "expected", "how"),
    [
        ("a.spec.js", "test('a', f);\nxtest('b', g);\n  xit('c', h);\ndescribe.skip('d', k);\n",
         "test('a', f);\ntest('b', g);\n  it('c', h);\ndescribe('d', k);\n", "xtest / .skip"),
        ("lib.rs", "#[test]\n#[ignore]\nfn b() {}\n#[test]\n#[ignore = \"slow\"]\nfn c() {}\n",
         "#[test]\nfn b() {}\n#[test]\nfn c() {}\n", "#[ignore]"),
        ("T.java", "  @Disabled(\"Remove to run test\")\n  @Test\n  void b() {}\n", "  @Test\n  void b() {}\n",
         "@Disabled"),
        ("x_test.go", "func TestB(t *testing.T) {\n\tt.Skip()\n\tcheck(t)\n}\n",
         "func TestB(t *testing.T) {\n\tcheck(t)\n}\n", "t.Skip()"),
        ("test_x.py", "@pytest.mark.skip(reason='later')\ndef test_b():\n    pass\n", "def test_b():\n    pass\n",
         "skip marker"),
    ],
)  # fmt: skip
def test_each_kind_of_disabled_test_is_enabled_and_nothing_else_changes(
    tmp_path: Path, name: str, text: str, expected: str, how: str
):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / name).write_text(text)
    (found,) = unskipped(tmp_path)
    assert (found.path, found.text, found.how) == (f"sub/{name}", expected, how)


@pytest.mark.parametrize(
    "text",
    [
        "function xtest(name, fn) {}\ntest('a', f);\n",  # a framework's own definition is no call
        "obj.xtest('a');\n",
        "@pytest.mark.skipif(sys.platform == 'win32', reason='x')\ndef test_a(): pass\n",  # conditional: left alone
        "#if defined(_WIN32)\nint w;\n#endif\n",
    ],
)
def test_nothing_is_enabled_where_nothing_is_unconditionally_disabled(tmp_path: Path, text: str):
    suffix = ".py" if "pytest" in text else ".c" if "#if" in text else ".js"
    (tmp_path / f"t{suffix}").write_text(text)
    assert unskipped(tmp_path) == []


# -- the audit, on a task written in JavaScript (node on the bwrap host) -----------------------------------------

SPEC = """const { span } = require('/app/span.js');
let failed = 0, ran = 0;
function test(name, fn) { ran++; try { fn(); } catch (e) { failed++; console.log('FAIL ' + name + ': ' + e.message); } }
const xtest = () => {};
const expect = (a) => ({ toBe(b) { if (a !== b) throw new Error(a + ' !== ' + b); } });
test('one value', () => expect(span(0, 0)).toBe(1));
{MORE}
process.exit(failed || !ran ? 1 : 0);
"""
MORE = ["xtest('three values', () => expect(span(3, 5)).toBe(3));", "xtest('ten', () => expect(span(1, 10)).toBe(10));"]
SOLVE = (
    "#!/bin/bash\nprintf 'function span(lo, hi) {\\n  return hi - lo + 1;\\n}\\nmodule.exports = { span };\\n'"
    " > /app/span.js\n"
)
TEST_SH = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "if node /tests/span.spec.js > /logs/verifier/out.txt 2>&1; then echo 1; else echo 0; fi"
    " > /logs/verifier/reward.txt\n"
)


def _node_task(root: Path, name: str, more: list[str]) -> Path:
    spec = SPEC.replace("{MORE}", "\n".join(more))
    return write_task(
        root, name, test_sh=TEST_SH, solve_sh=SOLVE, files={"tests/span.spec.js": spec},
        instruction="Write /app/span.js exporting span(lo, hi): how many integers lie from lo to hi inclusive.\n",
    )  # fmt: skip


@pytest.mark.bwrap
def test_a_verifier_that_runs_one_of_its_tests_is_weak_and_one_that_runs_them_all_is_not(tmp_path: Path):
    require_backend("bwrap")
    if shutil.which("node") is None:
        pytest.fail("this test needs node on the host (bwrap sandboxes run the host's programs)")
    pool = tmp_path / "pool"
    _node_task(pool, "first-only", MORE)
    _node_task(pool, "all-run", [m.replace("xtest(", "test(") for m in MORE])
    _node_task(pool, "disabled-wrong", ["xtest('wrong', () => expect(span(3, 5)).toBe(4));"])
    out = tmp_path / "audit.json"
    args = ["audit", str(pool), "--backend", "bwrap", "--offline", "--network", "none", "--repeats", "2"]
    res = CliRunner().invoke(app, [*args, "--json", str(out)])
    assert res.exit_code in (0, 1), res.output
    audits = {Path(a["path"]).name: a for a in json.loads(out.read_text())["tasks"]}
    weak = [f for f in audits["first-only"]["findings"] if f["code"] == "weak_verifier"]
    assert len(weak) == 1, audits["first-only"]["findings"]
    assert "tests/span.spec.js (xtest / .skip)" in weak[0]["message"]
    (example,) = weak[0]["evidence"]["code_mutants"]  # `-` to `+`: span(0, 0) is 1 either way
    assert "-  return hi - lo + 1;" in example["diff"] and "+  return hi + lo + 1;" in example["diff"]
    assert audits["first-only"]["probes"]["enabled_tests"]["oracle_reward"] == 1.0
    for sound in ("all-run", "disabled-wrong"):
        errors = [f["code"] for f in audits[sound]["findings"] if f["severity"] == "error"]
        assert errors == [], (sound, audits[sound]["findings"])
    assert "enabled_tests" not in audits["all-run"]["probes"]
    assert audits["disabled-wrong"]["probes"]["enabled_tests"]["oracle_reward"] == 0.0


def test_a_code_mutant_trial_runs_its_verifier_under_a_cap_not_the_tasks_whole_timeout(
    fake_backend: str, tmp_path: Path
):
    from qaflow.audit.probe_agent import ProbeAgent
    from qaflow.audit.probe_run import ProbeRun
    from qaflow.audit.work_items import RunContext, TrialRequest, mutant_timeout, trial_item
    from qaflow.models.probe_key import ProbeKey, ProbeKind
    from qaflow.task import Task

    task = Task.load(write_task(tmp_path, test_sh="#!/bin/bash\nsleep 25\necho 1 > /logs/verifier/reward.txt\n"))
    context = RunContext(backend=fake_backend, run_id="r")
    capped_agent = ProbeAgent(kind="nop", verifier_timeout_sec=2.0)
    capped = trial_item(task, TrialRequest(ProbeKey.mutant("x"), 0, capped_agent), context)
    assert capped.verifier_timed_out and not capped.full
    plain = trial_item(task, TrialRequest(ProbeKey(ProbeKind.NOP), 0, ProbeAgent(kind="nop")), context)
    assert (plain.verifier_timed_out, plain.reward) == (False, 1.0)  # 25 s is within the task's own 30 s
    assert task.config.verifier.timeout_sec == 30.0  # the shared task is left as it was
    runs = [ProbeRun(probe="oracle", duration_s=d) for d in (3.0, 20.0)]
    assert (mutant_timeout(runs), mutant_timeout(runs[:1]), mutant_timeout([])) == (100.0, 60.0, 60.0)
