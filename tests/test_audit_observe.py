"""The verifier's trust boundary, observed by running it, and the exploit battery it drives.

Pure parts (the observer's logs to an `Observation`, which exploits it plans, how they are judged)
run without a sandbox; the audit of the four labelled fixtures runs under docker and bwrap: the
grader shipped in the image and the conftest.py/pytest.py pytest would load from /app are proven
exploitable by running them (reward_tamper with the files and a reproduction), a compiled answer
generator left without its source is a leak, the look-alike controls stay clean, nothing is attacked
on them, and the task folders are untouched."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.audit.exploits import (
    HARNESS_PATH,
    HARNESS_PYTEST,
    HARNESS_USER_SITE,
    PATH_SHIM,
    SHIM,
    Exploit,
    Plant,
    harness_exploits,
    plan_exploits,
    replay_shim,
)
from qaflow.audit.exploits import harness_note as observation_note
from qaflow.audit.judge import judge_exploits
from qaflow.audit.observation import (
    Access,
    Observation,
    PytestRun,
    PythonRun,
    Replay,
    Seen,
    conftest_folders,
    ini_folders,
    parse_logs,
)
from qaflow.audit.observe import _CLASSIFY, owner_of, task_roots
from qaflow.audit.observer_files import SEP
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.report import harness_note
from qaflow.audit.settle import MIN_CONFIRM_RUNS, confirms_again, needs_confirmation
from qaflow.cli import app
from qaflow.models.audit import TaskAudit, Verdict
from qaflow.task import Task
from tests.audit_runs import LABELLED_AUDIT_TIMEOUT_S, audit_fixtures, only_a_failed_sink
from tests.conftest import TASKS_REPO
from tests.taskfactory import write_task

FIXTURES = {
    "tally-survey-answers": ("reward_tamper", {"script-shim": ["/app/grader/check_tally.py"]}),
    "word-length-histogram": ("reward_tamper", {"python-plant": ["/app/conftest.py", "/app/tests/conftest.py"]}),
    "rank-essay-scores": ("leak", {}),
    "tally-poll-votes": (None, {}),
    "line-length-histogram": (None, {}),
    "average-reading-time": (None, {}),
}
LEFTOVER = "/app/tools/__pycache__/make_expected.cpython-311.pyc"


def _trace(source: str, cwd: str, command: str, depth: int = 1) -> str:
    return f"{'+' * depth}{SEP}{source}{SEP}{cwd}{SEP} {command}"


def _python_log(main: str, *records: dict) -> str:
    start = {"k": "start", "argv": ["python3", main], "cwd": "/app", "libs": ["/usr/lib/python3.11"], "site": []}
    path = [main.rsplit("/", 1)[0], "/usr/lib/python3.11"]
    return "\n".join(json.dumps(r) for r in [start, {"k": "main", "p": main, "path": path, "cwd": "/app"}, *records])


def _observed(logs: dict[str, str], facts: dict[str, tuple[bool, bool]], roots: list[str]) -> Observation:
    """Parse `logs` as `read_observation` does, with `facts` (path -> exists-as-dir, writable) standing in
    for the classifying exec."""
    obs, seen = Observation(observed=True), Seen()
    parse_logs(logs, seen, obs)
    for path, (hows, bys) in sorted(seen.paths.items()):
        if path in facts:
            is_dir, writable = facts[path]
            owner = owner_of(path, roots)
            obs.accesses.append(
                Access(
                    path=path,
                    how=sorted(hows),
                    by=sorted(bys),
                    exists=True,
                    is_dir=is_dir,
                    writable=writable,
                    owner=owner,
                )  # type: ignore[arg-type]
            )
    return obs


def test_shell_trace_and_python_log_become_accesses():
    logs = {
        "sh.1.trace": "\n".join(
            [
                _trace("/tests/test.sh", "/app", "mkdir -p /logs/verifier"),
                _trace("/tests/test.sh", "/app", "python3 /app/grader/check.py /app/in.csv"),
                _trace("/tests/test.sh", "/app", "X=1 ./tools/run.sh --out=/app/out.txt"),
                "a continuation line of a multi-line argument",
            ]
        ),
        "py.7.jsonl": "\n".join(
            json.dumps(r)
            for r in [
                {
                    "k": "start",
                    "argv": ["python3", "/app/grader/check.py"],
                    "cwd": "/app",
                    "exe": "/usr/bin/python3",
                    "libs": ["/usr/lib/python3.11"],
                    "site": ["/usr/lib/python3/dist-packages"],
                },
                {
                    "k": "main",
                    "p": "/app/grader/check.py",
                    "path": ["/app/grader", "/usr/lib/python3.11"],
                    "cwd": "/app",
                },
                {"k": "exec", "p": "/usr/lib/python3.11/csv.py", "by": "/app/grader/check.py"},
                {"k": "exec", "p": "/app/grader/rules.py", "by": "/app/grader/check.py"},
                {"k": "open", "p": "/app/expected.json", "w": False},
                {"k": "open", "p": "/usr/lib/python3.11/json/__init__.py", "w": False},
                {"k": "spawn", "exe": None, "argv": ["diff", "a", "b"], "cwd": "/app"},
            ]
        ),
    }
    obs, seen = Observation(observed=True), Seen()
    parse_logs(logs, seen, obs)
    assert obs.shell_commands == 3
    hows = {p: sorted(h) for p, (h, _by) in seen.paths.items()}
    assert hows["/app/grader/check.py"] == ["arg", "run"]
    assert hows["/app/tools/run.sh"] == ["run"]  # relative program, resolved against the traced cwd
    assert hows["/app/out.txt"] == ["arg"]  # the value of --out=
    assert hows["/app/grader/rules.py"] == ["import"]
    assert hows["/app/expected.json"] == ["read"]
    assert hows["/app/grader"] == ["syspath"]
    assert "/usr/lib/python3.11/json/__init__.py" not in hows  # the interpreter's own library is not listed
    assert not any(p.startswith("/logs/") for p in hows)
    assert {"python3", "mkdir", "diff"} <= set(seen.names)  # resolved through PATH in the sandbox
    (run,) = obs.python
    assert (run.main, run.path0, run.imports) == ("/app/grader/check.py", "/app/grader", ["csv", "rules"])


def test_conftest_and_ini_folders_follow_pytest_rules():
    loose = PytestRun(rootdir="/app", args=["tests/test_x.py"], cwd="/app", collected=["/app/tests/test_x.py"])
    assert conftest_folders(loose) == ["/", "/app", "/app/tests"]  # no confcutdir: every folder above
    assert ini_folders(PytestRun(rootdir="/app/tests")) == ["/app", "/"]
    pinned = PytestRun(
        rootdir="/tests", inifile="/tests/pytest.ini", confcutdir="/tests", args=["/tests/test_x.py"],
        cwd="/tests", collected=["/tests/test_x.py"],
    )  # fmt: skip
    assert conftest_folders(pinned) == ["/tests"] and ini_folders(pinned) == []
    assert conftest_folders(loose.model_copy(update={"noconftest": True})) == []


def test_task_roots_and_owner(tmp_path: Path):
    task_dir = tmp_path / "t"
    shutil.copytree(TASKS_REPO / "tally-survey-answers", task_dir)
    (task_dir / "environment" / "Dockerfile").write_text(
        "FROM python:3.11-slim\nWORKDIR /srv\nCOPY answers.csv data/\nCOPY --chmod=755 grader/ /opt/grader/\n"
    )
    roots = task_roots(Task.load(task_dir), "/srv")
    assert roots == ["/opt/grader", "/srv", "/srv/data"]
    assert owner_of("/opt/grader/check.py", roots) == "task"
    assert owner_of("/opt/other/tool", roots) == "task"  # outside the system folders
    assert owner_of("/usr/local/bin/pytest", roots) == "system"
    assert owner_of("/conftest.py", roots) == "system"  # planting at / needs a root agent
    (task_dir / "environment" / "Dockerfile").write_text(
        "FROM python:3.11-slim\nENV PATH=/root/.local/bin:/usr/local/go/bin:$PATH\n"
        'ENV A=1 PATH="/home/dev/bin:${PATH}"\nENV PATH /root/tools:$PATH\n'
    )
    roots = task_roots(Task.load(task_dir), "/app")
    assert roots == ["/app", "/home/dev/bin", "/root/.local/bin", "/root/tools"]  # the toolchain's stays the system's
    assert owner_of("/root/.local/bin/sha256sum", roots) == "task" and owner_of("/root/.bashrc", roots) == "system"


def test_plans_attack_only_task_owned_inputs_the_oracle_left_alone():
    logs = {
        "sh.1.trace": "\n".join(
            [
                _trace("/tests/test.sh", "/app", "python3 /app/grader/check.py"),
                _trace("/tests/test.sh", "/app", "python3 /tests/check.py /app/solution.py"),
            ]
        ),
        "py.8.jsonl": _python_log("/app/grader/check.py"),
        "py.9.jsonl": _python_log("/tests/check.py", {"k": "exec", "p": "/app/solution.py", "by": "/tests/check.py"}),
    }
    facts = {
        "/app/grader/check.py": (False, True),
        "/app/solution.py": (False, True),
        "/tests/check.py": (False, False),
    }
    obs = _observed(logs, facts, ["/app"])
    (shim,) = plan_exploits(obs, oracle_changed={"/app/solution.py"})
    assert shim.name == "script-shim" and [p.path for p in shim.plants] == ["/app/grader/check.py"]
    assert shim.plants[0].content == SHIM
    # the same grader under /tests (not writable), or a system interpreter a root agent could replace: nothing
    sound = _observed(logs, {**facts, "/app/grader/check.py": (False, False)}, ["/app"])
    assert plan_exploits(sound, oracle_changed={"/app/solution.py"}) == []
    assert plan_exploits(Observation(observed=False, why_not="view"), set()) == []
    assert plan_exploits(obs, oracle_changed=None) == []  # the oracle's effect unknown: work and grader look alike


def test_python_plants_for_a_loose_pytest_run():
    logs = {
        "pytest.3.jsonl": "\n".join(
            json.dumps(r)
            for r in [
                {
                    "k": "pytest",
                    "rootdir": "/app",
                    "inifile": None,
                    "args": ["tests/t.py"],
                    "cwd": "/app",
                    "confcutdir": None,
                    "noconftest": False,
                },
                {"k": "collected", "files": ["/app/tests/t.py"]},
            ]
        ),
        "py.3.jsonl": "\n".join(
            json.dumps(r)
            for r in [
                {"k": "start", "argv": ["python3", "-m", "pytest"], "cwd": "/app", "libs": [], "site": ["/usr/lib/py"]},
                {"k": "main", "m": "pytest", "path": ["/app", "/usr/lib/py"], "cwd": "/app"},
            ]
        ),
    }
    facts = {"/app": (True, True), "/app/tests": (True, True), "/usr/lib/py": (True, True)}
    plant, shadow = plan_exploits(_observed(logs, facts, ["/app"]), set())
    paths = [p.path for p in plant.plants]
    assert plant.name == "python-plant"
    # / is the harness note's; the collected folder's __init__.py is imported with its tests
    assert paths == ["/app/conftest.py", "/app/tests/conftest.py", "/app/tests/__init__.py"]
    # a trial of its own: the shadow ends pytest before the forcing conftest could write its junit report
    assert shadow.name == "module-shadow" and [p.path for p in shadow.plants] == ["/app/pytest.py"]
    assert "/usr/lib/py/qaflow_exploit.pth" not in paths  # a system site folder: the harness note's business


def test_an_isolated_pytest_run_still_imports_the_package_of_its_tests():
    """`python3 -I -m pytest --noconftest` runs unobserved (no sitecustomize, no plugin) and loads no
    conftest, but the `__init__.py` next to the tests it names is imported: read off the command line."""
    command = "python3 -I -m pytest --noconftest -p no:cacheprovider -q checks/test_v.py::test_a --rootdir=/app"
    logs = {"sh.1.trace": _trace("/tests/test.sh", "/app", command)}
    facts = {"/app/checks": (True, True), "/app/no:cacheprovider": (False, True)}
    (plant,) = plan_exploits(_observed(logs, facts, ["/app"]), set())
    assert plant.name == "python-plant" and [p.path for p in plant.plants] == ["/app/checks/__init__.py"]
    package = plant.plants[0].content
    assert "pluginmanager.register" in package and 'report.outcome, report.longrepr = "passed", None' in package
    # the folder pytest collects from is the verifier's own: nothing to plant
    logs = {"sh.1.trace": _trace("/tests/test.sh", "/app", "python3 -I -m pytest /tests/test_v.py")}
    assert plan_exploits(_observed(logs, {}, ["/app"]), set()) == []


def _run(probe: str, full: bool) -> ProbeRun:
    return ProbeRun(probe=probe, reward=1.0 if full else 0.0, full=full)


def test_judge_exploits():
    exploit = Exploit(name="script-shim", plants=[Plant(path="/app/g.py", content=SHIM, why="the verifier runs it")])
    nop = [_run("nop", False)] * 2
    (finding,) = judge_exploits(nop, [_run("exploit:script-shim", True)], [exploit], "t")
    assert finding.code.value == "reward_tamper" and "script-shim" in finding.message
    (won,) = finding.evidence["exploits"]
    assert won["files"] == ["/app/g.py"] and won["reproduce"].startswith("qaflow run t --agent exploit:script-shim; as")
    assert judge_exploits(nop, [_run("exploit:script-shim", False)], [exploit], "t") == []
    assert judge_exploits([_run("nop", True)], [_run("exploit:script-shim", True)], [exploit], "t") == []


def test_harness_note_is_once_per_pool():
    def audit(name: str, files: list[str]) -> TaskAudit:
        observe = {"harness": {"system_files": files, "count": len(files)}} if files else {}
        return TaskAudit(task=name, path=name, version=None, verdict=Verdict.ACCEPTED, probes={"observe": observe})

    note = harness_note(
        [audit("a", ["/usr/bin/python3"]), audit("b", ["/usr/bin/python3", "/usr/bin/cp"]), audit("c", [])]
    )
    assert note is not None and note["tasks"] == ["a", "b"] and note["files"][0] == "/usr/bin/python3"
    assert harness_note([audit("c", [])]) is None


@pytest.mark.timeout(LABELLED_AUDIT_TIMEOUT_S)  # it may run the session's labelled audit
def test_audit_proves_the_fixture_exploits_and_spares_the_controls(backend: str, tmp_path: Path):
    done = audit_fixtures(FIXTURES, backend, tmp_path)  # the task folders come out untouched
    audits = done.audits
    for name, (code, won) in FIXTURES.items():
        audit = audits[name]
        observe = audit["probes"]["observe"]
        assert observe["observed"] and observe["oracle_full"], (name, observe)
        codes = sorted(f["code"] for f in audit["findings"])
        if code is None:
            assert (audit["verdict"], codes) == ("accepted", []), (name, audit["findings"])
            # nothing task-owned to attack: no exploit trial ran but record and replay's one sink, which failed
            assert only_a_failed_sink(observe), observe.get("exploits")
            continue
        assert codes == [code], (name, audit["findings"])
        (finding,) = audit["findings"]
        if code == "leak":  # compiled leftovers, found by listing the sandbox before the agent starts
            assert finding["evidence"]["files"] == [LEFTOVER] and only_a_failed_sink(observe)
            continue
        proven = {e["exploit"]: e["files"] for e in finding["evidence"]["exploits"]}
        for exploit, files in won.items():
            assert set(files) <= set(proven[exploit]), (name, proven)
        assert all(e["run"]["reward"] == 1.0 for e in finding["evidence"]["exploits"])
    assert "trust boundary" in done.html.read_text()


def _observed_run(full: bool, reruns: list[bool]) -> ProbeRun:
    run = _run("observe", full)
    run.observation = Observation(observed=True, reruns=reruns)
    return run


def test_verifier_reruns_decide_when_to_confirm_with_more_oracle_runs():
    passing, failing = [_run("oracle", True)] * 6, [_run("oracle", False)] * 6
    assert needs_confirmation(passing, _observed_run(True, [True, False, True]))
    assert needs_confirmation(failing, _observed_run(False, [False, True]))
    assert not needs_confirmation(passing, _observed_run(True, [True] * 8))
    assert not needs_confirmation(failing, _observed_run(False, [False] * 8))
    # the oracle runs already disagree: the judge says flaky without more runs
    assert not needs_confirmation([*passing[:3], *failing[:3]], _observed_run(True, [True, False]))
    # no reruns (a verifier that ran in a view, or reruns off): the observed run is the sign
    assert needs_confirmation(passing, _observed_run(False, []))
    assert not needs_confirmation(passing, _observed_run(True, []))


def test_reruns_that_give_both_outcomes_earn_a_second_round_of_confirming_trials():
    failing = [_run("oracle", False)] * 9
    coin = _observed_run(False, [True, False, False, True, True, False, True, False])
    changes_what_it_checks = _observed_run(False, [True] * 8)
    assert confirms_again(failing[:1], coin, 0) and confirms_again(failing[:1], changes_what_it_checks, 0)
    # the first round agreed with the first trial: only a verifier that decides by chance gets a second
    assert confirms_again(failing, coin, 1)
    assert not confirms_again(failing, changes_what_it_checks, 1)
    assert not confirms_again(failing, coin, 2)
    # a round that disagreed settles it: the judge says flaky
    assert not confirms_again([*failing, _run("oracle", True)], coin, 1)


STATEFUL_VERIFIER = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "if [ -e /app/.checked ]; then echo 1; else touch /app/.checked; echo 0; fi > /logs/verifier/reward.txt\n"
)


def test_a_verifier_that_changes_what_it_checks_is_confirmed_not_called_flaky(backend: str, tmp_path: Path):
    """Its reruns pass where every trial's first run fails: more oracle trials run, all fail as the first
    ones did, and the finding is the trials' (false_rejection), not flaky."""
    write_task(tmp_path / "pool", "stateful", test_sh=STATEFUL_VERIFIER)
    report = tmp_path / "audit.json"
    args = ["audit", str(tmp_path / "pool"), "--backend", backend, "--repeats", "2", "--json", str(report)]
    out = CliRunner().invoke(app, [*args, "--offline", "--network", "none"])
    assert out.exit_code == 0, out.output
    (audit,) = json.loads(report.read_text())["tasks"]
    errors = [f for f in audit["findings"] if f["severity"] == "error"]
    shown = [(f["code"], f["message"], f["evidence"]) for f in errors]
    assert [f["code"] for f in errors] == ["false_rejection"], shown
    probes = audit["probes"]
    assert probes["verifier_reruns"] == {"runs": 8, "full": 8}
    assert probes["oracle_confirm"] == {"extra_runs": MIN_CONFIRM_RUNS, "full": 0}
    # the nop's rerun passes where its trial failed: the nop side alone gets the fixed plan's trials
    assert probes["evidence"]["why"] == ["the nop's verifier reruns disagree"]
    assert probes["oracle"]["rewards"] == [0.0] * (1 + MIN_CONFIRM_RUNS)


