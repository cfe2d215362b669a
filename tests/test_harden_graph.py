"""Requirement graphs: the declared section, the tests' static reading, queries, metrics, JSON, PNG, and the
`unverified_requirement` finding of the lint probe. No sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.audit.lint import lint_task
from qaflow.audit.lint.coverage import coverage_findings
from qaflow.cli import app
from qaflow.models.audit import Verdict, verdict_for
from qaflow.models.records import FindingCode, Severity
from qaflow.requirements.graph import EdgeKind, NodeKind, RequirementGraph
from qaflow.requirements.reading import read_tests, workdir_of
from qaflow.requirements.spec import GraphSpec, GraphSpecError
from qaflow.task import Task, tree_hash
from tests.conftest import TASKS_REPO
from tests.taskfactory import write_task

CONTROLS = sorted(n for n, label in json.loads((TASKS_REPO / "labels.json").read_text()).items() if not label["codes"])

DECLARED = """
[[metadata.qaflow.requirements]]
id = "done"
text = "Write done to out.txt"
produces = ["out-file"]

[[metadata.qaflow.requirements]]
id = "summary"
text = "Also write a one-line summary to summary.log"
produces = ["summary-file"]

[[metadata.qaflow.artifacts]]
id = "out-file"
path = "/app/out.txt"

[[metadata.qaflow.artifacts]]
id = "summary-file"
path = "/app/summary.log"
depends_on = ["out-file"]
"""

PYTEST_FILE = """import json
from pathlib import Path

REPORT = Path("/app") / "report.json"
LOG = "/app/logs/run.log"


def test_report_exists():
    assert REPORT.is_file()


def test_log_mentions_report():
    text = Path(LOG).read_text()
    assert "report" in text and json.loads(REPORT.read_text())


class TestPaths:
    def test_tmp_is_not_state(self):
        assert Path("/tmp/scratch").exists() or Path("/tests/data.json").exists()
