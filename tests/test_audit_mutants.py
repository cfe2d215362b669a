"""Probe 6 pieces: recording an agent's effect (both backends) and mutants built from it."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qaflow.agents import OracleAgent
from qaflow.audit.mutants import Mutant, MutantAgent, MutantKind, deliverables, in_dot_folder, is_scratch, make_mutants
from qaflow.audit.observation import Access, Observation
from qaflow.task import Task
from qaflow.trial import run_trial
from qaflow.trial.effects import ChangeKind, Effect, FileChange, RecordingAgent, parse_report
from tests.taskfactory import write_task

SOLVE = r"""#!/bin/bash
set -e
echo done > /app/out.txt
mkdir -p /app/data
printf '{\n  "count": 3,\n  "items": ["a", "b", "c"]\n}\n' > /app/data/report.json
sed -i 's/beta 2/beta 20/' /app/input.txt
rm /app/old.txt
echo scratch > /tmp/scratch
"""
DOCKERFILE = "FROM python:3.11-slim\nWORKDIR /app\nCOPY input.txt old.txt /app/\n"
ENV_FILES = {"environment/input.txt": "alpha 1\nbeta 2\ngamma 3\n", "environment/old.txt": "old\n"}
REPORT = b'{\n  "count": 3,\n  "items": ["a", "b", "c"]\n}\n'
EXPECTED = {
    "/app/out.txt": (ChangeKind.CREATED, b"done\n"),
    "/app/data/report.json": (ChangeKind.CREATED, REPORT),
    "/app/input.txt": (ChangeKind.MODIFIED, b"alpha 1\nbeta 20\ngamma 3\n"),
    "/app/old.txt": (ChangeKind.DELETED, None),
    "/tmp/scratch": (ChangeKind.CREATED, b"scratch\n"),
}
WEAK_TEST = "#!/bin/bash\nif [ -e /app/out.txt ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
STRONG_TEST = r"""#!/bin/bash
ok=1
[ "$(cat /app/out.txt 2>/dev/null)" = done ] || ok=0
[ "$(cat /app/data/report.json 2>/dev/null)" = "$(printf '{\n  "count": 3,\n  "items": ["a", "b", "c"]\n}')" ] || ok=0
[ "$(cat /app/input.txt 2>/dev/null)" = "$(printf 'alpha 1\nbeta 20\ngamma 3')" ] || ok=0
[ ! -e /app/old.txt ] || ok=0
echo $ok > /logs/verifier/reward.txt
"""


EXTRA = """ln -s /app/out.txt /app/link
T=/usr/local/bin/qaflow-tool
if [ -w /usr/local/bin ]; then printf '#!/bin/sh\\n' > $T; chmod 755 $T; fi
"""
"""Also in the recorded oracle: a symlink, and (docker only: bwrap's /usr is the host's, read-only) a tool."""

MUTANT_APPLIED = r"""#!/bin/bash
ok=1
[ -f /app/out.txt ] && [ ! -s /app/out.txt ] || ok=0
[ "$(readlink /app/link)" = /app/out.txt ] || ok=0
[ ! -e /app/old.txt ] && [ "$(cat /tmp/scratch)" = scratch ] || ok=0
if [ -w /usr/local/bin ]; then [ -x /usr/local/bin/qaflow-tool ] || ok=0; fi
echo $ok > /logs/verifier/reward.txt
"""


def _task(root: Path, name: str, test_sh: str, solve_sh: str = SOLVE) -> Task:
    return Task.load(write_task(root, name, solve_sh=solve_sh, test_sh=test_sh, dockerfile=DOCKERFILE, files=ENV_FILES))


def _change(path: str, kind: ChangeKind, content: bytes | None = None, mode: int = 0o644) -> FileChange:
    if kind is ChangeKind.DELETED:
        return FileChange(path=path, kind=kind)
    return FileChange(path=path, kind=kind, content=content, mode=mode, size=len(content or b""))


def _effect() -> Effect:
    changes = [_change(p, kind, content) for p, (kind, content) in EXPECTED.items()]
    changes.append(_change("/app/run.sh", ChangeKind.MODIFIED, b"#!/bin/sh\necho 1\necho 2\n", 0o755))
    changes.append(_change("/app/same.txt", ChangeKind.CREATED, b"x\n"))
    return Effect(changes=sorted(changes, key=lambda c: c.path), workdir="/app")


def _oracle_state(effect: Effect) -> dict[str, bytes | None]:
    return {c.path: c.content for c in effect.changes}


# --- make_mutants: pure ---------------------------------------------------------------------------


def test_make_mutants_is_deterministic_and_names_are_unique() -> None:
    first = make_mutants(_effect(), limit=50)
    assert [m.model_dump() for m in first] == [m.model_dump() for m in make_mutants(_effect(), limit=50)]
    assert len({m.name for m in first}) == len(first)
    assert first[0].name == "empty-all"
    assert Mutant.model_validate_json(first[0].model_dump_json()) == first[0]


def test_every_kind_is_made() -> None:
    mutants = {m.name: m for m in make_mutants(_effect(), limit=50)}
    # code: mutants/code.py; overfit: mutants/overfit.py; output: mutants/output.py; edge: mutants/edge.py
    elsewhere = {MutantKind.CODE, MutantKind.OVERFIT, MutantKind.OUTPUT, MutantKind.EDGE}
    assert {m.kind for m in mutants.values()} == set(MutantKind) - elsewhere
    assert mutants["empty:app/out.txt"].writes["/app/out.txt"] == b""
    assert mutants["corrupt-line:app/input.txt"].writes["/app/input.txt"] in (
        b"alpha 2\nbeta 20\ngamma 3\n",
        b"alpha 1\nbeta 21\ngamma 3\n",
        b"alpha 1\nbeta 20\ngamma 4\n",
    )
    assert mutants["corrupt-line:app/out.txt"].writes["/app/out.txt"] == b"qbar\n"
    assert mutants["truncate:app/input.txt"].writes["/app/input.txt"] == b"alpha 1\n"
    shuffled = mutants["shuffle:app/input.txt"].writes["/app/input.txt"]
    assert shuffled is not None and sorted(shuffled.splitlines()) == sorted(b"alpha 1\nbeta 20\ngamma 3".split(b"\n"))
    without_delete = mutants["subset:without:app/old.txt"]
    assert "/app/old.txt" not in without_delete.writes and without_delete.writes["/app/out.txt"] == b"done\n"
    assert "/app/input.txt" not in mutants["subset:without:app/input.txt"].writes


def test_scratch_and_code_files_are_not_broken_but_kept() -> None:
    mutants = make_mutants(_effect(), limit=50)
    assert is_scratch("/tmp/scratch") and is_scratch("/app/pkg/__pycache__/m.cpython-311.pyc")
    assert not is_scratch("/app/out.txt")
    for m in mutants:
        assert "/tmp/scratch" not in m.targets
        assert m.writes["/tmp/scratch"] == b"scratch\n"
        assert m.writes.get("/app/run.sh", b"") in (b"", b"#!/bin/sh\n", b"#!/bin/sh\necho 1\necho 2\n")
        if "/app/run.sh" in m.writes:
            assert m.modes["/app/run.sh"] == 0o755
    code_kinds = {m.kind for m in mutants if m.targets == ["/app/run.sh"]}
    assert code_kinds == {MutantKind.EMPTY, MutantKind.TRUNCATE, MutantKind.SUBSET}


def test_mutants_reproducing_the_oracle_are_skipped() -> None:
    effect = Effect(
        changes=[
            _change("/app/empty.txt", ChangeKind.CREATED, b""),
            _change("/app/same.txt", ChangeKind.CREATED, b"x\nx\n"),
        ]
    )
    oracle = _oracle_state(effect)
    mutants = make_mutants(effect, limit=50)
    assert mutants
    for m in mutants:
        assert m.writes != oracle
    names = {m.name for m in mutants}
    assert "empty:app/empty.txt" not in names and "shuffle:app/same.txt" not in names
    assert "truncate:app/empty.txt" not in names
    assert make_mutants(Effect(changes=[_change("/app/e", ChangeKind.CREATED, b"")])) == []


def test_json_mutation_is_valid_json_in_the_same_style() -> None:
    compact = b'{"total": 7, "names": ["a", "b"], "ok": true}\n'
    changes = [_change("/app/r.json", ChangeKind.CREATED, REPORT), _change("/app/c.json", ChangeKind.CREATED, compact)]
    effect = Effect(changes=changes)
    mutants = {m.name: m for m in make_mutants(effect, limit=50)}
    pretty = mutants["json-value:app/r.json"].writes["/app/r.json"]
    assert pretty is not None and json.loads(pretty) == {"count": 4, "items": ["a", "b", "c"]}
    assert pretty.startswith(b'{\n  "count": 4,\n') and pretty.endswith(b"}\n")
    small = mutants["json-value:app/c.json"].writes["/app/c.json"]
    assert small == b'{"total": 8, "names": ["a", "b"], "ok": true}\n'


def test_limit_keeps_the_most_informative_first() -> None:
    everything = make_mutants(_effect(), limit=50)
    assert len(everything) > 12
    assert len(make_mutants(_effect())) == 12
    for limit in (1, 3, 7):
        assert [m.name for m in make_mutants(_effect(), limit=limit)] == [m.name for m in everything[:limit]]
    focused = make_mutants(_effect(), limit=2, focus="tests check /app/input.txt")
    assert [m.name for m in focused] == ["empty-all", "empty:app/input.txt"]


def test_links_are_kept_and_empty_all_names_its_targets() -> None:
    effect = _effect()
    effect.changes.append(FileChange(path="/app/l", kind=ChangeKind.CREATED, file_type="symlink", link_target="x"))
    mutants = make_mutants(effect, limit=50)
    assert all(m.links == {"/app/l": "x"} for m in mutants)
    assert mutants[0].targets == sorted(
        ["/app/out.txt", "/app/data/report.json", "/app/input.txt", "/app/run.sh", "/app/same.txt"]
    )


def test_a_single_change_gets_no_subset() -> None:
    effect = Effect(changes=[_change("/app/out.txt", ChangeKind.CREATED, b"1\n2\n")])
    kinds = {m.kind for m in make_mutants(effect, limit=50)}
    assert MutantKind.SUBSET not in kinds and MutantKind.EMPTY_ALL in kinds


def test_broken_reports_become_errors() -> None:
    assert parse_report("QAFLOW-EFFECT 1 find\nX\tf\t644\t3\t\t/a\n").error is not None
    ok = parse_report("QAFLOW-EFFECT 1 find\nX\tf\t644\t3\t\t/a\nB\t/a\nYWIK\n.\nD\t/b\nEND\n")
    assert ok.error is None and ok.paths == {"/a": ChangeKind.CREATED, "/b": ChangeKind.DELETED}
    assert ok.get("/a") is not None and ok.get("/a").content == b"ab\n"  # type: ignore[union-attr]


# --- in sandboxes -------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["auto", "python3"])
def test_recording_the_oracle(backend: str, method: str, tmp_path: Path) -> None:
    task = _task(tmp_path, "rec", STRONG_TEST, SOLVE + EXTRA)
    agent = RecordingAgent(OracleAgent(), method=method)  # type: ignore[arg-type]
    result = run_trial(task, agent, backend=backend)
    assert result.error is None and result.full_reward, result
    effect = agent.effect
    assert effect is not None and effect.error is None, effect
    assert effect.method == ("find" if method == "auto" else "python3")
    expected = {**EXPECTED, "/app/link": (ChangeKind.CREATED, None)}
    if backend == "docker":
        expected["/usr/local/bin/qaflow-tool"] = (ChangeKind.CREATED, b"#!/bin/sh\n")
    assert {c.path: (c.kind, c.content) for c in effect.changes} == expected
    assert not effect.truncated and effect.workdir == "/app"
    link = effect.get("/app/link")
    assert link is not None and link.file_type == "symlink" and link.link_target == "/app/out.txt"
    if backend == "docker":
        assert effect.roots == ["/"] and effect.get("/usr/local/bin/qaflow-tool").mode == 0o755  # type: ignore[union-attr]
    else:
        assert "/app" in effect.roots and "/tmp" in effect.roots and "/tests" not in effect.roots
    if method == "auto":  # the mutant reproduces the link, the mode and the deletion
        empty = next(m for m in make_mutants(effect) if m.name == "empty:app/out.txt")
        check = _task(tmp_path, "applied", MUTANT_APPLIED)
        applied = run_trial(check, MutantAgent(empty), backend=backend)
        assert applied.full_reward, (applied.error, applied.verifier_exec)


def test_weak_verifier_passes_the_empty_mutant_strong_one_none(backend: str, tmp_path: Path) -> None:
    recorder = RecordingAgent(OracleAgent())
    assert run_trial(_task(tmp_path, "rec", STRONG_TEST), recorder, backend=backend).full_reward
    assert recorder.effect is not None
    mutants = make_mutants(recorder.effect)
    assert len(mutants) == 12
    empty = next(m for m in mutants if m.name == "empty:app/out.txt")
    weak = run_trial(_task(tmp_path, "weak", WEAK_TEST), MutantAgent(empty), backend=backend)
    assert weak.error is None and weak.full_reward, weak
    strong = _task(tmp_path, "strong", STRONG_TEST)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda m: run_trial(strong, MutantAgent(m), backend=backend), mutants))
    assert all(r.error is None for r in results), [r.error for r in results if r.error]
    assert [r.agent for r in results if r.full_reward] == []


# --- deliverables: a file the verifier never reads is no target ------------------------------------


ANSWER = b"int add(int a, int b) { return a + b; }\n"


def _created(files: dict[str, bytes]) -> Effect:
    return Effect(
        changes=[FileChange(path=p, kind=ChangeKind.CREATED, content=c, mode=0o644) for p, c in files.items()]
    )


def _observed(*reads: str, dirs: tuple[str, ...] = (), opaque: list[str] | None = None) -> Observation:
    accesses = [Access(path=p, how=["read"], exists=True) for p in reads]
    accesses += [Access(path=d, how=["arg"], exists=True, is_dir=True) for d in dirs]
    return Observation(observed=True, accesses=accesses, opaque_programs=[] if opaque is None else opaque)


def _targets(files: dict[str, bytes], obs: Observation | None, focus: str = "") -> set[str]:
    mutants = make_mutants(_created(files), limit=50, focus=focus, deliverable=deliverables(obs, focus))
    return {t for m in mutants if m.kind is not MutantKind.EMPTY_ALL for t in m.targets}


def test_a_solutions_own_scratch_is_never_mutated_alone() -> None:
    """The aider layout: the reference solution decrypts a payload under /app/.oracle and copies it onto the
    answer; the verifier compiles and runs the answer (opaque programs)."""
    files = {
        "/app/.oracle/payload/files/example.cpp": ANSWER,
        "/app/.oracle/payload/meta.json": b'{"exercise": "add", "version": 3}\n',
        "/app/example.cpp": ANSWER,
    }
    cmake = _observed(dirs=("/app",), opaque=["cmake", "make", "./test_example"])
    for obs in (cmake, None, _observed("/app/example.cpp")):
        targets = _targets(files, obs)
        assert "/app/example.cpp" in targets
        assert "/app/.oracle/payload/meta.json" not in targets
        # the copy is broken together with the answer, never on its own
        for m in make_mutants(_created(files), limit=50, deliverable=deliverables(obs, "")):
            if "/app/.oracle/payload/files/example.cpp" in m.targets:
                assert "/app/example.cpp" in m.targets, m.name


def test_with_every_read_seen_only_what_the_verifier_took_is_a_target() -> None:
    files = {"/app/out.txt": b"42\n", "/app/notes.md": b"how I did it\n", "/app/parts/a.csv": b"x,y\n1,2\n"}
    assert _targets(files, _observed("/app/out.txt")) == {"/app/out.txt"}
    assert _targets(files, _observed("/app/out.txt", dirs=("/app/parts",))) == {"/app/out.txt", "/app/parts/a.csv"}
    # a file the instruction or the tests name is a deliverable whatever was observed
    assert _targets(files, _observed("/app/out.txt"), focus="write notes.md") == {"/app/out.txt", "/app/notes.md"}
    # in a hidden folder a file name alone is the solution's scratch copy of what was named; the path counts
    scratch = files | {"/app/.oracle/files/answer.txt": b"Ada\n"}
    assert _targets(scratch, _observed("/app/out.txt"), focus="the name in answer.txt") == {"/app/out.txt"}
    named = _targets(scratch, _observed("/app/out.txt"), focus="keep /app/.oracle/files/answer.txt")
    assert named == {"/app/out.txt", "/app/.oracle/files/answer.txt"}
    # a program whose reads cannot be seen ran: every file outside a hidden folder stays a target
    assert _targets(files, _observed("/app/out.txt", opaque=["node"])) == set(files)
    # an observation recorded before opaque programs were (None): nothing is excluded
    assert _targets(files, Observation(observed=True)) == set(files)


def test_a_hidden_file_the_verifier_reads_is_a_target() -> None:
    files = {"/app/.config/settings.json": b'{"mode": "fast"}\n', "/app/out.txt": b"ok\n"}
    assert "/app/.config/settings.json" in _targets(files, _observed("/app/.config/settings.json", opaque=["x"]))
    assert "/app/.config/settings.json" not in _targets(files, _observed("/app/out.txt", dirs=("/app",)))


@given(
    st.dictionaries(
        st.lists(st.sampled_from(["app", ".cache2", ".oracle", "out", "data", "x.txt"]), min_size=1, max_size=4).map(
            lambda parts: "/" + "/".join(parts) + ".txt"
        ),
        st.binary(min_size=1, max_size=40),
        min_size=1,
        max_size=6,
    ),
    st.sets(st.integers(0, 5)),
    st.booleans(),
)
def test_targets_are_deliverables_and_copies_break_together(
    files: dict[str, bytes], read: set[int], opaque: bool
) -> None:
    paths = sorted(files)
    reads = [p for i, p in enumerate(paths) if i in read]
    obs = _observed(*reads, opaque=["node"] if opaque else [])
    wanted = deliverables(obs, "")
    for m in make_mutants(_created(files), limit=50, deliverable=wanted):
        if m.kind is MutantKind.EMPTY_ALL:
            continue
        first = m.targets[0]
        assert wanted(first)
        assert not (in_dot_folder(first) and first not in reads)
        if not opaque:
            assert first in reads
        same = {p for p, c in files.items() if c == files[first] and len(c) >= 16}
        assert same <= set(m.targets) | {first}


@pytest.mark.parametrize(
    ("events", "deliverable"),
    [
        (["read"], True),  # the verifier reads what the agent left
        (["unlink", "write", "read"], False),  # it removes the file and runs the work to make it again
        (["write", "read"], False),  # it makes it afresh (truncating) before reading it
        (["read", "unlink", "write", "read"], True),  # it read the agent's file first
        (["append", "read"], True),  # an append keeps what the agent left
    ],
)
def test_a_file_the_verifier_makes_again_before_reading_it_is_no_deliverable(events: list[str], deliverable: bool):
    from qaflow.audit.mutants.base import deliverables
    from qaflow.audit.observation import Access, Observation
    from qaflow.audit.trace import parse_trace

    path, flags = "/app/out.txt", {"read": 0, "write": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                                   "append": os.O_WRONLY | os.O_CREAT | os.O_APPEND}  # fmt: skip
    lines = ["proc\t1\t0", "exec\t1\t0\t/usr/bin/python3\tpython3%1F/tests/check.py"]
    lines += [f"unlink\t1\t0\t{path}" if e == "unlink" else f"open\t1\t3\t{flags[e]}\t{path}" for e in events]
    obs = Observation(observed=True, trace=parse_trace("\n".join([*lines, "exit\t1\t0"])),
                      accesses=[Access(path=path, how=["read"], exists=True)])  # fmt: skip
    assert deliverables(obs, focus="")(path) is deliverable


def test_a_truncated_archive_loses_content_not_only_its_zero_padding():
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, body in (("pkg/a.py", b"print('a')\n" * 40), ("pkg/b.py", b"print('b')\n" * 40)):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    data = buffer.getvalue()
    assert len(data) >= 2 * len(data.rstrip(b"\0"))  # mostly padding: half the file is all the members
    effect = Effect(changes=[FileChange(path="/app/dist/release.tar", kind=ChangeKind.CREATED, content=data)])
    (cut,) = [m for m in make_mutants(effect) if m.kind is MutantKind.TRUNCATE]
    with (
        pytest.raises(tarfile.ReadError),
        tarfile.open(fileobj=io.BytesIO(cut.writes["/app/dist/release.tar"] or b"")) as tar,
    ):
        [tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()]  # type: ignore[union-attr]


def test_with_an_opaque_program_a_traced_run_decides_which_files_are_deliverables():
    from qaflow.audit.trace import parse_trace

    trace = parse_trace(
        "\n".join(
            [
                "proc\t1\t0",
                "exec\t1\t0\t/usr/bin/python3\tpython3%1F-I%1F/tests/check.py",
                "open\t1\t3\t0\t/app/totals.json",
                f"open\t1\t3\t{os.O_RDONLY | os.O_DIRECTORY}\t/app/out",
                "exit\t1\t0",
            ]
        )
    )
    obs = Observation(observed=True, opaque_programs=["/usr/bin/python3 -I"], trace=trace)
    deliverable = deliverables(obs, focus="Write /app/totals.json.")
    assert deliverable("/app/totals.json") and deliverable("/app/out/part-1.csv")
    assert not deliverable("/app/make_totals.py")  # the solution's helper script, never read by the verifier
    untraced = Observation(observed=True, opaque_programs=["/usr/bin/python3 -I"])
    assert deliverables(untraced, focus="")("/app/make_totals.py")  # without the trace, unseen reads count


@pytest.mark.parametrize("reverse", [False, True])
def test_a_changed_line_of_sorted_lines_leaves_them_sorted(reverse: bool):
    names = sorted(["ann", "bob", "cyd", "dee", "eve", "fay"], reverse=reverse)
    text = "".join(f"{n}\n" for n in names)
    effect = Effect(changes=[FileChange(path="/app/roster.txt", kind=ChangeKind.CREATED, content=text.encode())])
    (corrupt,) = [m for m in make_mutants(effect) if m.kind is MutantKind.CORRUPT_LINE]
    got = (corrupt.writes["/app/roster.txt"] or b"").decode().splitlines()
    assert got == sorted(got, reverse=reverse) and len(got) == len(names)
    assert len(set(got) - set(names)) == 1  # one name wrong, the order and the count right


@pytest.mark.parametrize(
    ("flags", "regenerated"),
    [
        (os.O_RDWR | os.O_CREAT, False),  # how SQLite opens the database it reads: what the agent left is read
        (os.O_WRONLY | os.O_CREAT | os.O_TRUNC, True),  # `open(p, "w")`, `>`: made again before it is read
        (os.O_WRONLY | os.O_APPEND | os.O_CREAT, False),
    ],
)
def test_a_file_is_regenerated_only_where_the_verifier_truncated_it_before_reading_it(flags: int, regenerated: bool):
    from qaflow.audit.trace import parse_trace

    trace = parse_trace(
        "\n".join(["proc\t1\t0", "exec\t1\t0\t/usr/bin/python3\tpython3%1F/tests/check.py",
                   f"open\t1\t3\t{flags}\t/app/shop.db", "open\t1\t4\t0\t/app/shop.db", "exit\t1\t0"])
    )  # fmt: skip
    assert ("/app/shop.db" in trace.regenerated()) is regenerated
    deliverable = deliverables(Observation(observed=True, opaque_programs=[], trace=trace), focus="/app/shop.db")
    assert deliverable("/app/shop.db") is not regenerated