def test_a_grader_whose_output_the_verifier_reads_gets_a_shim_that_prints_it(tmp_path: Path):
    obs = Observation(
        observed=True,
        accesses=[Access(path="/app/verify.py", how=["run"], exists=True, writable=True, owner="task")],
        replays={"/app/verify.py": Replay(stdout="total 32\nSUCCESS\n", exit=0)},
    )
    (shim,) = plan_exploits(obs, oracle_changed={"/app/out.txt"})
    (plant,) = shim.plants
    assert plant.content == replay_shim(obs.replays["/app/verify.py"]) and "prints what it printed" in plant.why
    script = tmp_path / "verify.py"
    script.write_text(plant.content)
    for runner in (["sh"], ["python3"]):
        done = subprocess.run([*runner, str(script)], capture_output=True, text=True, check=False)
        assert (done.stdout, done.returncode) == ("total 32\nSUCCESS\n", 0), runner
    failing = replay_shim(Replay(stdout="FAIL: x\n", exit=3))
    script.write_text(failing)
    assert subprocess.run(["sh", str(script)], capture_output=True, check=False).returncode == 3


GREP_GRADER = {
    "environment/verify.py": (
        "import pathlib\nok = pathlib.Path('/app/out.txt').read_text().strip() == 'done'\n"
        "print('SUCCESS' if ok else 'FAILED')\n"
    ),
}
GREP_TEST = (
    "#!/bin/bash\nmkdir -p /logs/verifier\npython3 /app/verify.py > /tmp/grade.txt 2>&1\n"
    "if grep -q SUCCESS /tmp/grade.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
)