"""


def test_controls_have_no_unverified_requirement_and_no_coverage_finding() -> None:
    assert len(CONTROLS) == 23
    for name in CONTROLS:
        task = Task.load(TASKS_REPO / name)
        graph = RequirementGraph.for_task(task)
        assert graph.unverified_requirements() == [], name
        assert graph.nodes_of(NodeKind.REQUIREMENT) == [], name
        assert coverage_findings(task) == [], name
        # every control's verifier reads at least one state path
        assert graph.nodes_of(NodeKind.CHECK), name


def test_tests_reading_of_controls_names_their_outputs() -> None:
    expected = {
        "csv-sum": {"/app/answer.txt"},
        "rename-photos": {"/app/photos"},
        "split-by-month": {"/app/months"},
        "log-report": {"/app/report.json"},
        "fix-calc": {"/app/calc.py"},
        "word-frequency": {"/app/top.json"},
    }
    for name, paths in expected.items():
        task = Task.load(TASKS_REPO / name)
        checks = read_tests(task)
        assert [c.key for c in checks] == ["tests/check.py"], name
        assert checks[0].paths == paths, name
        assert workdir_of(task) == "/app"


def test_planted_unverified_requirement_is_found_and_is_an_error(tmp_path: Path) -> None:
    task_dir = write_task(tmp_path, toml_extra=DECLARED)
    task = Task.load(task_dir)
    graph = RequirementGraph.for_task(task)
    assert graph.unverified_requirements() == ["requirement:summary"]
    assert graph.orphan_checks() == []
    assert graph.checks_of("artifact:/app/out.txt") == ["check:tests/test.sh"]
    findings = [f for f in lint_task(task) if f.code is FindingCode.UNVERIFIED_REQUIREMENT]
    assert len(findings) == 1
    finding = findings[0]
    assert finding.severity is Severity.ERROR
    assert finding.evidence["requirement"] == "summary"
    assert finding.evidence["produces"] == ["/app/summary.log"]
    assert "summary" in finding.message and "/app/summary.log" in finding.message
    assert verdict_for(findings) is Verdict.NEEDS_REPAIR


def test_a_check_of_the_planted_path_clears_the_finding(tmp_path: Path) -> None:
    test_sh = (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        'if [ "$(cat /app/out.txt)" = done ] && [ -s /app/summary.log ]; then echo 1; else echo 0; fi'
        " > /logs/verifier/reward.txt\n"
    )
    task = Task.load(write_task(tmp_path, toml_extra=DECLARED, test_sh=test_sh))
    assert RequirementGraph.for_task(task).unverified_requirements() == []
    assert coverage_findings(task) == []


def test_declared_check_covers_a_requirement_directly(tmp_path: Path) -> None:
    extra = DECLARED + '\n[[metadata.qaflow.checks]]\nid = "summary-check"\nverifies = ["summary"]\n'
    task = Task.load(write_task(tmp_path, toml_extra=extra))
    graph = RequirementGraph.for_task(task)
    assert graph.unverified_requirements() == []
    assert graph.checks_of("requirement:summary") == ["check:summary-check"]
    assert graph.checks_of("artifact:/app/summary.log") == []


def test_malformed_declaration_is_a_lint_warning(tmp_path: Path) -> None:
    extra = '\n[[metadata.qaflow.requirements]]\nid = "x"\nproduces = ["nowhere"]\n'
    task = Task.load(write_task(tmp_path, toml_extra=extra))
    with pytest.raises(GraphSpecError, match="'nowhere' is not declared"):
        GraphSpec.from_metadata(task.config.metadata)
    [finding] = coverage_findings(task)
    assert finding.code is FindingCode.LINT and finding.severity is Severity.WARNING
    assert "nowhere" in finding.message


def test_spec_rejects_duplicate_ids_and_wrong_reference_kinds() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        GraphSpec.model_validate({"requirements": [{"id": "a"}], "checks": [{"id": "a"}]})
    with pytest.raises(ValueError, match="is a check"):
        GraphSpec.model_validate({"requirements": [{"id": "r", "produces": ["c"]}], "checks": [{"id": "c"}]})
    with pytest.raises(ValueError, match="no spaces"):
        GraphSpec.model_validate({"artifacts": [{"id": "two words"}]})
    assert GraphSpec.from_metadata({"qaflow": {"label": "control"}}).empty


def test_python_tests_give_one_check_per_test_function(tmp_path: Path) -> None:
    task = Task.load(write_task(tmp_path, files={"tests/test_outputs.py": PYTEST_FILE}))
    checks = {c.key: c.paths for c in read_tests(task)}
    assert checks == {
        "tests/test.sh": {"/app/out.txt"},
        "tests/test_outputs.py::test_report_exists": {"/app/report.json"},
        "tests/test_outputs.py::test_log_mentions_report": {"/app/report.json", "/app/logs/run.log"},
    }
    graph = RequirementGraph.for_task(task)
    assert graph.cross_artifact_checks() == ["check:tests/test_outputs.py::test_log_mentions_report"]
    assert graph.metrics().n_cross_artifact_checks == 1


def test_instruction_paths_outside_the_workdir_are_state(tmp_path: Path) -> None:
    test_sh = "#!/bin/bash\nif grep -q ok /srv/out/status.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt"
    task = Task.load(write_task(tmp_path, test_sh=test_sh, instruction="Write ok to /srv/out/status.txt.\n"))
    assert {c.key: c.paths for c in read_tests(task)} == {"tests/test.sh": {"/srv/out/status.txt"}}


def test_folder_artifacts_join_checks_inside_them(tmp_path: Path) -> None:
    extra = """
[[metadata.qaflow.requirements]]
id = "months"
produces = ["month-files"]

[[metadata.qaflow.artifacts]]
id = "month-files"
path = "/app/months/"

[[metadata.qaflow.requirements]]
id = "photos"
produces = ["photo"]

