"""Compose: part 2 consumes part 1's output; the composed verifier fails when only one part is done."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.agents import NopAgent, OracleAgent
from qaflow.cli import app
from qaflow.harden.compose import ComposeConfig, Link, compose
from qaflow.harden.errors import HardenError
from qaflow.harden.versions import HardenRecord
from qaflow.models.records import RunKind
from qaflow.pool import Pool
from qaflow.requirements.graph import EdgeKind, RequirementGraph
from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task, _walk_files
from qaflow.trial import run_trial
from tests.conftest import require_backend
from tests.taskfactory import write_task

SORT_TEST = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    'if [ "$(cat /app/sorted.txt 2>/dev/null)" = "$(printf "apple\\nfig\\npear")" ]; then echo 1; else echo 0; fi'
    " > /logs/verifier/reward.txt\n"
)
COUNT_TEST = (
    "#!/bin/bash\nmkdir -p /logs/verifier\npython3 /tests/check.py && echo 1 > /logs/verifier/reward.txt"
    " || echo 0 > /logs/verifier/reward.txt\n"
)
COUNT_CHECK = 'import sys\nsys.exit(0 if open("/app/summary.txt").read() == "apple 3\\n" else 1)\n'


def sort_task(root: Path, name: str = "sort-lines") -> Path:
    return write_task(
        root, name,
        dockerfile="FROM python:3.11-slim\nWORKDIR /app\nCOPY raw.txt /app/raw.txt\n",
        files={"environment/raw.txt": "pear\napple\nfig\n"},
        instruction="Write the lines of /app/raw.txt, sorted, to /app/sorted.txt.\n",
        solve_sh="#!/bin/bash\nsort /app/raw.txt > /app/sorted.txt\n",
        test_sh=SORT_TEST,
    )  # fmt: skip


def count_task(root: Path, name: str = "count-lines", input_name: str = "sorted.txt") -> Path:
    return write_task(
        root, name,
        dockerfile=f"FROM python:3.11-slim\nWORKDIR /app\nCOPY notes.md {input_name} /app/\n",
        files={f"environment/{input_name}": "apple\nfig\npear\n", "environment/notes.md": "keep me\n",
               "tests/check.py": COUNT_CHECK},
        instruction=f"Write the first line of /app/{input_name} and its line count, as `FIRST COUNT`, to "
        "/app/summary.txt.\n",
        solve_sh=f'#!/bin/bash\nset -e\necho "$(head -n1 /app/{input_name}) $(wc -l < /app/{input_name})" '
        "> /app/summary.txt\n",
        test_sh=COUNT_TEST,
    )  # fmt: skip


class Solve:
    """Runs some of a composed task's part solutions (and any extra shell), as an agent would."""

    def __init__(self, name: str, parts: list[str], extra: str = ""):
        self.name, self.parts, self.extra = name, parts, extra

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        sandbox.put("/solution", task.solution_dir)
        script = self.extra + "".join(f"bash /solution/{p}/solve.sh\n" for p in self.parts)
        return sandbox.exec(script, timeout=60)


def composed(root: Path, config: ComposeConfig | None = None, b: Path | None = None) -> HardenRecord:
    with Pool.open(root) as pool:
        run = pool.ledger.start_run(RunKind.HARDEN)
        return compose(pool, sort_task(root), b or count_task(root), root / ".qaflow" / "hardened", run_id=run.run_id,
                       config=config or ComposeConfig(backend="bwrap"))  # fmt: skip


def test_composed_task_needs_both_parts(tmp_path: Path) -> None:
    require_backend("bwrap")
    rec = composed(tmp_path)
    task = Task.load(rec.path)
    folder = Path(rec.path)
    assert task.name == "test/sort-lines+count-lines"
    assert all(folder in p.resolve().parents for p in _walk_files(folder))
    assert rec.detail["links"] == [{"source": "/app/sorted.txt", "target": "/app/sorted.txt"}]
    # part 2's input is withheld from the image; its other file is kept, under its own build context
    dockerfile = (folder / "environment" / "Dockerfile").read_text()
    assert "COPY qaflow_part2/notes.md /app/" in dockerfile and "sorted.txt" not in dockerfile
    assert not (folder / "environment" / "qaflow_part2" / "sorted.txt").exists()
    assert (folder / "tests" / "part2" / "test.sh").read_text().count("/tests/part2/check.py") == 1
    assert task.config.agent.timeout_sec == 60.0 and task.config.verifier.timeout_sec == 60.0

    def reward(agent: object) -> float | None:
        return run_trial(task, agent, backend="bwrap").reward  # type: ignore[arg-type]

    assert reward(OracleAgent()) == 1.0
    assert reward(NopAgent()) == 0.0
    assert reward(Solve("part1-only", ["part1"])) == 0.0
    assert reward(Solve("part2-only", ["part2"])) == 0.0
    # part 2 alone cannot start: its input is not in the image
    probe = run_trial(task, Solve("look", [], "test -e /app/sorted.txt\n"), backend="bwrap")
    assert probe.agent_exec is not None and probe.agent_exec.exit_code == 1
    assert reward(Solve("both", ["part1", "part2"])) == 1.0