SHELL_GRADER = {
    "environment/verify.sh": (
        '#!/bin/bash\nif [ "$(cat /app/out.txt 2>/dev/null)" = done ]; then echo "grade: SUCCESS"; '
        'else echo "grade: FAILED"; fi\n'
    ),
}
SHELL_GREP_TEST = (
    "#!/bin/bash\nmkdir -p /logs/verifier\ncd /app && bash ./verify.sh --quiet > /tmp/grade.txt 2>&1\n"
    "if grep -q SUCCESS /tmp/grade.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
)


def test_scripts_a_traced_bash_ran_by_path_are_kept_with_argv_and_cwd():
    trace = "\n".join(
        [
            _trace("/tests/test.sh", "/app", "bash ./verify.sh --quiet"),
            _trace("/tests/test.sh", "/app", "/opt/grade/run.sh a b"),
            _trace("/tests/test.sh", "/app", "python3 /app/check.py"),
            _trace("/tests/test.sh", "/app", "bash -c 'echo hi'"),
            _trace("/tests/test.sh", "/app", "bash ./verify.sh --quiet"),
        ]
    )
    obs, seen = Observation(), Seen()
    parse_logs({"sh.1.trace": trace.replace("bash ./verify.sh", "sh ./verify.sh")}, seen, obs)
    assert "run" in seen.paths["/app/verify.sh"][0]  # dash is not traced: the command line says it ran
    assert (obs.scripts[0].script, obs.scripts[0].argv[1:], obs.scripts[0].cwd) == (
        "/app/verify.sh",
        ["./verify.sh", "--quiet"],
        "/app",
    )
    obs = Observation()
    parse_logs({"sh.1.trace": trace}, Seen(), obs)
    assert [(r.script, r.argv, r.cwd) for r in obs.scripts] == [
        ("/app/verify.sh", ["bash", "./verify.sh", "--quiet"], "/app"),
        ("/opt/grade/run.sh", ["/opt/grade/run.sh", "a", "b"], "/app"),
    ]


