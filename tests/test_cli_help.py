"""`--help` as a person reads it: prose reflowed to the terminal, examples one per line, and every
command's options from one declaration."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.cli.help_text import reflow
from tests.conftest import REPO, TASKS_REPO


def test_reflow_joins_prose_and_keeps_examples_and_list_items() -> None:
    doc = """First line
    of the summary.

    A paragraph wrapped
    by hand at the source.

    - item one
      continued
    - item two

    Example: qaflow audit a
    Example: qaflow audit b
    """
    assert reflow(doc).split("\n\n") == [
        "First line of the summary.",
        "A paragraph wrapped by hand at the source.",
        "- item one continued\n- item two",
        "Example: qaflow audit a\nExample: qaflow audit b",
    ]


def test_help_never_breaks_a_sentence_where_the_source_did() -> None:
    out = CliRunner().invoke(app, ["audit", "--help"], terminal_width=220, env={"COLUMNS": "220"})
    assert out.exit_code == 0, out.output
    text = re.sub(r"[│╭╮╰╯─]", " ", out.output)
    # the docstring breaks after "on the"; the help shows the sentence on one line
    assert re.search(r"on the cluster at --address, using each worker's own Docker daemon", text), text
    assert re.search(r"Example: qaflow audit tasks_repo --json audit.json --html audit.html\s*\n", text)


def test_shared_options_read_the_same_in_every_command() -> None:
    helps = {}
    for command in (["audit"], ["run"], ["rollout", "run"], ["repair"], ["check"], ["harden", "process-chain"]):
        out = CliRunner().invoke(app, [*command, "--help"], terminal_width=220, env={"COLUMNS": "220"})
        assert out.exit_code == 0, out.output
        line = next(ln for ln in out.output.splitlines() if ln.strip("│ ").startswith("--backend"))
        helps[" ".join(command)] = re.sub(r"\s+", " ", line.strip("│ "))
    assert len(set(helps.values())) == 1, helps
    assert "auto, docker or bwrap" in next(iter(helps.values()))


def test_import_attempts_is_the_attempts_import_command() -> None:
    noun = CliRunner().invoke(app, ["import", "attempts", "--help"], terminal_width=220)
    verb = CliRunner().invoke(app, ["attempts", "import", "--help"], terminal_width=220)
    assert noun.exit_code == verb.exit_code == 0
    assert "Import other solvers' attempt results as gate evidence." in noun.output
    assert noun.output.split("Usage:")[1].split("\n", 1)[1] == verb.output.split("Usage:")[1].split("\n", 1)[1]


def test_rollout_noun_takes_its_verbs_and_the_old_spellings() -> None:
    pool = str(TASKS_REPO)
    bare = CliRunner().invoke(app, ["rollout", pool, "--efforts", "low"], env={"QAFLOW_MODEL": ""})
    verb = CliRunner().invoke(app, ["rollout", "run", pool, "--efforts", "low"], env={"QAFLOW_MODEL": ""})
    assert bare.exit_code == verb.exit_code == 2
    assert "no model" in bare.output and bare.output == verb.output
    old = CliRunner().invoke(app, ["rollout-stats", "--help"], terminal_width=220)
    new = CliRunner().invoke(app, ["rollout", "stats", "--help"], terminal_width=220)
    assert old.exit_code == new.exit_code == 0 and "(deprecated)" in old.output
    options = [ln for ln in new.output.splitlines() if ln.strip("│ ").startswith("--")]
    assert options and all(ln in old.output for ln in options)


def test_help_examples_name_paths_that_exist_or_that_qaflow_writes() -> None:
    """Every repository path an `Example:` names is in the repository (or under a pool's .qaflow/, which qaflow
    writes); the rest are outputs the example itself creates or metavariables."""
    examples = []
    for package in ("qaflow", "curation", "sft", "rl"):
        for path in sorted((REPO / package).rglob("*.py")):
            examples += re.findall(r"Example: (qaflow [^\n]+)", path.read_text())
    assert len(examples) >= 40
    named = [token for line in examples for token in line.split() if token.startswith(("tasks_repo", "pipelines/"))]
    assert len(named) >= 15
    missing = [t for t in named if "/.qaflow/" not in t and not (REPO / t).exists()]
    assert missing == []


def _commands(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = [prefix] if prefix else []
    subs = getattr(group, "commands", None)
    if isinstance(subs, dict):
        for name, sub in subs.items():
            found += _commands(sub, (*prefix, name))
    return found


def test_no_help_shows_a_type_on_a_flag_or_a_note_for_code_readers() -> None:
    import typer.main

    commands = _commands(typer.main.get_command(app))
    assert len(commands) > 30
    for command in commands:
        out = CliRunner().invoke(app, [*command, "--help"], terminal_width=200, env={"COLUMNS": "200"})
        assert out.exit_code == 0, (command, out.output)
        assert "<bool>" not in out.output and "Long on purpose" not in out.output, (command, out.output)
    forced = CliRunner().invoke(app, ["audit", "--help"], terminal_width=200, env={"COLUMNS": "200"}).output
    assert re.search(r"--jobs\s+-j\s+<int range>", forced)  # a valued option keeps its type
