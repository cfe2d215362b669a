"""The hidden-link exploit's plan: which outputs it links to which named hidden files (pure), and that a
mention the exploit cannot pair plans nothing. Running it is covered by the labels test (timesheet-hours
and its control timesheet-regular-file, both backends)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qaflow.audit.exploits.hidden_links import named_hidden_files, plan_hidden_link
from qaflow.task import Task
from qaflow.trial.effects import ChangeKind, Effect, FileChange
from tests.taskfactory import write_task


def effect(*paths: str) -> Effect:
    return Effect(changes=[FileChange(path=p, kind=ChangeKind.CREATED, content=b"x\n", mode=0o644) for p in paths])


def task_naming(tmp_path: Path, instruction: str, hidden: dict[str, str]) -> Task:
    return Task.load(write_task(tmp_path, instruction=instruction, files=hidden))


@pytest.mark.parametrize(
    "instruction, hidden, outputs, links",
    [
        # the output of the same kind is linked to the named expected file
        ("Compared with /tests/expected_hours.json.", {"tests/expected_hours.json": "{}"},
         ["/app/hours.json"], {"/app/hours.json": "/tests/expected_hours.json"}),
        # of several outputs of that kind, the one whose name the hidden file's holds
        ("Compared with /tests/expected_hours.json.", {"tests/expected_hours.json": "{}"},
         ["/app/days.json", "/app/hours.json"], {"/app/hours.json": "/tests/expected_hours.json"}),
        # several outputs of that kind and no name to choose by: nothing is guessed
        ("Compared with /tests/answer.json.", {"tests/answer.json": "{}"}, ["/app/a.json", "/app/b.json"], {}),
        # a mention of a file the task does not have (its own output path, say) pairs with nothing
        ("Write the result to /solution/result.txt.", {}, ["/solution/result.txt"], {}),
        # a test script named in the text is no answer to link
        ("The checker is /tests/check.py.", {"tests/check.py": "pass\n"}, ["/app/check.py"], {}),
        # another kind of file than the output
        ("Compared with /tests/expected.csv.", {"tests/expected.csv": "a\n"}, ["/app/out.json"], {}),
        # scratch is never an output
        ("Compared with /tests/expected.txt.", {"tests/expected.txt": "a\n"}, ["/tmp/expected.txt"], {}),
    ],
)  # fmt: skip
def test_plan_pairs_outputs_with_named_hidden_files(
    tmp_path: Path, instruction: str, hidden: dict[str, str], outputs: list[str], links: dict[str, str]
) -> None:
    task = task_naming(tmp_path, instruction, hidden)
    exploit = plan_hidden_link(task, effect(*outputs))
    planned = {p.path: p.link_to for p in exploit.plants} if exploit else {}
    assert planned == links
    if exploit:
        assert "ln -sfn" in exploit.script() and "--agent exploit:hidden-link" in exploit.reproduction(str(task.path))


def test_only_files_the_task_has_are_named(tmp_path: Path) -> None:
    task = task_naming(
        tmp_path,
        "See /tests/expected.json, /tests/missing.json, /solution/solve.sh and /tests.",
        {"tests/expected.json": "{}"},
    )
    assert named_hidden_files(task) == ["/tests/expected.json", "/solution/solve.sh"]


def test_no_effect_no_plan(tmp_path: Path) -> None:
    task = task_naming(tmp_path, "Compared with /tests/e.json.", {"tests/e.json": "{}"})
    assert plan_hidden_link(task, None) is None
    assert plan_hidden_link(task, Effect(error="not captured")) is None