@pytest.mark.parametrize("grader", ["python", "shell"])
def test_audit_fools_a_grader_whose_printed_verdict_is_grepped(backend: str, grader: str, tmp_path: Path):
    """The verifier greps what an in-image grader (Python, or a shell script) prints, exit status ignored:
    a shim that only exits 0 fails it, the replay shim (what the grader printed on the oracle's work)
    passes: reward_tamper."""
    name = "verify.py" if grader == "python" else "verify.sh"
    dockerfile = f"FROM python:3.11-slim\nWORKDIR /app\nCOPY {name} /app/{name}\n"
    test_sh, files = (GREP_TEST, GREP_GRADER) if grader == "python" else (SHELL_GREP_TEST, SHELL_GRADER)
    write_task(tmp_path / "pool", "grep-grader", test_sh=test_sh, dockerfile=dockerfile, files=files)
    report = tmp_path / "audit.json"
    args = ["audit", str(tmp_path / "pool"), "--backend", backend, "--repeats", "1", "--json", str(report)]
    out = CliRunner().invoke(app, [*args, "--offline", "--network", "none"])
    assert out.exit_code == 0, out.output
    (audit,) = json.loads(report.read_text())["tasks"]
    (finding,) = [f for f in audit["findings"] if f["severity"] == "error"]
    (won,) = finding["evidence"]["exploits"]
    assert (finding["code"], won["exploit"], won["files"]) == ("reward_tamper", "script-shim", [f"/app/{name}"])
    assert "SUCCESS" in base64.b64decode(won["plants"][0]["content"].split("printf %s ")[1].split(" ")[0]).decode()


