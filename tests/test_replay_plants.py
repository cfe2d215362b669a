"""Record and replay (issue 40): the guard's trace read back, replay shims and forgers that really replay,
and delta debugging that finds the plants that matter, checked over generated combinations."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.exploits.minimise import ddmin, groups_of, only
from qaflow.audit.exploits.replay_plants import (
    SIBLING_SINK,
    SPOOF_SINK,
    TRUTH_SINK,
    WORK_GROUP,
    exit_stub,
    forger_module,
    plan_replay,
    program_shim,
    wrong_state,
)
from qaflow.audit.observation import Access, Observation
from qaflow.audit.trace import TracedRun, parse_trace, runs_the_work
from qaflow.trial.guard import GuardKit


def _field(text: str) -> str:
    return "".join(f"%{b:02X}" if b <= 32 or b >= 127 or b == 37 else chr(b) for b in text.encode())


def test_parse_trace_ties_stdout_and_exit_to_the_program_each_process_ran():
    lines = [
        "proc\t10\t0",
        f"exec\t10\t-2\t/app/bin/bash\t{_field('bash' + chr(31) + '/tests/test.sh')}",
        f"exec\t10\t0\t/usr/bin/bash\t{_field('bash' + chr(31) + '/tests/test.sh')}",
        "proc\t11\t10",
        f"stat\t10\t-2\t{_field('/app/bin/my diff')}",
        f"exec\t11\t0\t/usr/bin/diff\t{_field(chr(31).join(['diff', '/app/out.txt', '/tmp/e x']))}",
        "out\t11\t" + b"same\n".hex(),
        "err\t11\t" + b"note\n".hex(),
        "exit\t11\t1",
        f"open\t10\t3\t{os.O_WRONLY | os.O_APPEND | os.O_CREAT}\t/tmp/log.txt",
        f"open\t10\t-2\t0\t{_field('/root/.bash_profile')}",
        "garbage line",
        "out\t10\t" + b"done\n".hex(),
        "exit\t10\t0",
    ]
    trace = parse_trace("\n".join(lines))
    diff = next(r for r in trace.executed() if r.name == "diff")
    assert (diff.argv, diff.stdout, diff.exit, diff.parent) == (["diff", "/app/out.txt", "/tmp/e x"], "same\n", 1, 10)
    assert (diff.stderr, trace.executed()[0].stderr) == ("note\n", "")
    bash = trace.executed()[0]
    assert (bash.exe, bash.stdout, bash.exit) == ("/usr/bin/bash", "done\n", 0)
    assert [e.path for e in trace.missing()] == ["/app/bin/bash", "/app/bin/my diff", "/root/.bash_profile"]
    assert trace.appended() == ["/tmp/log.txt"] and trace.written() == ["/tmp/log.txt"]


def _run(argv: list[str], stdout: str, code: int) -> TracedRun:
    return TracedRun(pid=1, exe="/usr/bin/" + argv[0], argv=argv, stdout=stdout, exit=code)


ARGS = st.lists(st.text(alphabet="ab -'\"$*\\\n\t/.é", min_size=0, max_size=6), min_size=0, max_size=3)


@given(recorded=st.lists(st.tuples(ARGS, st.text(max_size=30), st.integers(0, 3)), min_size=1, max_size=4), other=ARGS)
def test_a_program_shim_replays_each_recorded_call_and_runs_the_real_program_otherwise(
    recorded, other, tmp_path_factory
):
    runs = [_run(["prog", *args], out, code) for args, out, code in recorded]
    shim = tmp_path_factory.mktemp("shim") / "prog"
    shim.write_text(program_shim(runs, "/bin/echo"))
    known = {}
    for r in runs:
        key = tuple(r.argv[1:])
        if "\n" not in "".join(key):
            known.setdefault(key, r)
    for key, first in known.items():
        done = subprocess.run(["sh", str(shim), *key], capture_output=True, check=False)
        assert (done.stdout.decode(), done.returncode) == (first.stdout, first.exit)
    if tuple(other) not in known:
        done = subprocess.run(["sh", str(shim), *other], capture_output=True, check=False)
        assert done.returncode == 0 and done.stdout.decode() == " ".join(other) + "\n"


@settings(max_examples=25)
@given(recorded=st.lists(st.tuples(ARGS, st.integers(0, 3)), min_size=1, max_size=4), other=ARGS)
def test_the_work_left_wrong_prints_nothing_and_keeps_only_its_exit_statuses(recorded, other, tmp_path_factory):
    """The wrong state's stub of a program of the work the verifier ran, as a program and as a Python script."""
    folder = tmp_path_factory.mktemp("stub")
    for python in (False, True):
        head = ["python3", "/app/prog.py"] if python else ["prog"]
        runs = [TracedRun(pid=1, exe="/usr/bin/python3" if python else "/app/prog", argv=[*head, *args], stdout="x",
                          exit=code) for args, code in recorded]  # fmt: skip
        stub = folder / ("prog.py" if python else "prog")
        stub.write_text(exit_stub(runs, python=python))
        cmd = [sys.executable, "-I", "-S", str(stub)] if python else ["sh", str(stub)]
        first: dict[tuple[str, ...], int] = {}
        for args, code in recorded:
            first[tuple(args)] = code  # the last recording of the same arguments is the one kept
        for args in [*first, tuple(other)]:
            done = subprocess.run([*cmd, *args], capture_output=True, check=False)
            multiline = python is False and "\n" in "".join(args)
            if multiline:
                continue
            want = first.get(args, recorded[-1][1])
            assert (done.stdout, done.returncode) == (b"", want), (python, args)


