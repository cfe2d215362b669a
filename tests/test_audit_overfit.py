"""Instruction-overfit mutants (issue 40): the reference solution answering only the instruction's examples,
as a script and as a module, run for real."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from qaflow.audit.mutants.overfit import instruction_examples, overfit_module, overfit_mutants, overfit_script
from qaflow.audit.observation import Observation
from qaflow.audit.trace import parse_trace
from qaflow.trial.effects import ChangeKind, Effect, FileChange

INSTRUCTION = (
    "Write `/app/roman.py`: `python3 /app/roman.py N` prints N in Roman numerals.\n"
    "Examples: `1994` -> `MCMXCIV`, `4` -> `IV`; it exits with status 2 on anything else.\n"
    "```\n$ python3 /app/roman.py 58\nLVIII\n```\n"
)
SCRIPT = (
    "#!/usr/bin/env python3\nfrom __future__ import annotations\nimport sys\nprint(sys.argv[1:], sys.stdin.read())\n"
)


def test_examples_are_what_the_instruction_shows_as_code():
    examples = instruction_examples(INSTRUCTION)
    assert {"1994", "4", "58", "MCMXCIV", "/app/roman.py", "python3 /app/roman.py N"} <= set(examples)
    assert "2" not in examples and "status" not in examples  # prose is no example


def _run(path: Path, args: list[str], stdin: str | None) -> str:
    done = subprocess.run([sys.executable, str(path), *args], input=stdin, capture_output=True, text=True,
                          check=True, stdin=None if stdin is not None else subprocess.DEVNULL)  # fmt: skip
    return done.stdout


def test_the_script_answers_only_the_examples(tmp_path: Path):
    script = tmp_path / "roman.py"
    script.write_text(overfit_script(SCRIPT, instruction_examples(INSTRUCTION)))
    assert script.read_text().startswith("#!/usr/bin/env python3\nfrom __future__ import annotations\n")
    assert _run(script, ["1994"], None) == "['1994'] \n"
    assert _run(script, ["58"], "4\n") == "['58'] 4\n\n"  # stdin read once, handed on
    assert _run(script, ["1995"], None) == "?\n"
    assert _run(script, ["58"], "1995\n") == "?\n"
    assert _run(script, ["/app/roman.py"], None) == "?\n"  # a path's content is the input
    assert _run(script, [], None) == "?\n"  # no input given: it reads it from elsewhere


def test_the_module_answers_only_the_examples(tmp_path: Path):
    source = "def to_roman(n):\n    return 'R' + str(n)\n\n\ndef _private(n):\n    return n\n"
    (tmp_path / "roman.py").write_text(overfit_module(source, instruction_examples(INSTRUCTION)))
    code = "import roman; print(roman.to_roman(1994), roman.to_roman(4), roman.to_roman(5), roman._private(7))"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert done.stdout == "R1994 R4 None 7\n"


def test_only_python_files_the_verifier_ran_or_imported_get_a_mutant():
    trace = parse_trace(
        "\n".join(
            [
                "proc\t1\t0",
                "exec\t1\t0\t/usr/bin/python3\tpython3%1F-I%1F/app/roman.py%1F1994",
                "open\t1\t3\t0\t/app/roman.py",
                "proc\t2\t0",
                "exec\t2\t0\t/usr/bin/python3\tpython3%1F/tests/t.py",
                "open\t2\t3\t0\t/app/lib.py",
                "exit\t2\t0",
                "exit\t1\t0",
            ]
        )
    )
    files = {p: f"print({p!r})\n".encode() for p in ("/app/roman.py", "/app/lib.py", "/app/unused.py")}
    files["/app/lib.py"] = b"def to_roman(n):\n    return str(n)\n"  # a module mutant needs a function to change
    changes = [FileChange(path=p, kind=ChangeKind.CREATED, content=c, mode=0o644) for p, c in files.items()]
    effect = Effect(changes=changes)
    mutants = overfit_mutants(effect, Observation(observed=True, trace=trace), INSTRUCTION)
    assert [m.name for m in mutants] == ["overfit:app/lib.py", "overfit:app/roman.py"]
    lib, roman = (m.writes[m.targets[0]] or b"" for m in mutants)
    assert b"_qaflow_overfit()" in lib and b"_qaflow_shown()" in roman
    assert overfit_mutants(effect, Observation(observed=True, trace=trace), "No code shown.") == []
    assert overfit_mutants(effect, Observation(observed=True), INSTRUCTION) == []


def test_the_replay_command_finds_the_overfit_mutant_the_audit_ran(tmp_path: Path):
    """`qaflow run TASK --agent mutant:overfit:...` rebuilds the mutant from the recorded effect and observation."""
    from qaflow.audit.mutant_lookup import rebuild_mutants
    from qaflow.task import Task
    from tests.taskfactory import write_task

    task = Task.load(write_task(tmp_path, "roman", instruction=INSTRUCTION))
    trace = parse_trace("proc\t1\t0\nexec\t1\t0\t/usr/bin/python3\tpython3%1F/app/roman.py%1F4\nexit\t1\t0")
    change = FileChange(path="/app/roman.py", kind=ChangeKind.CREATED, content=SCRIPT.encode(), mode=0o755)
    found = rebuild_mutants(task, Effect(changes=[change]), Observation(observed=True, trace=trace))
    assert b"_qaflow_shown()" in (found["overfit:app/roman.py"].writes["/app/roman.py"] or b"")


def test_a_module_of_classes_alone_gets_no_overfit_mutant():
    """The module mutant changes public top-level functions; without one it would be the oracle's own module, and
    its full reward no evidence of anything (a sound ring-buffer task was called weak this way)."""
    trace = parse_trace(
        "proc\t1\t0\nexec\t1\t0\t/usr/bin/python3\tpython3%1F/tests/t.py\nopen\t1\t3\t0\t/app/ringbuf.py\nexit\t1\t0"
    )
    classes = b"class RingBuffer:\n    def push(self, x):\n        pass\n\n\ndef _helper():\n    pass\n"
    change = FileChange(path="/app/ringbuf.py", kind=ChangeKind.CREATED, content=classes, mode=0o644)
    assert overfit_mutants(Effect(changes=[change]), Observation(observed=True, trace=trace), INSTRUCTION) == []
    functions = classes + b"\n\ndef make(n):\n    return RingBuffer()\n"
    change = FileChange(path="/app/ringbuf.py", kind=ChangeKind.CREATED, content=functions, mode=0o644)
    (mutant,) = overfit_mutants(Effect(changes=[change]), Observation(observed=True, trace=trace), INSTRUCTION)
    assert mutant.name == "overfit:app/ringbuf.py"
