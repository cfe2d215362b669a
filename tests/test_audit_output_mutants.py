"""Output mutants (issue 40): wrong answers of the right vocabulary built from what the work printed in the
verifier's traced run, run for real as the programs they replace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qaflow.audit.mutants.output import output_mutants
from qaflow.audit.observation import Observation
from qaflow.audit.trace import PathEvent, parse_trace
from qaflow.trial.effects import ChangeKind, Effect, FileChange

SCRIPT = "/app/triage.py"


def _trace(calls: list[tuple[list[str], str]], python: bool = True) -> Observation:
    """The verifier running the work's program once per call: (its arguments, what it printed)."""
    lines = ["proc\t1\t0", "exec\t1\t0\t/usr/bin/bash\tbash%1F/tests/test.sh"]
    for n, (args, printed) in enumerate(calls, start=2):
        head = ["python3", SCRIPT] if python else ["/app/triage"]
        exe = "/usr/bin/python3" if python else "/app/triage"
        lines += [f"proc\t{n}\t1", f"exec\t{n}\t0\t{exe}\t" + "%1F".join([*head, *args])]
        lines += [f"out\t{n}\t{printed.encode().hex()}", f"exit\t{n}\t0"]
    return Observation(observed=True, trace=parse_trace("\n".join([*lines, "exit\t1\t0"])))


def _effect(python: bool = True) -> Effect:
    path = SCRIPT if python else "/app/triage"
    return Effect(changes=[FileChange(path=path, kind=ChangeKind.MODIFIED, content=b"print('real')\n", mode=0o755)])


def _run(program: bytes, args: list[str], tmp_path: Path, python: bool) -> str:
    path = tmp_path / "prog"
    path.write_bytes(program)
    cmd = [sys.executable, str(path)] if python else ["sh", str(path)]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=True, input="ignored\n").stdout


@pytest.mark.parametrize("python", [True, False])
def test_more_than_asked_prints_every_answer_the_work_gave_for_every_run(tmp_path: Path, python: bool):
    obs = _trace([([], "billing\n"), ([], "outage\n"), ([], "billing\n")], python)
    (more,) = output_mutants(_effect(python), obs)
    assert more.name == ("more-than-asked:app/triage.py" if python else "more-than-asked:app/triage")
    program = more.writes[more.targets[0]] or b""
    assert _run(program, [], tmp_path, python) == "billing\noutage\n"
    assert _run(program, ["any", "thing"], tmp_path, python) == "billing\noutage\n"


@pytest.mark.parametrize("python", [True, False])
def test_less_than_asked_leaves_out_the_first_line_of_what_the_same_arguments_printed(tmp_path: Path, python: bool):
    obs = _trace([(["/tests/a.md"], "https://a\nhttps://b\nhttps://c\n"), (["/tests/b.md"], "https://d\n")], python)
    mutants = {m.name.split(":")[0]: m for m in output_mutants(_effect(python), obs)}
    less = mutants["less-than-asked"]
    program = less.writes[less.targets[0]] or b""
    assert _run(program, ["/tests/a.md"], tmp_path, python) == "https://b\nhttps://c\n"
    assert _run(program, ["/tests/b.md"], tmp_path, python) == ""


@pytest.mark.parametrize(
    ("calls", "kinds"),
    [
        ([([], "42\n")], ["wrong-values"]),  # one answer: printing it again would be right, no more-than-asked
        ([([], "forty-two\n")], []),  # and no digit to get wrong
        ([([], "42\n"), ([], "42\n")], []),
        ([(["x"], "1\n2\n")], ["less-than-asked", "wrong-values"]),
        ([([], "1\n2\n"), ([], "3\n4\n")], ["more-than-asked"]),  # same arguments twice: which is which is unknown
        ([(["a"], "1\n2\n"), (["b"], "3\n")], ["more-than-asked", "less-than-asked", "wrong-values"]),
    ],
)
def test_a_mutant_is_made_only_where_it_is_a_wrong_answer_that_can_be_told_apart(calls, kinds):
    assert [m.name.split(":")[0] for m in output_mutants(_effect(), _trace(calls))] == kinds


@pytest.mark.parametrize("python", [True, False])
def test_wrong_values_get_every_figure_wrong_in_the_output_and_in_the_file_it_writes(tmp_path: Path, python: bool):
    """The verifier runs the work with a fresh output path each time; the file it wrote there was kept."""
    fresh = "/tmp/pytest-of-root/pytest-0/test_report0/report.html"
    obs = _trace([(["/tests/sales.csv", fresh], "wrote 5 rows\n")], python)
    head = ["python3", SCRIPT] if python else ["/app/triage"]
    assert obs.trace is not None
    obs.trace.events.append(PathEvent(op="open", path=fresh, result=3, flags=os.O_WRONLY | os.O_CREAT, pid=2))
    obs.trace.runs[-1].argv = [*head, "/tests/sales.csv", fresh]
    obs.outputs = {fresh: "<td>eu</td><td>120</td><td>3099.50</td>"}
    (values,) = [m for m in output_mutants(_effect(python), obs) if m.name.startswith("wrong-values")]
    elsewhere = tmp_path / "other-run" / "report.html"
    elsewhere.parent.mkdir()
    printed = _run(values.writes[values.targets[0]] or b"", ["/tests/sales.csv", str(elsewhere)], tmp_path, python)
    assert (printed, elsewhere.read_text()) == ("wrote 6 rows\n", "<td>eu</td><td>231</td><td>4100.61</td>")


def test_programs_the_reference_solution_did_not_write_and_untraced_verifiers_get_none():
    obs = _trace([(["a"], "1\n2\n"), (["b"], "3\n")])
    other = Effect(changes=[FileChange(path="/app/other.py", kind=ChangeKind.CREATED, content=b"x", mode=0o644)])
    assert output_mutants(other, obs) == []
    assert output_mutants(_effect(), Observation(observed=True)) == []
    assert output_mutants(_effect(), None) == []


def test_a_replay_finds_the_output_mutant_the_audit_ran(tmp_path: Path):
    """`qaflow run TASK --agent mutant:more-than-asked:...` rebuilds it from the recorded effect and observation."""
    from qaflow.audit.mutant_lookup import rebuild_mutants
    from qaflow.task import Task
    from tests.taskfactory import write_task

    task = Task.load(write_task(tmp_path, "triage"))
    found = rebuild_mutants(task, _effect(), _trace([([], "billing\n"), ([], "outage\n")]))
    assert "more-than-asked:app/triage.py" in found
