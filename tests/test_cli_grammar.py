"""One grammar for every command: `--help` with an example, `--json [FILE|-]` declared once, choices for
`--backend`/`--executor`, and every misuse one `error:` line with exit status 2 (never a boxed panel)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.cli.options import json_values
from qaflow.cli.output import console
from tests.conftest import TASKS_REPO


def _commands(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    subs = getattr(group, "commands", None)
    if not isinstance(subs, dict):
        return [(prefix, group)]
    found: list[tuple[tuple[str, ...], object]] = []
    for name, sub in subs.items():
        if not getattr(sub, "hidden", False):
            found += _commands(sub, (*prefix, name))
    return found


COMMANDS = _commands(typer.main.get_command(app))


def _option(command: object, name: str) -> object | None:
    return next((p for p in getattr(command, "params", []) if name in getattr(p, "opts", [])), None)


def test_every_command_has_help_with_an_example():
    assert len(COMMANDS) > 35
    for path, _ in COMMANDS:
        out = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert out.exit_code == 0, (path, out.output)
        assert "Example: qaflow " in out.output, f"`qaflow {' '.join(path)} --help` has no example"
    top = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "SFT" in top and "RL" in top and "Example: qaflow " in top
    rl = CliRunner().invoke(app, ["rl", "--help"], terminal_width=200).output
    assert "GRPO" not in rl  # no such command
    both = CliRunner().invoke(app, ["import", "attempts", "--help"], terminal_width=200).output
    assert "`qaflow import attempts` and `qaflow attempts import` are the same command" in both


def test_json_backend_and_executor_are_declared_once():
    with_json = [path for path, c in COMMANDS if _option(c, "--json") is not None]
    assert len(with_json) >= 30
    for path, command in COMMANDS:
        json_option = _option(command, "--json")
        if json_option is not None:
            assert json_option.metavar == "[FILE|-]" and json_option.help, path  # type: ignore[attr-defined]
            assert not json_option.is_flag, path  # type: ignore[attr-defined]
    for name, choices in (("--backend", ["auto", "docker", "bwrap"]), ("--executor", ["local", "ray"])):
        declared = [(p, _option(c, name)) for p, c in COMMANDS if _option(c, name) is not None]
        assert declared, name
        for path, _ in declared:
            shown = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"}).output
            if path != ("curate", "dedup"):  # its --backend is the MinHash implementation: numpy or datasketch
                assert all(c in shown for c in choices), (path, name)
            bad = CliRunner().invoke(app, [*path, name, "nonsense"])
            assert bad.exit_code == 2, (path, name, bad.output)
            assert "'nonsense' is not one of" in bad.output, (path, name, bad.output)


def test_json_takes_an_optional_value():
    assert json_values(["check", "P", "--json"]) == ["check", "P", "--json=-"]
    assert json_values(["check", "P", "--json", "-"]) == ["check", "P", "--json=-"]
    assert json_values(["check", "P", "--json", "out.json", "-j", "2"]) == ["check", "P", "--json=out.json", "-j", "2"]
    assert json_values(["check", "--json", "P"]) == ["check", "--json=-", "P"]  # a pool is no JSON file
    assert json_values(["check", "--json", "--jobs", "2"]) == ["check", "--json=-", "--jobs", "2"]
    assert json_values(["x", "--", "--json"]) == ["x", "--", "--json"]


def test_json_goes_to_stdout_or_to_a_file(tmp_path: Path):
    pool = tmp_path / "pool"
    shutil.copytree(TASKS_REPO / "csv-sum", pool / "csv-sum")
    scanned = CliRunner().invoke(app, ["pool", "scan", str(pool), "--json", str(tmp_path / "scan.json")])
    assert scanned.exit_code == 0, scanned.output
    assert json.loads((tmp_path / "scan.json").read_text())["total"] == 1
    listed = CliRunner().invoke(app, ["pool", "list", str(pool), "--json"])  # a positional pool, JSON on stdout
    assert listed.exit_code == 0, listed.output
    assert [row["name"] for row in json.loads(listed.stdout)] == ["qaflow/csv-sum"]
    old = CliRunner().invoke(app, ["pool", "list", "--pool", str(pool), "--json", "-"])  # the older spelling
    assert json.loads(old.stdout) == json.loads(listed.stdout)
    shown = CliRunner().invoke(app, ["pool", "show", "csv-sum", str(pool), "--json=" + str(tmp_path / "show")])
    assert shown.exit_code == 0 and json.loads((tmp_path / "show").read_text())["name"] == "qaflow/csv-sum"


def _misuses(tmp: Path) -> list[list[str]]:
    task = str(TASKS_REPO / "csv-sum")
    empty = tmp / "empty"
    empty.mkdir()
    file = tmp / "notes.txt"
    file.write_text("x")
    long_name = tmp / ("a-folder-with-a-long-name-" * 8)
    return [
        ["run", task, "--backend", "podman"],
        ["check", str(TASKS_REPO), "--executor", "threads"],
        ["audit", str(file)],
        ["audit", str(long_name)],  # an error line longer than any terminal stays one line off a terminal
        ["audit", str(TASKS_REPO), "--jobs", "0"],
        ["run", task, "--network", "sometimes"],
        ["rollout", "stats", str(empty)],
        ["check", str(TASKS_REPO), "--json", "out.txt"],  # not a JSON file name: an extra argument
        ["check"],
        ["check", str(TASKS_REPO), "--bogus"],
        ["no-such-command"],
        ["pool", "list", str(empty), "--status", "nonsense"],
        ["pool", "list", str(empty), "--pool", str(tmp)],
        ["accept", task, "--band", "2,1"],
        ["export", "sft", str(empty), "--out", str(tmp / "out")],
        ["sft", "check", str(file), "--model", str(tmp / "missing")],
    ]


def test_every_misuse_is_one_error_line_with_status_2(tmp_path: Path):
    for args in _misuses(tmp_path):
        out = CliRunner().invoke(app, args)
        lines = out.output.strip().splitlines()
        assert out.exit_code == 2, (args, out.output)
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, out.output)
        assert "╭" not in out.output and "Traceback" not in out.output, (args, out.output)


@pytest.mark.parametrize("path", ["file", "missing"])
def test_audit_names_the_path_it_cannot_use(tmp_path: Path, path: str):
    target = tmp_path / path
    if path == "file":
        target.write_text("x")
    out = CliRunner().invoke(app, ["audit", str(target)])
    reason = "not a folder" if path == "file" else "no such folder"
    assert out.exit_code == 2 and out.output.startswith(f"error: {target}: {reason}"), out.output


def test_text_is_not_hard_wrapped_off_a_terminal(capsys: pytest.CaptureFixture[str]):
    line = "findings: " + ", ".join(f"unverified_requirement_{i} {i}" for i in range(12))
    assert len(line) > 300
    console().print(line)
    console(stderr=True).print(f"[red]error:[/red] {line}")
    captured = capsys.readouterr()
    assert captured.out == line + "\n" and captured.err == f"error: {line}\n"
