"""Requirement coverage (part of the lint probe): declared requirements that no verifier check reaches.

The graph is the task's `[metadata.qaflow]` requirements, artifacts and checks merged with a static
reading of its tests (`qaflow.requirements.graph`). A task that declares no requirement is not judged
(every control of tasks_repo declares none). A malformed declaration is a `lint` warning.
"""

from __future__ import annotations

from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode, Severity
from qaflow.requirements.graph import EdgeKind, RequirementGraph
from qaflow.requirements.spec import GraphSpec, GraphSpecError
from qaflow.task import Task


def coverage_findings(task: Task) -> list[AuditFinding]:
    try:
        spec = GraphSpec.from_metadata(task.config.metadata)
    except GraphSpecError as e:
        return [
            AuditFinding(
                code=FindingCode.LINT,
                severity=Severity.WARNING,
                message=f"task.toml: {e}; the declared requirements are not checked for coverage",
                evidence={"file": "task.toml", "reason": str(e)},
            )
        ]
    if not spec.requirements:
        return []
    graph = RequirementGraph.for_task(task, spec)
    findings = []
    for node in graph.unverified_requirements():
        data = graph.g.nodes[node]
        produces = sorted(
            graph.g.nodes[t].get("path") or graph.g.nodes[t]["key"]
            for _, t, d in graph.g.out_edges(node, data=True)
            if d.get("kind") == EdgeKind.PRODUCES.value
        )
        what = f" ({data['text']})" if data.get("text") else ""
        made = f"; it produces {', '.join(produces)}" if produces else ""
        findings.append(
            AuditFinding(
                code=FindingCode.UNVERIFIED_REQUIREMENT,
                message=f"requirement {data['key']!r}{what} has no check{made}: no test in tests/ reads what it "
                "produces and no declared check verifies it; add a check, or declare the one that covers it",
                evidence={
                    "file": "task.toml",
                    "requirement": data["key"],
                    "text": data.get("text", ""),
                    "produces": produces,
                    "checks": graph.nodes_of_kind_keys("check"),
                },
            )
        )
    return findings