[[metadata.qaflow.artifacts]]
id = "photo"
path = "/app/photos/a_1.jpg"
"""
    test_sh = "#!/bin/bash\nls /app/photos && cat /app/months/2024-01.csv && echo 1 > /logs/verifier/reward.txt\n"
    task = Task.load(write_task(tmp_path, toml_extra=extra, test_sh=test_sh))
    graph = RequirementGraph.for_task(task)
    assert graph.unverified_requirements() == []
    assert graph.checks_of("artifact:/app/months") == ["check:tests/test.sh"]
    assert graph.checks_of("artifact:/app/photos/a_1.jpg") == ["check:tests/test.sh"]


def test_cycles_depth_and_metrics() -> None:
    spec = GraphSpec.model_validate(
        {
            "requirements": [{"id": "r", "produces": ["c"]}],
            "artifacts": [
                {"id": "a", "path": "/app/a"},
                {"id": "b", "path": "/app/b", "depends_on": ["a"]},
                {"id": "c", "path": "/app/c", "depends_on": ["b"]},
            ],
            "checks": [{"id": "k", "verifies": ["a", "c"]}],
        }
    )
    graph = RequirementGraph.from_spec(spec)
    m = graph.metrics()
    # r -> c -> b -> a -> k
    assert (m.depth, m.n_requirements, m.n_artifacts, m.n_checks) == (4, 1, 3, 1)
    assert (m.n_cross_artifact_checks, m.n_dependencies, m.n_cycles) == (1, 2, 0)
    graph.link("artifact:/app/a", "artifact:/app/c", EdgeKind.DEPENDS_ON)
    assert [set(c) for c in graph.cycles()] == [{"artifact:/app/a", "artifact:/app/b", "artifact:/app/c"}]
    assert graph.metrics().n_cycles == 1
    # the cycle a -> c -> b -> a collapses into one node: r -> {a,b,c} -> k
    assert graph.depth() == 2
    with pytest.raises(ValueError, match="cannot join"):
        graph.link("check:k", "artifact:/app/a", EdgeKind.VERIFIED_BY)


def test_node_link_json_round_trip_and_png(tmp_path: Path) -> None:
    task = Task.load(write_task(tmp_path, toml_extra=DECLARED))
    graph = RequirementGraph.for_task(task)
    path = graph.save(tmp_path / "g.json")
    data = json.loads(path.read_text())
    assert {"nodes", "edges", "directed"} <= set(data) and data["directed"] is True
    assert data["graph"]["format"] == 1 and data["graph"]["task"] == "test/t"
    back = RequirementGraph.load(path)
    assert sorted(back.g.nodes) == sorted(graph.g.nodes)
    assert sorted(back.g.edges(data=True)) == sorted(graph.g.edges(data=True))
    assert back.unverified_requirements() == ["requirement:summary"]
    png = graph.draw_png(tmp_path / "g.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_cli_graph_saves_outside_the_version_and_answers_queries(tmp_path: Path) -> None:
    task_dir = write_task(tmp_path, toml_extra=DECLARED)
    before = tree_hash(task_dir)
    out = CliRunner().invoke(app, ["harden", "graph", str(task_dir), "--json", "--png", str(tmp_path / "g.png")])
    assert out.exit_code == 0, out.output
    answer = json.loads(out.stdout)
    assert [r["key"] for r in answer["unverified_requirements"]] == ["summary"]
    assert answer["metrics"]["n_requirements"] == 2 and answer["metrics"]["n_unverified_requirements"] == 1
    assert (task_dir / ".qaflow" / "requirements.graph.json").is_file() and (tmp_path / "g.png").is_file()
    assert tree_hash(task_dir) == before
    people = CliRunner().invoke(app, ["harden", "graph", str(task_dir), "--no-save"])
    assert people.exit_code == 0 and "unverified requirements: 1" in people.output and "summary" in people.output