def test_the_wrong_state_stubs_only_programs_the_verifier_ran():
    trace = parse_trace(DIFF_RUN.replace("/usr/bin/diff\tdiff", "/app/tool\ttool").replace("exit\t2\t0", "exit\t2\t3"))
    plants = {p.path: p.content for p in wrong_state({"/app/tool", "/app/out.txt", "/tmp/x"}, trace)}
    assert plants["/app/out.txt"] == "" and "/tmp/x" not in plants
    assert plants["/app/tool"].startswith("#!/bin/sh") and "exit 3" in plants["/app/tool"]


def test_the_forger_replays_a_recorded_python_and_is_the_real_module_anywhere_else(tmp_path: Path):
    recorded = _run(["python3", "-c", "import json; print('real')"], "12 passed\n", 0)
    recorded.stderr = "Ran 12 tests\n\nOK\n"  # unittest reports on stderr
    (tmp_path / "json.py").write_text(forger_module([recorded]))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    replayed = subprocess.run(
        [sys.executable, "-c", "import json; print('real')"], env=env, capture_output=True, text=True
    )
    assert (replayed.stdout, replayed.stderr, replayed.returncode) == ("12 passed\n", "Ran 12 tests\n\nOK\n", 0)
    other = subprocess.run(
        [sys.executable, "-c", "import json; print(json.dumps([1]))"], env=env, capture_output=True, text=True
    )
    assert (other.stdout, other.returncode) == ("[1]\n", 0), other.stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["python3", "/app/solve.py", "in.txt"], True),
        (["python3", "-u", "solve.py"], True),
        (["python3", "-m", "solve"], True),
        (["python3", "-m", "pytest", "/tests/test_out.py"], False),
        (["python3", "-c", "import solve"], True),
        (["python3", "-c", "import json, sys\nfrom solve import f\nprint(json.dumps(f(2)))"], True),
        (["python3", "-c", "spec = spec_from_file_location('s', '/app/solve.py')"], True),
        (["python3", "-c", "print(open('/app/out.txt').read() == '42')"], False),
        (["python3", "-c", "import resolve_paths"], False),
        (["bash", "-c", "python3 /app/solve.py < in.txt"], True),
        (["diff", "/app/out.txt", "/tests/expected.txt"], False),
        (["bash", "/tests/test.sh"], False),
    ],
)
def test_runs_of_the_work_are_never_replayed_but_programs_that_read_it_are(argv: list[str], expected: bool):
    run = TracedRun(pid=1, exe=f"/usr/bin/{argv[0]}", argv=argv)
    assert runs_the_work(run, {"/app/solve.py", "/app/out.txt"}) is expected


def _observation(trace_text: str, access: dict[str, tuple[bool, bool, bool]]) -> Observation:
    return Observation(
        observed=True,
        trace=parse_trace(trace_text),
        trace_access={
            p: Access(path=p, how=[], exists=e, writable=w, creatable=c, owner="task")
            for p, (e, w, c) in access.items()
        },
    )


DIFF_RUN = "\n".join(
    [
        "proc\t1\t0",
        "exec\t1\t0\t/usr/bin/bash\tbash%1F/tests/test.sh",
        "stat\t1\t-2\t/app/bin/diff",
        "proc\t2\t1",
        "exec\t2\t0\t/usr/bin/diff\tdiff%1F/app/out.txt%1F/tests/want.txt",
        "exit\t2\t0",
        "exit\t1\t0",
    ]
)


@pytest.mark.parametrize("creatable", [True, False])
def test_a_program_lookup_is_planted_only_where_the_agent_can_create_it(creatable: bool):
    obs = _observation(DIFF_RUN, {"/app/bin/diff": (False, False, creatable)})
    plans = plan_replay(obs, {"/app/out.txt"})
    assert [p.path for e in plans for p in e.plants] == (["/app/bin/diff"] if creatable else [])


def test_nothing_is_planted_where_the_reference_solution_wrote():
    obs = _observation(DIFF_RUN, {"/app/bin/diff": (False, False, True)})
    assert plan_replay(obs, {"/app/bin/diff"}) == []


def test_a_file_the_verifier_appended_to_is_preseeded_with_what_it_held():
    obs = _observation(DIFF_RUN, {"/tmp/results.log": (False, False, True)})
    obs.kept = {"/tmp/results.log": "case1 ok\n"}
    (sink,) = plan_replay(obs, set())
    assert [p.group for p in sink.plants] == ["scratch:/tmp/results.log"]
    assert "case1 ok" in (sink.plants[0].command or "")


@given(
    st.integers(2, 12).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1), min_size=1, max_size=3)))
)
def test_ddmin_finds_the_groups_that_together_pass(case: tuple[int, set[int]]):
    n, needed = case
    groups = [f"g{i}" for i in range(n)]
    want = {f"g{i}" for i in needed}
    search = ddmin(groups, rounds=40)
    trials = 0
    try:
        candidates = next(search)
        while True:
            trials += len(candidates)
            candidates = search.send([want <= set(c) for c in candidates])
    except StopIteration as stop:
        found = stop.value
    assert want <= set(found)
    assert set(found) == want, "1-minimal: every group left is needed"
    assert trials <= 24 * 40


