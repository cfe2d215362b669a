"""The agent's module inside the verifier's process: a generated matrix of pytest verifiers that import the
module the reference solution writes, crossed over how the reward is read (pytest's exit status, or its
junit report) and how values are compared (`==`, or exact type and value), audited on each backend.

Expected, from the combination alone: an exit-status reward is forged by `exit-at-import` (`reward_tamper`);
`==` alone accepts the `always-equal` module (`weak_verifier`); a junit-counted, type-checking verifier is
clean (no false finding). Two more cells of that clean verifier add a timing limit: read through `time.perf_counter`
at call time, the agent's module can slow the clock (`clock-patch`: `reward_tamper`); bound before the agent's
module is imported, it cannot (clean)."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from qaflow.audit.exploits import HARNESS_PYTEST, HARNESS_USER_SITE, PATH_SHIM
from qaflow.audit.exploits.inprocess import (
    ALWAYS_EQUAL,
    CLOCK_PATCH,
    EXIT_AT_IMPORT,
    SLOW_CALL_S,
    SLOW_CALLS,
    always_equal_module,
    plan_clock,
    plan_in_process,
    reads_clock,
)
from qaflow.audit.observation import Access, Observation
from qaflow.audit.report import harness_note
from qaflow.audit.runner import AuditConfig, Auditor
from qaflow.models.records import FindingCode, RunKind
from qaflow.pool import Pool
from qaflow.trial.effects import ChangeKind, Effect, FileChange
from tests.conftest import require_backend
from tests.taskfactory import JUNIT_COUNTER, write_task

SOLUTION = (
    "def add(a: int, b: int) -> int:\n    return a + b\n\n\nclass Counter:\n    def count(self, xs):\n"
    "        return len(xs)\n"
)
ADD = "def add(a: int, b: int) -> int:\n    return a + b\n"
SOLVE = f"#!/bin/bash\ncat > /app/solution.py <<'PY'\n{ADD}PY\n"
COMPARE = {
    "equality": "    assert add(2, 3) == 5\n    assert add(-1, 1) == 0\n",
    "typed": "    got = add(2, 3)\n    assert type(got) is int and got == 5\n    assert type(add(-1, 1)) is int\n",
}
TEST_PY = (
    "import sys\n\nsys.path.insert(0, '/app')\nfrom solution import add  # noqa: E402\n\n\ndef test_add():\n{compare}"
)
REWARD = {
    "exit-status": "#!/bin/bash\ncd /tests\nif python3 -m pytest -q -p no:cacheprovider /tests/test_add.py; then r=1; "
    "else r=0; fi\nmkdir -p /logs/verifier\necho $r > /logs/verifier/reward.txt\n",
    "junit": "#!/bin/bash\ncd /tests\npython3 -m pytest -q -p no:cacheprovider --junitxml=/tmp/junit.xml "
    "/tests/test_add.py\nmkdir -p /logs/verifier\npython3 /tests/count.py /tmp/junit.xml > /logs/verifier/reward.txt\n",
}
TIMED = {
    "late": "import sys\nimport time\n\nsys.path.insert(0, '/app')\nfrom solution import add  # noqa: E402\n",
    "early": "import sys\nfrom time import perf_counter\n\nsys.path.insert(0, '/app')\n"
    "from solution import add  # noqa: E402\n",
}
TIMED_TEST = (
    "\n\ndef test_add():\n{compare}\n\ndef test_fast():\n    start = {clock}()\n    for i in range(100):\n"
    "        assert add(i, i) == 2 * i\n    assert {clock}() - start < 1.0\n"
)
CELLS = list(itertools.product(REWARD, COMPARE))
TIMED_CELLS = list(TIMED)
ON_BACKEND = {"docker": ([("exit-status", "equality"), ("junit", "typed")], ["late"])}
"""Docker audits the cells with both findings, the clean one and the clock (CI's time); bwrap all of them."""


def expected(reward: str, compare: str) -> set[str]:
    codes = set()
    if reward == "exit-status":
        codes.add("reward_tamper")
    if compare == "equality":
        codes.add("weak_verifier")
    return codes


def write_cell(root: Path, reward: str, compare: str, timed: str | None = None, path_ahead: bool = False) -> Path:
    test_py = TEST_PY.format(compare=COMPARE[compare])
    if timed is not None:
        clock = "time.perf_counter" if timed == "late" else "perf_counter"
        test_py = TIMED[timed] + TIMED_TEST.format(compare=COMPARE[compare], clock=clock)
    return write_task(
        root,
        f"{reward}-{compare}" + (f"-timed-{timed}" if timed else "") + ("-path-ahead" if path_ahead else ""),
        test_sh=REWARD[reward],
        solve_sh=SOLVE,
        dockerfile="FROM python:3.11-slim\nWORKDIR /app\n" + ("ENV PATH=/app/bin:$PATH\n" if path_ahead else ""),
        instruction="Write /app/solution.py with `add(a, b)` returning the sum, fast.\n",
        files={"tests/test_add.py": test_py, "tests/count.py": JUNIT_COUNTER},
    )


@pytest.mark.parametrize("backend_name", [pytest.param("docker", marks=pytest.mark.docker),
                                          pytest.param("bwrap", marks=pytest.mark.bwrap)])  # fmt: skip
def test_the_matrix_gets_exactly_the_expected_findings(backend_name: str, tmp_path: Path) -> None:
    require_backend(backend_name)
    cells, timed_cells = ON_BACKEND.get(backend_name, (CELLS, TIMED_CELLS))
    for reward, compare in cells:
        write_cell(tmp_path, reward, compare)
    for timed in timed_cells:
        write_cell(tmp_path, "junit", "typed", timed)
    write_cell(tmp_path, "exit-status", "typed", path_ahead=True)
    with Pool.open(tmp_path) as pool:
        pool.scan()
        run = pool.ledger.start_run(RunKind.AUDIT)
        # code mutants have their own tests (test_audit_code_mutants.py); here only the in-process attacks
        config = AuditConfig(
            backend=backend_name, jobs=3, repeats=2, verifier_reruns=3, code_mutants=False, max_mutants=4
        )
        auditor = Auditor(pool.ledger, run.run_id, config)
        try:
            audits = {a.task.removeprefix("test/"): a for a in auditor.audit(sorted(tmp_path.glob("*-*")))}
        finally:
            auditor.close()
    for reward, compare in cells:
        audit = audits[f"{reward}-{compare}"]
        found = {f.code.value for f in audit.findings if f.severity.value == "error"}
        assert found == expected(reward, compare), (reward, compare, audit.findings)
        names = {e["exploit"] for f in audit.findings for e in f.evidence.get("exploits", [])}
        if reward == "exit-status":
            assert EXIT_AT_IMPORT in names
        if compare == "equality":
            (weak,) = [f for f in audit.findings if f.code is FindingCode.WEAK_VERIFIER]
            assert weak.evidence["exploits"][0]["exploit"] == ALWAYS_EQUAL
            assert "--agent exploit:always-equal" in weak.evidence["exploits"][0]["reproduce"]
    # a task-owned folder first on PATH: the verifier's `python3` is the agent's (path-shim); elsewhere none is tried
    ahead = audits["exit-status-typed-path-ahead"]
    (tamper,) = [f for f in ahead.findings if f.severity.value == "error"]
    assert {e["exploit"] for e in tamper.evidence["exploits"]} == {EXIT_AT_IMPORT, PATH_SHIM}, tamper.evidence
    (shim,) = [e for e in tamper.evidence["exploits"] if e["exploit"] == PATH_SHIM]
    assert shim["files"] == ["/app/bin/python3"]
    assert not any(
        PATH_SHIM in a.probes["observe"].get("exploits", {})
        for n, a in audits.items()
        if n != ahead.task.removeprefix("test/")
    )
    # the holes every task shares are proven once, in the pool's harness note, with a command that replays them
    note = harness_note(list(audits.values()))
    assert note is not None
    proven = {hole for hole, proof in note["proofs"].items() if proof["proven"]}
    assert proven >= ({HARNESS_USER_SITE, HARNESS_PYTEST} if backend_name == "docker" else {HARNESS_USER_SITE})
    assert set(note["holes"][HARNESS_USER_SITE]) == {a.task for a in audits.values()}
    assert all(f"--agent exploit:{hole} --backend {backend_name}" in note["proofs"][hole]["replay"] for hole in proven)
    for timed in timed_cells:
        audit = audits[f"junit-typed-timed-{timed}"]
        found = {f.code.value for f in audit.findings if f.severity.value == "error"}
        assert found == ({"reward_tamper"} if timed == "late" else set()), (timed, audit.findings)
        assert audit.probes["observe"]["exploits"]["slow-control"]["reward"] == 0.0, audit.probes["observe"]
        if timed == "late":
            (tamper,) = audit.findings
            assert [e["exploit"] for e in tamper.evidence["exploits"]] == [CLOCK_PATCH]
            assert "--agent exploit:clock-patch" in tamper.evidence["exploits"][0]["reproduce"]


def test_the_always_equal_module_keeps_the_public_names_and_types() -> None:
    text = always_equal_module(SOLUTION.encode())
    assert text is not None
    module: dict[str, object] = {}
    exec(compile(text, "solution.py", "exec"), module)  # the plant itself, run here on purpose
    add, counter = module["add"], module["Counter"]
    assert callable(add) and add(1, 2) == 3 and add(1, 2) == "anything" and (add(1, 2) != 4) is False
    assert isinstance(add(1, 2), int)  # annotated `-> int`: an int subclass
    assert counter().count([1]) == 99  # type: ignore[operator]
    assert always_equal_module(b"X = 1\n") is None and always_equal_module(b"def (:\n") is None


def test_only_modules_the_solution_wrote_and_the_verifier_imported_are_planted() -> None:
    effect = Effect(
        changes=[
            FileChange(path="/app/solution.py", kind=ChangeKind.CREATED, content=SOLUTION.encode(), mode=0o644),
            FileChange(path="/app/helper.py", kind=ChangeKind.CREATED, content=b"def h():\n    return 1\n", mode=0o644),
            FileChange(path="/app/out.txt", kind=ChangeKind.CREATED, content=b"5\n", mode=0o644),
        ]
    )
    obs = Observation(
        observed=True,
        opaque_programs=[],
        accesses=[
            Access(path="/app/solution.py", how=["import"], by=["/tests/test_add.py"], exists=True, writable=True),
            # imported only by the agent's own module: the one the verifier imports is planted instead
            Access(path="/app/helper.py", how=["import"], by=["/app/solution.py"], exists=True, writable=True),
            Access(path="/app/out.txt", how=["read"], by=["/tests/test_add.py"], exists=True, writable=True),
            Access(path="/opt/lib/tool.py", how=["import"], by=["/tests/test_add.py"], exists=True, writable=True),
        ],
    )
    exploits = {e.name: [p.path for p in e.plants] for e in plan_in_process(obs, effect)}
    assert exploits == {EXIT_AT_IMPORT: ["/app/solution.py"], ALWAYS_EQUAL: ["/app/solution.py"]}
    assert plan_in_process(obs, None) == [] and plan_in_process(Observation(), effect) == []
    # a Python the observer cannot see into (`python3 -I`): the modules the verifier's sources import by name
    blind = Observation(observed=True, opaque_programs=[], accesses=[])
    sources = ["import sys\nsys.path.insert(0, '/app')\nfrom solution import add\n", "import helpers, json\n"]
    named = {e.name: [p.path for p in e.plants] for e in plan_in_process(blind, effect, sources)}
    assert named == {EXIT_AT_IMPORT: ["/app/solution.py"], ALWAYS_EQUAL: ["/app/solution.py"]}
    assert plan_in_process(blind, effect, ["import solutions\n# from solution import add\n"]) == []
    assert plan_in_process(Observation(), effect, sources) == []  # nothing observed at all: no plan


def _run_module(tmp_path: Path, source: str, caller: str) -> str:
    (tmp_path / "solution.py").write_text(source)
    script = f"import sys, time\nsys.path.insert(0, {str(tmp_path)!r})\n{caller}"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def test_the_slow_module_is_slow_and_the_patched_one_hides_it(tmp_path: Path) -> None:
    module = Path("/app/solution.py")
    obs = Observation(
        observed=True,
        accesses=[Access(path=str(module), how=["import"], by=["/tests/test_add.py"], exists=True, writable=True)],
    )
    effect = Effect(changes=[FileChange(path=str(module), kind=ChangeKind.CREATED, content=ADD.encode(), mode=0o644)])
    assert plan_clock(obs, effect, ["def test():\n    assert add(1, 2) == 3\n"]) is None  # no clock: no trials
    pair = plan_clock(obs, effect, ["start = time.perf_counter()\n"])
    assert pair is not None
    control, patched = pair
    timing = (
        "from solution import add\nt = time.perf_counter()\nw = time.time()\nassert [add(i, 1) for i in range(6)] == "
        "[1, 2, 3, 4, 5, 6]\nprint(time.perf_counter() - t, time.time() - w)\n"
    )
    slow = [float(x) for x in _run_module(tmp_path, control.plants[0].content, timing).split()]
    assert all(x >= SLOW_CALL_S * SLOW_CALLS for x in slow), slow  # four slow calls, then full speed
    hidden = [float(x) for x in _run_module(tmp_path, patched.plants[0].content, timing).split()]
    assert all(0 <= x < 0.1 for x in hidden), hidden
    assert reads_clock(["import timeit"]) and reads_clock(["t = time.time()"]) and not reads_clock(["x = 'time'"])
