"""Prompts of the LLM hardening steps (jinja2 templates) and the task context they are rendered with."""

from __future__ import annotations

from typing import Any

import jinja2

from qaflow.requirements.reading import workdir_of
from qaflow.task import Task, _walk_files

FILE_CHARS = 6000
"""Characters of each test or solution file shown to the model."""

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)

TASK_CONTEXT = _ENV.from_string(
    """Task: {{ name }}
Workdir: {{ workdir }}

## Instruction
{{ instruction }}

## Environment files (environment/)
{% for f in env_files %}- {{ f }}
{% endfor %}
## Verifier files (tests/, hidden from the agent)
{% for f in tests %}### {{ f.path }}
```
{{ f.text }}
```
{% endfor %}
## Reference solution (solution/, hidden from the agent)
{% for f in solution %}### {{ f.path }}
```
{{ f.text }}
```
{% endfor %}"""
)

EXPAND_SYSTEM = _ENV.from_string(
    """You make agentic coding tasks harder without making them ambiguous. Given a task, propose
{{ max_requirements }} or fewer extra requirements that build on what the task already produces: a new
file derived from its outputs, or a stricter, checkable property of them. For each requirement give
one sentence for the instruction and the absolute paths (under {{ workdir }}) it produces or
changes. Give checks: python3 programs (standard library only) that exit 0 only when their
requirements hold and exit non-zero otherwise, reading only files under {{ workdir }}; every
requirement must be verified by at least one check, and a check must fail on the untouched
environment. Give the bash commands the reference solution adds: they run in {{ workdir }} after the
original solution and must make every check pass. Never mention /tests or /solution in a
requirement, and never give away expected values that the agent should compute."""
)

GRAPH_SYSTEM = _ENV.from_string(
    """You describe the requirement graph of an agentic coding task. Requirements are what the
instruction asks (one sentence each); artifacts are the files and states the agent produces or
reads (absolute container paths, folders ending with "/"); checks are the verifier's assertions
(set `file` to the test file that implements one, relative to the task folder, e.g.
tests/check.py). Link requirements to the artifacts they produce, artifacts to the artifacts they
are made from (depends_on), and checks to the artifacts or requirements they verify. Declare a
requirement even when no check covers it: finding such gaps is the point. Use short ids made of
letters, digits and - _ . :"""
)


def _files(task: Task, folder: str) -> list[dict[str, str]]:
    root = task.path / folder
    found = []
    for path in _walk_files(root) if root.is_dir() else []:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if len(text) > FILE_CHARS:
            text = text[:FILE_CHARS] + "\n[... cut]"
        found.append({"path": path.relative_to(task.path).as_posix(), "text": text})
    return found


def task_context(task: Task) -> dict[str, Any]:
    env = task.environment_dir
    return {
        "name": task.name,
        "workdir": workdir_of(task),
        "instruction": task.instruction.strip(),
        "env_files": [p.relative_to(env).as_posix() for p in _walk_files(env)] if env.is_dir() else [],
        "tests": _files(task, "tests"),
        "solution": _files(task, "solution"),
    }


def render_task(task: Task) -> str:
    return TASK_CONTEXT.render(**task_context(task))


def expand_messages(task: Task, max_requirements: int) -> list[dict[str, str]]:
    system = EXPAND_SYSTEM.render(max_requirements=max_requirements, workdir=workdir_of(task))
    return [{"role": "system", "content": system}, {"role": "user", "content": render_task(task)}]


def graph_messages(task: Task) -> list[dict[str, str]]:
    return [{"role": "system", "content": GRAPH_SYSTEM.render()}, {"role": "user", "content": render_task(task)}]