def test_only_keeps_whole_groups():
    plants = [Plant(path=f"/p{i}", content="", why="", group=g) for i, g in enumerate(["a", "a", "b", None])]
    exploit = Exploit(name="replay", plants=plants)
    assert groups_of(exploit) == ["a", "b", "/p3"]
    assert [p.path for p in only(exploit, ["a", "/p3"], "x").plants] == ["/p0", "/p1", "/p3"]


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the guard is x86_64 only")
def test_the_guard_traces_every_process_of_a_real_run(tmp_path: Path):
    kit = GuardKit.make(tmp_path, observe=True)
    logs = tmp_path / "logs"
    logs.mkdir()
    script = tmp_path / "t.sh"
    script.write_text(
        f"export PATH={tmp_path}/nobin:$PATH\necho hello\nprintf 'x\\n' | cat\nls /nonexistent-qaflow 2>/dev/null\n"
        f"[ -f {tmp_path}/cfg ] && . {tmp_path}/cfg\necho log >> {tmp_path}/app.log\necho 1 > {logs}/reward.txt\n"
    )
    done = subprocess.run([str(kit.folder / "reward_guard"), str(kit.folder), str(logs), "--", "bash", str(script)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    trace = parse_trace((kit.folder / "trace").read_text())
    cat = next(r for r in trace.executed() if r.name == "cat")
    assert (cat.stdout, cat.exit) == ("x\n", 0)
    assert trace.executed()[0].argv == ["bash", str(script)] and "hello\n" in trace.executed()[0].stdout
    ls = next(r for r in trace.executed() if r.name == "ls")  # its error, on fd 2 (sent to /dev/null)
    assert "nonexistent-qaflow" in ls.stderr and ls.stdout == "" and cat.stderr == ""
    missing = {e.path for e in trace.missing()}
    assert {f"{tmp_path}/nobin/cat", f"{tmp_path}/cfg"} <= missing
    assert f"{tmp_path}/app.log" in trace.appended()
    assert (kit.folder / "report").read_text().splitlines()[-1] == "end"
    assert not (kit.folder / "observe").exists()


@pytest.mark.docker
def test_the_guard_traces_argv_and_stdout_under_dockers_default_seccomp_profile(tmp_path: Path):
    """docker's default profile refuses process_vm_readv without CAP_SYS_PTRACE: the guard reads the processes'
    memory through ptrace instead (argv and stdout were empty there, so no program could be replayed)."""
    from tests.conftest import require_backend

    require_backend("docker")
    from qaflow.sandbox.docker.images import BASE_IMAGE

    kit = GuardKit.make(tmp_path, observe=True)
    script = "mkdir -p /tmp/logs && /guard/reward_guard /guard /tmp/logs -- sh -c 'echo hello; printf \"%s\" abc | cat'"
    done = subprocess.run(
        ["docker", "run", "--rm", "--cap-drop", "SYS_PTRACE", "-v", f"{kit.folder}:/guard", BASE_IMAGE, "sh", "-c",
         script],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    trace = parse_trace((kit.folder / "trace").read_text())
    runs = {r.name: r for r in trace.executed()}
    assert runs["sh"].argv[:2] == ["sh", "-c"] and "hello\n" in runs["sh"].stdout
    assert runs["cat"].argv == ["cat"] and runs["cat"].stdout == "abc"


def test_without_observe_the_guard_writes_no_trace(tmp_path: Path):
    kit = GuardKit.make(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    done = subprocess.run([str(kit.folder / "reward_guard"), str(kit.folder), str(logs), "--", "true"], check=False)
    assert done.returncode == 0 and not (kit.folder / "trace").exists()


def test_generated_combinations_of_lookups_and_access_plant_exactly_the_reachable_edges():
    for exists, writable, creatable in itertools.product([False, True], repeat=3):
        obs = _observation(DIFF_RUN, {"/app/bin/diff": (exists, writable, creatable)})
        planted = bool(plan_replay(obs, set()))
        assert planted == ((exists and writable) or (not exists and creatable))


SOURCED_RUN = "\n".join(
    [
        "proc\t1\t0",
        "exec\t1\t0\t/usr/bin/bash\tbash%1F/tests/test.sh",
        "open\t1\t3\t0\t/app/ci.env",
        "proc\t2\t1",
        "exec\t2\t0\t/usr/bin/bash\tbash%1F-lc%1Fcmp%20a%20b",
        "open\t2\t3\t0\t/app/profile.sh",
        "exit\t2\t0",
        f"open\t1\t4\t{os.O_WRONLY | os.O_CREAT | os.O_TRUNC}\t/logs/verifier/reward.txt",
        "out\t1\t" + b"passes: 4 of 4\n".hex(),
        "exit\t1\t0",
    ]
)


def test_a_file_the_verifiers_own_shell_sources_replays_its_verdict(tmp_path: Path):
    """Sourced by test.sh itself, the plant prints test.sh's recorded output, writes full reward and exits; in
    any other shell it only puts the replay shims first on PATH (and a child shell's file never gets a verdict)."""
    obs = _observation(SOURCED_RUN, {"/app/ci.env": (True, True, True), "/app/profile.sh": (True, True, True)})
    (sink,) = plan_replay(obs, set())
    commands = {p.path: p.command or "" for p in sink.plants if p.path.startswith("/app/")}
    assert "/tests/test.sh" in commands["/app/ci.env"] and "/tests/test.sh" not in commands["/app/profile.sh"]
    logs = tmp_path / "logs"
    logs.mkdir()
    env_file = tmp_path / "ci.env"
    env_file.write_text("REQUIRED_PASSES=4\n")
    command = commands["/app/ci.env"].replace("/app/ci.env", str(env_file)).replace("/logs/verifier", str(logs))
    subprocess.run(["sh", "-c", command], check=True)
    verifier = tmp_path / "test.sh"
    verifier.write_text(f"source {env_file}\necho 0 > {logs}/reward.txt\nexit 3\n")
    done = subprocess.run(["bash", str(verifier)], capture_output=True, check=False, cwd=tmp_path)
    assert (done.stdout, done.returncode) == (b"", 3)  # another script's $0: the settings load as they were
    # run as the recorded verifier ($0 is /tests/test.sh): its recorded verdict
    done = subprocess.run(["bash", "-c", verifier.read_text(), "/tests/test.sh"], capture_output=True, check=False)
    assert (done.stdout, done.returncode) == (b"passes: 4 of 4\n", 0), done
    assert (logs / "reward.txt").read_text() == "1\n"


def test_a_pickle_of_the_work_the_verifier_loaded_replays_its_verdict_when_loaded(tmp_path: Path):
    checker, other = tmp_path / "check.py", tmp_path / "other.py"
    run = "\n".join(
        [
            "proc\t1\t0",
            f"exec\t1\t0\t/usr/bin/python3\tpython3%1F{_field(str(checker))}",
            "open\t1\t3\t0\t/app/model.pkl",
            "out\t1\t" + b"fit ok\n".hex(),
            "exit\t1\t0",
        ]
    )
    (sink,) = plan_replay(_observation(run, {}), {"/app/model.pkl"}, ["/app/model.pkl"], ["/app/model.pkl"])
    (plant,) = [p for p in sink.plants if p.group == "pickle:/app/model.pkl"]
    model = tmp_path / "model.pkl"
    subprocess.run(["sh", "-c", (plant.command or "").replace("/app/model.pkl", str(model))], check=True)
    code = f"import pickle\npickle.load(open({str(model)!r}, 'rb'))\nprint('loaded')\nraise SystemExit(1)\n"
    checker.write_text(code)
    other.write_text(code)
    replayed = subprocess.run([sys.executable, str(checker)], capture_output=True, check=False)
    assert (replayed.stdout, replayed.returncode) == (b"fit ok\n", 0)
    elsewhere = subprocess.run([sys.executable, str(other)], capture_output=True, check=False)
    assert (elsewhere.stdout, elsewhere.returncode) == (b"loaded\n", 1)  # any other Python: nothing replayed


def test_the_work_spoofing_the_verdict_prints_the_verifiers_lines_never_the_answer(tmp_path: Path):
    run = "\n".join(
        [
            "proc\t1\t0",
            "exec\t1\t0\t/usr/bin/python3\tpython3%1F/tests/run.py",
            "proc\t2\t1",
            "exec\t2\t0\t/usr/bin/python3\tpython3%1F/app/solve.py%1F/tests/m1.txt",
            "out\t2\t" + b"RRDD\n".hex(),
            "exit\t2\t0",
            "out\t1\t" + b"--- m1\nRRDD\nVERDICT: PASS\n".hex(),
            "exit\t1\t0",
        ]
    )
    plans = plan_replay(_observation(run, {}), {"/app/solve.py"}, ["/app/solve.py"])
    (sink,) = [e for e in plans if e.name == SPOOF_SINK]
    (spoof,) = [p for p in sink.plants if p.group == "spoof:/app/solve.py"]
    program = tmp_path / "solve.py"
    program.write_text(spoof.content)
    done = subprocess.run([sys.executable, "-I", str(program), "/tests/m1.txt"], capture_output=True, check=False)
    assert (done.stdout, done.returncode) == (b"--- m1\nVERDICT: PASS\n", 0)
    (empty,) = [p for p in sink.plants if p.group == "wrong-state"]
    assert "VERDICT" not in empty.content  # the wrong state alone, its control, prints nothing


def test_a_module_of_the_work_the_verifier_imported_replays_its_report_on_stderr_never_its_stdout(tmp_path: Path):
    """unittest reports on stderr: the work's module, imported by the test, replays that report and the exit status
    at import; what that Python printed on stdout (maybe the work's results, the answer) is left out."""
    runner = tmp_path / "run_tests.py"
    run = "\n".join(
        [
            "proc\t1\t0",
            f"exec\t1\t0\t/usr/bin/python3\tpython3%1F{_field(str(runner))}",
            "open\t1\t3\t0\t/app/dates.py",
            "out\t1\t" + b"overlap = 2\n".hex(),
            "err\t1\t" + b"Ran 4 tests\n\nOK\n".hex(),
            "exit\t1\t0",
        ]
    )
    sinks = {e.name: e for e in plan_replay(_observation(run, {}), {"/app/dates.py"}, ["/app/dates.py"])}
    (forger,) = [p for p in sinks["replay-spoof"].plants if p.group == "spoof:/app/dates.py"]
    (tmp_path / "dates.py").write_text(forger.content)
    runner.write_text(f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport dates\nprint('never')\n")
    done = subprocess.run([sys.executable, str(runner)], capture_output=True, check=False)
    assert (done.stdout, done.stderr, done.returncode) == (b"", b"Ran 4 tests\n\nOK\n", 0)


def _scratch_run(folder: str, files: list[str], flags: int) -> str:
    lines = ["proc\t1\t0", "exec\t1\t0\t/usr/bin/bash\tbash%1F/tests/test.sh", f"mkdir\t1\t0\t{folder}"]
    lines += [f"open\t1\t3\t{flags}\t{folder}/{name}" for name in files]
    return "\n".join([*lines, "exit\t1\t0"])


FRESH = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


@pytest.mark.parametrize(
    ("files", "flags", "in_work", "linked"),
    [
        (["expected.txt", "actual.txt"], FRESH, set(), ["actual.txt"]),
        (["expected.txt", "actual.txt"], os.O_WRONLY | os.O_CREAT | os.O_EXCL, set(), ["actual.txt"]),
        (["a.csv", "b.csv", "c.csv"], FRESH, set(), ["b.csv", "c.csv"]),
        (["only.txt"], FRESH, set(), []),  # nothing to compare it with
        (["log.txt", "other.txt"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, set(), []),  # pre-seeded instead
        (["expected.txt", "actual.txt"], FRESH, {"actual.txt"}, []),  # the work's own output
    ],
)
def test_files_the_verifier_writes_afresh_in_one_folder_are_made_one_file(
    tmp_path: Path, files: list[str], flags: int, in_work: set[str], linked: list[str]
):
    folder = str(tmp_path / "check")
    obs = _observation(_scratch_run(folder, files, flags), {f"{folder}/{f}": (False, False, True) for f in files})
    plans = plan_replay(obs, {f"{folder}/{f}" for f in in_work})
    links = [p for e in plans for p in e.plants if (p.group or "").startswith("links:")]
    assert [(p.path, p.link_to) for p in links] == [(f"{folder}/{f}", files[0]) for f in linked]
    if not links:
        return
    subprocess.run(["sh", "-c", Exploit(name="links", plants=links).script()], check=True)
    reference = tmp_path / "reference.txt"
    reference.write_text("id,amount\n1,30\n")
    first, last = f"{folder}/{files[0]}", f"{folder}/{linked[-1]}"
    # the verifier's own writes, then its comparison: a wrong (empty) answer, and yet one file
    verifier = f"cp {reference} {first} && : > {last} && cmp {first} {last}"
    assert subprocess.run(["bash", "-c", verifier], capture_output=True, check=False).returncode == 0


@pytest.mark.parametrize("writable", [True, False])
def test_a_script_the_verifiers_shell_or_python_ran_is_replayed_in_its_language(tmp_path: Path, writable: bool):
    run = "\n".join(
        [
            "proc\t1\t0",
            "exec\t1\t0\t/usr/bin/bash\tbash%1F/tests/test.sh",
            "proc\t2\t1",
            "exec\t2\t0\t/usr/bin/bash\tbash%1F/app/scripts/canon.sh",
            "out\t2\t" + b"ann,1\nbob,2\n".hex(),
            "exit\t2\t0",
            "proc\t3\t1",
            "exec\t3\t0\t/usr/bin/python3\tpython3%1F/app/check.py%1F--strict",
            "out\t3\t" + b"all 4 rows match\n".hex(),
            "exit\t3\t0",
            "exit\t1\t0",
        ]
    )
    access = {p: (True, writable, False) for p in ("/app/scripts/canon.sh", "/app/check.py")}
    plans = plan_replay(_observation(run, access), {"/app/export.py"})
    plants = {p.path: p.content for e in plans for p in e.plants if (p.group or "").startswith("program:")}
    if not writable:
        assert plants == {}
        return
    assert set(plants) == {"/app/scripts/canon.sh", "/app/check.py"}
    canon, check = tmp_path / "canon.sh", tmp_path / "check.py"
    canon.write_text(plants["/app/scripts/canon.sh"])
    check.write_text(plants["/app/check.py"])
    shell = subprocess.run(["bash", str(canon)], input=b"anything\n", capture_output=True, check=False)
    assert (shell.stdout, shell.returncode) == (b"ann,1\nbob,2\n", 0)
    python = subprocess.run([sys.executable, str(check), "--strict"], capture_output=True, check=False)
    assert (python.stdout, python.returncode) == (b"all 4 rows match\n", 0)
    check.chmod(0o755)  # started by path, as its `#!` line says
    direct = subprocess.run([str(check), "--strict"], capture_output=True, check=False)
    assert (direct.stdout, direct.returncode) == (b"all 4 rows match\n", 0)
    assert plan_replay(_observation(run, access), {"/app/scripts/canon.sh", "/app/check.py"}) == [], "the work's"


def test_the_wrong_state_creates_empty_the_files_its_arguments_name(tmp_path: Path):
    """A wrong solution of the right shape: the output file the verifier looks for exists, holding nothing."""
    out = tmp_path / "out.csv"
    for python in (False, True):
        head = ["python3", "/app/export.py"] if python else ["/app/export"]
        trace = parse_trace(
            "\n".join(
                [
                    "proc\t5\t1",
                    f"exec\t5\t0\t{'/usr/bin/python3' if python else '/app/export'}\t"
                    + "%1F".join([*head, "/tests/dump.jsonl", "/tmp/tmp.AbC/out.csv"]),
                    f"open\t5\t3\t{FRESH}\t/tmp/tmp.AbC/out.csv",
                    "exit\t5\t0",
                ]
            )
        )
        program = "/app/export.py" if python else "/app/export"
        (stub,) = wrong_state({program}, trace)
        script = tmp_path / "stub"
        script.write_text(stub.content)
        out.write_text("stale")
        cmd = [sys.executable, str(script)] if python else ["sh", str(script)]
        done = subprocess.run([*cmd, "/elsewhere/in.jsonl", str(out)], capture_output=True, check=False)
        assert (done.returncode, done.stdout, out.read_text()) == (0, b"", ""), python
        assert subprocess.run([*cmd], capture_output=True, check=False).returncode == 0  # no arguments: nothing made


def _work_under(reader: list[str], reader_out: str, work_args: list[str], writes: str | None = None) -> str:
    """A traced run: `reader` (pid 1) starts the work `python3 /app/prog.py ARGS` (pid 2), which may write a file."""
    lines = ["proc\t1\t0", "exec\t1\t0\t/usr/bin/" + reader[0] + "\t" + "%1F".join(reader)]
    lines += ["proc\t2\t1", "exec\t2\t0\t/usr/bin/python3\t" + "%1F".join(["python3", "/app/prog.py", *work_args])]
    if writes:
        lines.append(f"open\t2\t3\t{FRESH}\t{writes}")
    lines += ["exit\t2\t0"]
    if writes:
        lines.append(f"open\t1\t4\t0\t{writes}")
    lines += [f"out\t1\t{reader_out.encode().hex()}", "exit\t1\t0"]
    return "\n".join(lines)


@pytest.mark.parametrize(("parse", "forged"), [("eval", True), ("ast.literal_eval", False), ("json.loads", False)])
def test_output_a_python_of_the_verifier_evaluates_is_code_that_replays_its_verdict(
    tmp_path: Path, parse: str, forged: bool
):
    checker = tmp_path / "check.py"
    plans = plan_replay(_observation(_work_under(["python3", str(checker)], "rows match\n", []), {}), {"/app/prog.py"},
                        ["/app/prog.py"])  # fmt: skip
    (code,) = [e for e in plans if e.name == "replay-code"]
    (stub,) = [p for p in code.plants if p.group == "code:/app/prog.py"]
    prog = tmp_path / "prog.py"
    prog.write_text(stub.content)
    checker.write_text(
        "import ast, json, subprocess, sys\n"
        f"out = subprocess.run([sys.executable, {str(prog)!r}], capture_output=True, text=True).stdout\n"
        f"try:\n    got = {parse}(out)\nexcept Exception:\n    got = None\n"
        "sys.exit(0 if got == {'added': ['E-600']} else 1)\n"
    )
    done = subprocess.run([sys.executable, str(checker)], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == ((0, "rows match\n") if forged else (1, "")), done.stderr


@pytest.mark.parametrize(("read", "forged"), [(". {f}", True), ("IFS== read -r k v < {f}", False)])
def test_a_file_of_the_work_the_verifiers_own_shell_reads_is_shell_code_that_replays_its_verdict(
    tmp_path: Path, read: str, forged: bool
):
    summary = str(tmp_path / "summary.env")
    run = _work_under(["bash", "/tests/test.sh"], "quota ok\n", ["/tests/listing.txt", summary], writes=summary)
    plans = plan_replay(_observation(run, {}), {"/app/prog.py"}, ["/app/prog.py"])
    (stub,) = [p for e in plans if e.name == "replay-code" for p in e.plants if p.group == "code:/app/prog.py"]
    prog, logs = tmp_path / "prog.py", tmp_path / "logs"
    prog.write_text(stub.content)
    logs.mkdir()
    verifier = (
        f"python3 {prog} /tests/listing.txt {summary}\n{read.format(f=summary)}\n"
        f'if [ "$TOTAL" = 42 ]; then echo 1; else echo 0; fi > {logs}/reward.txt\n'
    ).replace("/logs/verifier", str(logs))
    stub_text = Path(prog).read_text().replace("/logs/verifier", str(logs))
    prog.write_text(stub_text)
    done = subprocess.run(["bash", "-c", verifier, "/tests/test.sh"], capture_output=True, text=True, check=False)
    reward = (logs / "reward.txt").read_text().strip()
    assert reward == ("1" if forged else "0"), done.stderr
    assert done.stdout.endswith("quota ok\n") is forged  # test.sh's recorded output, replayed where sourced


def test_modules_inline_code_imports_by_name_are_shadowed_first_however_many_load_at_start_up():
    """A `python3 -c` check has no script: every module it opened looks like start-up; the ones its code imports
    come first, so a Python whose start-up loads dozens (a site .pth) still gets its stdlib import shadowed."""
    startup = [f"mod{i}" for i in range(50)]
    code = "import hashlib, sys\nfrom json import loads\nprint(hashlib.sha256(b'').hexdigest())"
    lines = ["proc\t1\t0", "exec\t1\t0\t/usr/bin/python3\tpython3%1F-c%1F" + _field(code)]
    lines += [f"open\t1\t3\t0\t/usr/lib/python3.11/{m}.py" for m in [*startup, "json", "hashlib"]]
    lines += ["stat\t1\t0\t/app", "exit\t1\t0"]
    obs = _observation("\n".join(lines), {"/app": (True, True, False)})
    obs.trace_access["/app"] = obs.trace_access["/app"].model_copy(update={"is_dir": True})
    (sink,) = plan_replay(obs, set())
    shadows = [p.path for p in sink.plants if p.path.startswith("/app/") and "customize" not in p.path]
    assert shadows[:2] == ["/app/hashlib.py", "/app/json.py"] and len(shadows) == 30


LISTED_RUN = "\n".join(
    [
        "proc\t1\t0",
        "exec\t1\t0\t/usr/bin/bash\tbash%1F/tests/test.sh",
        "proc\t2\t1",
        "exec\t2\t0\t/usr/bin/python3\tpython3%1F-m%1Fpytest%1F--junitxml=/app/reports/junit-17.xml",
        f"open\t2\t3\t{os.O_WRONLY | os.O_CREAT | os.O_TRUNC}\t/app/reports/junit-17.xml",
        "exit\t2\t1",
        "proc\t3\t1",
        "exec\t3\t0\t/usr/bin/ls\tls%1F-t%1F/app/reports",
        f"open\t3\t3\t{os.O_RDONLY | os.O_DIRECTORY}\t/app/reports",
        "exit\t3\t0",
        "open\t1\t3\t0\t/app/reports/junit-17.xml",
        "exit\t1\t0",
    ]
)


@pytest.mark.parametrize("writable", [True, False])
def test_a_folder_the_verifier_lists_gets_newer_copies_of_what_its_run_made_there(writable: bool, tmp_path: Path):
    obs = _observation(LISTED_RUN, {})
    obs.trace_access["/app/reports"] = Access(path="/app/reports", how=[], exists=True, is_dir=True,
                                              writable=writable, owner="task")  # fmt: skip
    obs.outputs = {"/app/reports/junit-17.xml": '<testsuite failures="0"/>\n'}
    plans = plan_replay(obs, set())
    plants = [p for e in plans for p in e.plants if (p.group or "").startswith("listing:")]
    if not writable:
        assert plants == []
        return
    (plant,) = plants
    assert plant.path == "/app/reports/zz-junit-17.xml"
    folder = tmp_path / "reports"
    subprocess.run(["sh", "-c", (plant.command or "").replace("/app/reports", str(folder))], check=True)
    (folder / "junit-17.xml").write_text('<testsuite failures="3"/>\n')  # the verifier's own, made afterwards
    newest = subprocess.run(["ls", "-t", str(folder)], capture_output=True, text=True, check=True).stdout.split()[0]
    assert newest == "zz-junit-17.xml" and (folder / newest).read_text() == '<testsuite failures="0"/>\n'


def test_no_listing_plant_for_files_the_agent_left_or_the_verifier_never_read_back():
    unread = LISTED_RUN.replace("open\t1\t3\t0\t/app/reports/junit-17.xml\n", "")
    obs = _observation(unread, {})
    obs.trace_access["/app/reports"] = Access(path="/app/reports", how=[], exists=True, is_dir=True, writable=True,
                                              owner="task")  # fmt: skip
    obs.outputs = {"/app/reports/junit-17.xml": "x"}
    assert not [p for e in plan_replay(obs, set()) for p in e.plants if (p.group or "").startswith("listing:")]


TRUTH_RUN = "\n".join(
    [
        "proc\t1\t0",
        "exec\t1\t0\t/usr/bin/bash\tbash%1F/tests/test.sh",
        "proc\t2\t1",
        "exec\t2\t0\t/usr/bin/cmp\tcmp%1F/app/report.txt%1F/tests/expected_report.txt",
        "open\t2\t3\t0\t/tests/cases.txt",
        "open\t2\t3\t0\t/app/report.txt",
        "open\t2\t4\t0\t/tests/expected_report.txt",
        "open\t2\t4\t0\t/tests/expected.json",
        "exit\t2\t0",
        "exit\t1\t0",
    ]
)


def test_the_work_is_linked_to_the_verifiers_own_file_of_its_kind_with_the_most_words_in_common(tmp_path: Path):
    obs = _observation(TRUTH_RUN, {})
    work = ["/app/report.txt", "/app/manifest.json"]
    texts = {"/app/report.txt": "words: 12\n", "/app/manifest.json": '{"report": "report.txt"}'}
    unseen = plan_replay(obs, set(work), files=work, texts=texts, visible="Write /app/report.txt.")
    assert TRUTH_SINK not in {e.name for e in unseen}  # a link needs a name the agent can learn
    visible = "Compare your report with expected_report.txt."
    sinks = {e.name: e for e in plan_replay(obs, set(work), files=work, texts=texts, visible=visible)}
    sink = sinks[TRUTH_SINK]
    (link,) = [p for p in sink.plants if (p.group or "").startswith("truth:")]
    assert (link.path, link.link_to) == ("/app/report.txt", "/tests/expected_report.txt")
    assert sink.plants.index(link) > next(i for i, p in enumerate(sink.plants) if p.path == "/app/report.txt")
    state = {p.path: p.content for p in sink.plants if p.group == WORK_GROUP}
    assert state == {"/app/report.txt": "", "/app/manifest.json": texts["/app/manifest.json"]}  # the control
    assert not any((p.group or "").startswith("truth:") for e in sinks.values() if e is not sink for p in e.plants)
    truth = tmp_path / "expected_report.txt"
    truth.write_text("words: 12\n")
    work = tmp_path / "report.txt"
    script = Exploit(name="x", plants=[link.model_copy(update={"path": str(work), "link_to": str(truth)})]).script()
    subprocess.run(["sh", "-c", script], check=True)
    assert subprocess.run(["cmp", str(work), str(truth)], check=False).returncode == 0


def test_no_link_where_the_verifier_read_no_file_of_the_works_kind():
    obs = _observation(TRUTH_RUN, {})
    assert [e.name for e in plan_replay(obs, {"/app/out.csv"}, files=["/app/out.csv"])] == []


SOURCE_ALONG_PATH = "\n".join(
    [
        "proc\t1\t0",
        "exec\t1\t0\t/usr/bin/bash\tbash%1F/tests/test.sh",
        "stat\t1\t-2\t/app/.venv/bin/checks.sh",
        "stat\t1\t-2\t/app/.venv/bin/mkdir",
        "open\t1\t3\t0\t/tests/checks.sh",
        f"open\t1\t4\t{os.O_WRONLY | os.O_CREAT | os.O_TRUNC}\t/logs/verifier/reward.txt",
        "exit\t1\t0",
    ]
)


def test_a_file_the_verifiers_shell_looked_for_along_path_before_sourcing_it_replays_its_verdict():
    """`source checks.sh` stats each PATH folder first: a `checks.sh` planted there is sourced instead; a program
    looked up along PATH (`mkdir`) is no sourced file."""
    access = {"/app/.venv/bin/checks.sh": (False, False, True), "/app/.venv/bin/mkdir": (False, False, True)}
    (sink,) = plan_replay(_observation(SOURCE_ALONG_PATH, access), set())
    planted = {p.path: p.content for p in sink.plants if p.path.startswith("/app/")}
    assert list(planted) == ["/app/.venv/bin/checks.sh"]
    assert "/tests/test.sh" in planted["/app/.venv/bin/checks.sh"]


def test_the_guard_records_the_folders_a_glob_lists(tmp_path: Path):
    kit = GuardKit.make(tmp_path, observe=True)
    logs = tmp_path / "logs"
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "a.result").write_text("PASS\n")
    logs.mkdir()
    script = tmp_path / "t.sh"
    script.write_text(
        f"n=$(ls {tmp_path}/res/*.result | wc -l)\nls -t {tmp_path}/res >/dev/null\necho 1 > {logs}/reward.txt\n"
    )
    done = subprocess.run([str(kit.folder / "reward_guard"), str(kit.folder), str(logs), "--", "bash", str(script)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    trace = parse_trace((kit.folder / "trace").read_text())
    assert f"{tmp_path}/res" in trace.listed()
    assert f"{tmp_path}/res/a.result" not in trace.listed()


SIBLING_RUN = "\n".join(
    [
        "proc\t1\t0",
        "exec\t1\t0\t/usr/bin/bash\tbash%1F/tests/test.sh",
        "proc\t2\t1",
        "exec\t2\t0\t/usr/bin/python3\tpython3%1F/app/rle.py%1F/tests/cases/1.in",
        "open\t2\t3\t0\t/tests/cases/1.in",
        "out\t2\t" + b"3a2b\n".hex(),
        "exit\t2\t0",
        "proc\t3\t1",
        "exec\t3\t0\t/usr/bin/cmp\tcmp%1F-%1F/tests/cases/1.out",
        "open\t3\t3\t0\t/tests/cases/1.out",
        "exit\t3\t0",
        "exit\t1\t0",
    ]
)


@pytest.mark.parametrize("python", [True, False])
def test_a_program_sent_to_read_beside_the_expected_outputs_prints_them(python: bool, tmp_path: Path):
    text = (
        SIBLING_RUN if python else SIBLING_RUN.replace("/usr/bin/python3\tpython3%1F/app/rle.py", "/app/rle\t/app/rle")
    )
    work = "/app/rle.py" if python else "/app/rle"
    sinks = {e.name: e for e in plan_replay(_observation(text, {}), {work}, files=[work])}
    (plant,) = [p for p in sinks[SIBLING_SINK].plants if p.group == f"sibling:{work}"]
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "7.in").write_text("aaab\n")
    (cases / "7.out").write_text("3a1b\n")  # an input the recorded run never had: found at run time
    program = tmp_path / "prog"
    program.write_text(plant.content)
    runner = [sys.executable] if python else ["sh"]
    done = subprocess.run([*runner, str(program), str(cases / "7.in")], capture_output=True, text=True, check=True)
    assert done.stdout == "3a1b\n"


def test_no_sibling_plant_where_the_verifier_keeps_no_file_beside_the_input():
    text = SIBLING_RUN.replace("/tests/cases/1.out", "/tests/expected/1.out")
    assert SIBLING_SINK not in {e.name for e in plan_replay(_observation(text, {}), {"/app/rle.py"}, ["/app/rle.py"])}