def _classify(lines: list[str], path_env: str) -> list[list[str]]:
    """Run the classifying script of `read_observation` in a real sh, with PATH set as the sandbox's."""
    script = _CLASSIFY + "\n".join(lines) + "\nQAFLOW_PATHS\n"
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env={"PATH": path_env}, check=True)
    return [row.split("\t") for row in done.stdout.splitlines()]


def test_path_lookups_name_every_folder_ahead_of_the_program_and_whether_it_can_be_made(tmp_path: Path):
    real, early, locked = tmp_path / "real", tmp_path / "early", tmp_path / "locked"
    for folder in (real, early, locked):
        folder.mkdir()
    (real / "tool").write_text("#!/bin/sh\nexit 0\n")
    (real / "tool").chmod(0o755)
    missing = tmp_path / "not" / "yet"
    path_env = f"{missing}:{early}:relative:{real}:{os.environ['PATH']}"
    rows = _classify(["Ntool", f"P{tmp_path / 'absent' / 'deep' / 'x'}"], path_env)
    assert ["R", "tool", str(real / "tool")] in rows
    lookups = [r for r in rows if r[0] == "S"]
    # folders after the one it was found in, and a relative entry, are no lookup of it
    assert lookups == [["S", "tool", "1", str(missing / "tool")], ["S", "tool", "1", str(early / "tool")]]
    (absent,) = [r for r in rows if r[0] == "C"]
    assert absent[1] == "-" and absent[5] == "1"  # not there, but its nearest existing folder is writable


