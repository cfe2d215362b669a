"""The Dockerfile subset planner (no sandbox needed): line numbers, forms, substitution, .dockerignore."""

from __future__ import annotations

from pathlib import Path

import pytest

from qaflow.errors import BuildError, UnsupportedError
from qaflow.sandbox.dockerfile import Copy, DockerIgnore, MakeDir, Run, parse, plan_build


def write(tmp_path: Path, dockerfile: str, files: dict[str, str] | None = None) -> Path:
    (tmp_path / "Dockerfile").write_text(dockerfile)
    for rel, text in (files or {}).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path / "Dockerfile"


def test_parse_joins_continuations_skips_comments_and_keeps_start_lines():
    text = "FROM x\n\n# comment\nRUN a \\\n  # inner comment\n  && b \\\n\n  && c\nENV K=V\n"
    assert [(i.keyword, i.args, i.line) for i in parse(text)] == [
        ("FROM", "x", 1),
        ("RUN", "a  && b  && c", 4),
        ("ENV", "K=V", 9),
    ]


def test_plan_steps_forms_and_env(tmp_path: Path):
    dockerfile = write(
        tmp_path,
        'FROM python:3.11-slim\nENV A=1 B="two words"\nWORKDIR work\nRUN ["python3", "-c", "print(1)"]\n'
        'SHELL ["/bin/bash", "-c"]\nRUN echo $A\nCOPY f.txt .\n',
        {"f.txt": "x"},
    )
    plan = plan_build(dockerfile, tmp_path, base_env={"PATH": "/usr/bin"})
    assert plan.base == "python:3.11-slim" and plan.workdir == "/app/work"
    assert plan.env == {"PATH": "/usr/bin", "A": "1", "B": "two words"}
    make, run_json, run_shell, copy = plan.steps
    assert isinstance(make, MakeDir) and make.path == "/app/work" and make.line == 3
    assert isinstance(run_json, Run) and run_json.argv == ("python3", "-c", "print(1)")
    assert isinstance(run_shell, Run) and run_shell.argv == ("/bin/bash", "-c", "echo $A")
    assert run_shell.env["A"] == "1" and run_shell.workdir == "/app/work"
    assert isinstance(copy, Copy) and copy.dest == "/app/work" and copy.dest_is_dir is False


def test_several_sources_need_a_folder_destination(tmp_path: Path):
    dockerfile = write(tmp_path, "FROM x\nCOPY a b /dest\n", {"a": "", "b": ""})
    with pytest.raises(BuildError, match=r"Dockerfile:2: .*ending in '/'"):
        plan_build(dockerfile, tmp_path)


def test_missing_copy_source_is_a_build_error(tmp_path: Path):
    dockerfile = write(tmp_path, "FROM x\nCOPY nothing.txt /app/\n")
    with pytest.raises(BuildError, match="not found in the build context"):
        plan_build(dockerfile, tmp_path)


def test_globs_and_dockerignore(tmp_path: Path):
    dockerfile = write(
        tmp_path,
        "FROM x\nCOPY *.txt /app/\n",
        {"a.txt": "", "b.txt": "", "skip.txt": "", ".dockerignore": "skip.txt\n"},
    )
    (copy,) = plan_build(dockerfile, tmp_path).steps
    assert isinstance(copy, Copy)
    assert sorted(p.name for p in copy.sources) == ["a.txt", "b.txt"]
    ignore = DockerIgnore("build/\n**/*.pyc\n!keep.pyc\n/docs/*.md\n")
    assert ignore.excluded("build/x/y") and ignore.excluded("a/b/c.pyc") and ignore.excluded("docs/r.md")
    assert not ignore.excluded("keep.pyc") and not ignore.excluded("docs/sub/r.md") and not ignore.excluded("src")


@pytest.mark.parametrize(
    "line",
    ["ADD archive.tar.gz /app/", "STOPSIGNAL SIGTERM\nUSER 1000", "RUN <<EOF\necho\nEOF", "COPY --exclude=x . /app/"],
)
def test_unsupported_forms(tmp_path: Path, line: str):
    dockerfile = write(tmp_path, f"FROM x\n{line}\n", {"archive.tar.gz": ""})
    with pytest.raises(UnsupportedError, match="needs the docker backend"):
        plan_build(dockerfile, tmp_path)


def test_escape_directive_is_unsupported(tmp_path: Path):
    dockerfile = write(tmp_path, "# escape=`\nFROM x\n")
    with pytest.raises(UnsupportedError, match=r"escape.*needs the docker backend"):
        plan_build(dockerfile, tmp_path)


def test_one_reading_of_logical_lines_for_every_caller() -> None:
    """Docker drops comment lines inside a continuation too; the sandbox's parser and every static
    reader of Dockerfiles (lint, hardening, imports) see the same instructions."""
    from qaflow.sandbox.dockerfile import logical_lines
    from qaflow.task import dockerfile_logical_lines

    text = (
        "FROM base\n\nRUN apt-get update && \\\n# a note inside the continuation\n"
        "    apt-get install -y curl\n# tail\nWORKDIR /app\n"
    )
    assert logical_lines(text) == [
        (1, "FROM base"),
        (3, "RUN apt-get update &&  apt-get install -y curl"),
        (7, "WORKDIR /app"),
    ]
    assert dockerfile_logical_lines(text) == [line for _, line in logical_lines(text)]