def test_the_link_is_a_depends_on_edge_between_the_parts_artifacts(tmp_path: Path) -> None:
    require_backend("bwrap")
    rec = composed(tmp_path)
    graph = RequirementGraph.for_task(Task.load(rec.path))
    assert graph.g.edges["artifact:/app/summary.txt", "artifact:/app/sorted.txt"]["kind"] == EdgeKind.DEPENDS_ON
    assert graph.unverified_requirements() == []
    assert sorted(graph.g.successors("requirement:compose:part2")) == [
        "artifact:/app/summary.txt", "check:compose:part2-verifier",
    ]  # fmt: skip
    assert rec.metrics.n_dependencies == 1 and rec.metrics.n_requirements == 2


def test_a_link_between_different_paths_is_copied_by_the_solution(tmp_path: Path) -> None:
    require_backend("bwrap")
    b = count_task(tmp_path, "count-input", input_name="input.txt")
    rec = composed(tmp_path, b=b)
    assert rec.detail["links"] == [{"source": "/app/sorted.txt", "target": "/app/input.txt"}]
    task = Task.load(rec.path)
    assert "`/app/input.txt`, which part 2 reads, is not provided" in task.instruction
    assert "cp -p /app/sorted.txt /app/input.txt" in (task.solution_dir / "solve.sh").read_text()
    assert run_trial(task, OracleAgent(), backend="bwrap").reward == 1.0
    graph = RequirementGraph.for_task(task)
    assert graph.g.has_edge("artifact:/app/input.txt", "artifact:/app/sorted.txt")


def test_compose_refuses_tasks_that_do_not_chain(tmp_path: Path) -> None:
    require_backend("bwrap")
    config = ComposeConfig(backend="bwrap")
    unrelated = write_task(tmp_path, "unrelated")
    with Pool.open(tmp_path) as pool:
        run_id = pool.ledger.start_run(RunKind.HARDEN).run_id
        a = sort_task(tmp_path)
        with pytest.raises(HardenError, match="part 2 reads nothing part 1 writes"):
            compose(pool, a, unrelated, tmp_path / "out", run_id=run_id, config=config)
        b = count_task(tmp_path)
        bad = ComposeConfig(backend="bwrap", links=[Link.parse("/app/raw.txt=/app/sorted.txt")])
        with pytest.raises(HardenError, match=r"does not write /app/raw\.txt"):
            compose(pool, a, b, tmp_path / "out", run_id=run_id, config=bad)
        clash = write_task(
            tmp_path, "clash", dockerfile="FROM python:3.11-slim\nWORKDIR /app\nCOPY input.txt sorted.txt /app/\n",
            files={"environment/input.txt": "apple\nfig\npear\n", "environment/sorted.txt": "stale\n"},
        )  # fmt: skip
        linked = ComposeConfig(backend="bwrap", links=[Link.parse("/app/sorted.txt=/app/input.txt")])
        with pytest.raises(HardenError, match=r"sorted\.txt is part 2's input and part 1 writes it"):
            compose(pool, a, clash, tmp_path / "out", run_id=run_id, config=linked)
        other = write_task(tmp_path, "other-base", dockerfile="FROM debian:bookworm\nWORKDIR /app\n")
        with pytest.raises(HardenError, match="base images differ"):
            compose(pool, a, other, tmp_path / "out", run_id=run_id, config=config)
    with pytest.raises(ValueError, match="absolute paths"):
        Link.parse("sorted.txt")


def test_cli_compose(tmp_path: Path) -> None:
    require_backend("bwrap")
    a, b = sort_task(tmp_path), count_task(tmp_path)
    args = ["harden", "compose", str(a), str(b), "-b", "bwrap", "--link", "/app/sorted.txt", "--json"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    [version] = json.loads(out.stdout)["versions"]
    assert version["transform"] == "compose" and len(version["parents"]) == 2
    assert version["task"] == "test/sort-lines+count-lines"