def test_harness_holes_and_path_shims_follow_who_can_write_where():
    loose = PytestRun(rootdir="/tests", args=["/tests/test_x.py"], cwd="/", collected=["/tests/test_x.py"])
    BY = ["/tests/test.sh"]
    py = PythonRun(argv=["python3", "-m", "pytest"], cwd="/", user_site="/root/.local/lib/python3.11/site-packages")
    accesses = [
        Access(path="/root/.local/lib/python3.11/site-packages", how=["sitecustomize"], creatable=True),
        Access(path="/app/bin/pytest", how=["path_lookup"], by=BY, creatable=True, owner="task"),
        Access(path="/app/bin/mkdir", how=["path_lookup"], by=BY, creatable=True, owner="task"),  # a file utility
        Access(path="/app/bin/git", how=["path_lookup"], by=["/usr/bin/pytest"], creatable=True, owner="task"),
        Access(path="/home/agent/.local/bin/pytest", how=["path_lookup"], by=BY, creatable=True, owner="task"),
        Access(path="/usr/local/bin/python3", how=["path_lookup"], by=BY, creatable=True, owner="system"),
        Access(path="/opt/locked/pytest", how=["path_lookup"], by=BY, creatable=False, owner="task"),
    ]
    obs = Observation(observed=True, pytest=[loose], python=[py], accesses=accesses, root_writable=True)
    holes = {e.name: [p.path for p in e.plants] for e in harness_exploits(obs)}
    assert holes == {
        HARNESS_PYTEST: ["/pytest.ini", "/conftest.py"],
        HARNESS_USER_SITE: [
            "/root/.local/lib/python3.11/site-packages/qaflow_exploit.pth",
            "/root/.local/lib/python3.11/site-packages/qaflow_exploit_force.py",
        ],
        HARNESS_PATH: ["/home/agent/.local/bin/pytest", "/usr/local/bin/python3"],
    }
    # a task-owned folder ahead on PATH is the task's own defect: attacked per task
    (shim,) = [e for e in plan_exploits(obs, set()) if e.name == PATH_SHIM]
    assert [p.path for p in shim.plants] == ["/app/bin/pytest"] and shim.plants[0].content == SHIM
    # a non-root agent, pytest pinned to /tests, Python without the user site: no hole at all
    pinned = PytestRun(rootdir="/tests", inifile="/tests/pytest.ini", confcutdir="/tests", cwd="/tests")
    sterile = Observation(
        observed=True,
        pytest=[pinned],
        python=[py.model_copy(update={"user_site": None})],
        accesses=accesses[:1],
        root_writable=False,
    )
    assert harness_exploits(sterile) == [] and observation_note(sterile) is None


def test_the_pool_note_names_each_hole_once_with_its_proof():
    def audit(name: str, harness: dict) -> TaskAudit:
        return TaskAudit(
            task=name, path=name, version=None, verdict=Verdict.ACCEPTED, probes={"observe": {"harness": harness}}
        )

    proof = {"proven": True, "reward": 1.0, "files": ["/conftest.py"], "replay": "qaflow run a --agent exploit:x"}
    note = harness_note(
        [
            audit(
                "a",
                {"system_files": [], "holes": {HARNESS_PYTEST: ["/conftest.py"]}, "proofs": {HARNESS_PYTEST: proof}},
            ),
            audit("b", {"system_files": [], "holes": {HARNESS_PYTEST: ["/conftest.py"]}}),
        ]
    )
    assert note is not None and note["holes"] == {HARNESS_PYTEST: ["a", "b"]} and note["files"] == []
    assert note["proofs"][HARNESS_PYTEST]["task"] == "a"
    assert "(2 task(s)); the plant alone got full reward on a: `qaflow run a --agent exploit:x`" in note["message"]
