"""The requirement graph of a task: a networkx DiGraph of requirements, artifacts and checks.

Nodes are `requirement:<id>` (what the instruction asks), `artifact:<path or id>` (a file, folder or
state the agent produces; an artifact with a path is keyed by the normalised path, so the same path
declared in task.toml and read from the tests is one node) and `check:<id>` (a verifier assertion;
read from the tests, `tests/check.py` or `tests/test_x.py::test_name`). Edges carry `kind`:

- `produces`: requirement -> artifact (the artifact fulfils the requirement);
- `depends_on`: artifact -> artifact (made from it; the edge points at what comes first);
- `verified_by`: requirement or artifact -> check.

A requirement is verified when a check is reachable from it over `produces` and `verified_by`
edges; a check is an orphan when no requirement reaches it. A check on a path inside a declared
folder artifact (path ending in `/`) also verifies the folder, and a check on a declared folder
verifies the declared artifacts inside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Any

import networkx as nx
from pydantic import BaseModel, Field

from qaflow.requirements.reading import normalise, read_tests, workdir_of
from qaflow.requirements.spec import GraphSpec
from qaflow.task import Task

FORMAT = 1
"""Version of the JSON written by `to_json` (a graph attribute)."""
CYCLE_LIMIT = 50


class NodeKind(StrEnum):
    REQUIREMENT = "requirement"
    ARTIFACT = "artifact"
    CHECK = "check"


class EdgeKind(StrEnum):
    PRODUCES = "produces"
    DEPENDS_ON = "depends_on"
    VERIFIED_BY = "verified_by"


_ENDS: dict[EdgeKind, tuple[set[NodeKind], set[NodeKind]]] = {
    EdgeKind.PRODUCES: ({NodeKind.REQUIREMENT}, {NodeKind.ARTIFACT}),
    EdgeKind.DEPENDS_ON: ({NodeKind.ARTIFACT}, {NodeKind.ARTIFACT}),
    EdgeKind.VERIFIED_BY: ({NodeKind.REQUIREMENT, NodeKind.ARTIFACT}, {NodeKind.CHECK}),
}
_REACH = frozenset({EdgeKind.PRODUCES, EdgeKind.VERIFIED_BY})


def node_id(kind: NodeKind, key: str) -> str:
    return f"{kind.value}:{key}"


class GraphMetrics(BaseModel):
    """Difficulty and coverage numbers of one graph (recorded per task version)."""

    depth: int = Field(description="Edges on the longest path (cycles collapsed)")
    n_requirements: int
    n_artifacts: int
    n_checks: int
    n_cross_artifact_checks: int = Field(description="Checks that verify two or more artifacts")
    n_dependencies: int = Field(description="depends_on edges between artifacts")
    n_unverified_requirements: int
    n_orphan_checks: int
    n_cycles: int


class RequirementGraph:
    """A requirement graph over `nx.DiGraph` (`self.g`), with its queries, metrics and JSON/PNG output."""

    def __init__(self, graph: nx.DiGraph | None = None):
        self.g: nx.DiGraph = graph if graph is not None else nx.DiGraph()

    # -- building --------------------------------------------------------------------------

    def add(self, kind: NodeKind, key: str, **attrs: Any) -> str:
        """Add (or update) a node; empty attribute values never overwrite set ones. Returns its id."""
        nid = node_id(kind, key)
        current = self.g.nodes[nid] if nid in self.g else {"kind": kind.value, "key": key}
        current.update({k: v for k, v in attrs.items() if v not in (None, "", [], {})})
        self.g.add_node(nid, **current)
        return nid

    def link(self, src: str, dst: str, kind: EdgeKind, **attrs: Any) -> None:
        """Add an edge between existing nodes.

        Raises:
            ValueError: an end is missing or of a kind this edge kind does not join.
        """
        for end in (src, dst):
            if end not in self.g:
                raise ValueError(f"no node {end!r}")
        sources, targets = _ENDS[kind]
        if self.kind(src) not in sources or self.kind(dst) not in targets:
            raise ValueError(f"a {kind.value} edge cannot join {self.kind(src).value} -> {self.kind(dst).value}")
        self.g.add_edge(src, dst, kind=kind.value, **attrs)

    def kind(self, node: str) -> NodeKind:
        return NodeKind(self.g.nodes[node]["kind"])

    def add_artifact(self, key: str, *, path: str | None = None, source: str, **attrs: Any) -> str:
        folder = bool(path and path.endswith("/") and path != "/")
        key = normalise(path) if path else key
        return self.add(NodeKind.ARTIFACT, key, path=normalise(path) if path else None, folder=folder or None,
                        source=source, **attrs)  # fmt: skip

    @classmethod
    def from_spec(cls, spec: GraphSpec, *, source: str = "metadata") -> RequirementGraph:
        """The graph of a declared spec (task.toml `[metadata.qaflow]`, or a model's proposal)."""
        graph = cls()
        ids: dict[str, str] = {}
        for a in spec.artifacts:
            ids[a.id] = graph.add_artifact(a.id, path=a.path, source=source, name=a.id, description=a.description)
        for r in spec.requirements:
            ids[r.id] = graph.add(NodeKind.REQUIREMENT, r.id, text=r.text, source=source)
        for c in spec.checks:
            ids[c.id] = graph.add(NodeKind.CHECK, c.id, file=c.file, description=c.description, source=source)
        for a in spec.artifacts:
            for dep in a.depends_on:
                graph.link(ids[a.id], ids[dep], EdgeKind.DEPENDS_ON)
        for r in spec.requirements:
            for art in r.produces:
                graph.link(ids[r.id], ids[art], EdgeKind.PRODUCES)
            for check in r.verified_by:
                graph.link(ids[r.id], ids[check], EdgeKind.VERIFIED_BY)
        for c in spec.checks:
            for target in c.verifies:
                graph.link(ids[target], ids[c.id], EdgeKind.VERIFIED_BY)
        graph._link_folders()
        return graph

    @classmethod
    def from_tests(cls, task: Task) -> RequirementGraph:
        """Checks and the state paths they name, read statically from tests/ (see `qaflow.requirements.reading`)."""
        graph = cls()
        graph.g.graph["workdir"] = normalise(workdir_of(task))
        for check in read_tests(task):
            cid = graph.add(NodeKind.CHECK, check.key, file=check.file, source="tests")
            for path in sorted(check.paths):
                graph.link(graph.add_artifact(path, path=path, source="tests"), cid, EdgeKind.VERIFIED_BY)
        return graph

    @classmethod
    def for_task(cls, task: Task, spec: GraphSpec | None = None) -> RequirementGraph:
        """The declared graph (`spec`, default the task's `[metadata.qaflow]`) merged with the tests' reading.

        Raises:
            GraphSpecError: the declared section is malformed.
        """
        declared = cls.from_spec(spec if spec is not None else GraphSpec.from_metadata(task.config.metadata))
        graph = cls.from_tests(task).merge(declared)
        graph.g.graph.update({"task": task.name, "version": task.version})
        return graph

    def merge(self, other: RequirementGraph) -> RequirementGraph:
        """A new graph holding both; `other`'s attributes win. A check of `other` naming a `file` replaces the
        checks this graph read from that file (a declared check is more precise than a static reading)."""
        claimed = {d["file"] for _, d in other.g.nodes(data=True) if d.get("kind") == "check" and d.get("file")}
        mine = self.g.copy()
        mine.remove_nodes_from(
            [n for n, d in self.g.nodes(data=True) if d.get("source") == "tests" and d.get("file") in claimed]
        )
        merged = RequirementGraph(nx.compose(mine, other.g))
        merged.g.graph = {**self.g.graph, **other.g.graph}
        merged._drop_isolated_test_artifacts()
        merged._link_folders()
        return merged

    def _drop_isolated_test_artifacts(self) -> None:
        self.g.remove_nodes_from(
            [n for n, d in self.g.nodes(data=True) if d.get("source") == "tests" and self.g.degree(n) == 0]
        )

    def _link_folders(self) -> None:
        """Declared folders (path ending in '/') are verified by the checks of the artifacts inside them, and
        verify the declared artifacts inside them; a path the tests read that holds declared artifacts (e.g. a
        listing of `/app/photos`) verifies those too. The workdir itself is never taken for such a folder."""
        paths = {n: d["path"] for n, d in self.g.nodes(data=True) if d.get("kind") == "artifact" and d.get("path")}
        workdir = self.g.graph.get("workdir")
        for folder, prefix in paths.items():
            flagged = bool(self.g.nodes[folder].get("folder"))
            if prefix == workdir or not (flagged or self.g.nodes[folder].get("source") == "tests"):
                continue
            for node in [n for n, p in paths.items() if n != folder and p.startswith(prefix.rstrip("/") + "/")]:
                if flagged:
                    for check in self.checks_of(node):
                        if not self.g.has_edge(folder, check):
                            self.link(folder, check, EdgeKind.VERIFIED_BY, via="folder")
                if self.g.nodes[node].get("source") != "tests":
                    for check in self.checks_of(folder):
                        if not self.g.has_edge(node, check):
                            self.link(node, check, EdgeKind.VERIFIED_BY, via="folder")

    # -- queries ----------------------------------------------------------------------------

    def nodes_of(self, kind: NodeKind) -> list[str]:
        return sorted(n for n, d in self.g.nodes(data=True) if d.get("kind") == kind.value)

    def nodes_of_kind_keys(self, kind: str) -> list[str]:
        """The keys (ids without the kind prefix) of the nodes of one kind, sorted."""
        return sorted(d["key"] for _, d in self.g.nodes(data=True) if d.get("kind") == kind)

    def checks_of(self, node: str) -> list[str]:
        return sorted(t for _, t, d in self.g.out_edges(node, data=True) if d.get("kind") == EdgeKind.VERIFIED_BY.value)

    def _reach_view(self) -> nx.DiGraph:
        return nx.subgraph_view(self.g, filter_edge=lambda u, v: self.g.edges[u, v].get("kind") in _REACH)

    def unverified_requirements(self) -> list[str]:
        """Requirements from which no check can be reached (declared scope the verifier does not cover)."""
        view = self._reach_view()
        return [
            r for r in self.nodes_of(NodeKind.REQUIREMENT)
            if not any(self.kind(n) is NodeKind.CHECK for n in nx.descendants(view, r))
        ]  # fmt: skip

    def orphan_checks(self) -> list[str]:
        """Checks that no requirement reaches (they verify something the declared requirements do not ask)."""
        view = self._reach_view()
        return [
            c for c in self.nodes_of(NodeKind.CHECK)
            if not any(self.kind(n) is NodeKind.REQUIREMENT for n in nx.ancestors(view, c))
        ]  # fmt: skip

    def cycles(self, limit: int = CYCLE_LIMIT) -> list[list[str]]:
        """Up to `limit` simple cycles (an artifact that depends on itself, directly or not)."""
        found = []
        for cycle in nx.simple_cycles(self.g):
            found.append(cycle)
            if len(found) >= limit:
                break
        return found

    def verified_artifacts(self, check: str) -> list[str]:
        return sorted(u for u, _, d in self.g.in_edges(check, data=True) if self.kind(u) is NodeKind.ARTIFACT)

    def cross_artifact_checks(self) -> list[str]:
        """Checks that verify two or more artifacts: they tie outputs to each other."""
        return [c for c in self.nodes_of(NodeKind.CHECK) if len(self.verified_artifacts(c)) >= 2]

    def depth(self) -> int:
        """Edges on the longest path (on the condensation when there are cycles)."""
        if self.g.number_of_nodes() == 0:
            return 0
        dag = self.g if nx.is_directed_acyclic_graph(self.g) else nx.condensation(self.g)
        return int(nx.dag_longest_path_length(dag))

    def metrics(self) -> GraphMetrics:
        return GraphMetrics(
            depth=self.depth(),
            n_requirements=len(self.nodes_of(NodeKind.REQUIREMENT)),
            n_artifacts=len(self.nodes_of(NodeKind.ARTIFACT)),
            n_checks=len(self.nodes_of(NodeKind.CHECK)),
            n_cross_artifact_checks=len(self.cross_artifact_checks()),
            n_dependencies=sum(1 for *_, d in self.g.edges(data=True) if d.get("kind") == EdgeKind.DEPENDS_ON.value),
            n_unverified_requirements=len(self.unverified_requirements()),
            n_orphan_checks=len(self.orphan_checks()),
            n_cycles=len(self.cycles()),
        )

    def summary(self) -> dict[str, Any]:
        """Metrics and query answers, for people and `--json`."""
        return {
            "metrics": self.metrics().model_dump(),
            "unverified_requirements": [self.describe(r) for r in self.unverified_requirements()],
            "orphan_checks": self.orphan_checks(),
            "cross_artifact_checks": self.cross_artifact_checks(),
            "cycles": self.cycles(),
        }

    def describe(self, node: str) -> dict[str, Any]:
        data = dict(self.g.nodes[node])
        data["id"] = node
        if self.kind(node) is NodeKind.REQUIREMENT:
            data["produces"] = sorted(
                t for _, t, d in self.g.out_edges(node, data=True) if d.get("kind") == EdgeKind.PRODUCES.value
            )
        return data

    # -- JSON and pictures -----------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Node-link data (`nx.node_link_data(..., edges="edges")`) with `format` in the graph attributes."""
        self.g.graph["format"] = FORMAT
        return nx.node_link_data(self.g, edges="edges")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RequirementGraph:
        graph = nx.node_link_graph(data, directed=True, multigraph=False, edges="edges")
        return cls(nx.DiGraph(graph))

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: Path) -> RequirementGraph:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))

    def draw_png(self, path: Path, *, title: str | None = None) -> Path:
        from qaflow.requirements.draw import draw_png

        return draw_png(self.g, set(self.unverified_requirements()), path, title=title or self.g.graph.get("task"))


def labels(nodes: Iterable[str]) -> list[str]:
    """Node ids without their kind prefix, for people."""
    return [n.split(":", 1)[1] if ":" in n else n for n in nodes]
