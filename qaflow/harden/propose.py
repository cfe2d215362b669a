"""A requirement graph proposed by a model, stored beside the task for a person to review.

The proposal is a `GraphSpec` (the `[metadata.qaflow]` schema), its ids prefixed `llm:` so it never
clashes with the declared graph. It is saved as `.qaflow/requirements.proposed.json` in the task
folder (outside the version hash) and never merged into task.toml by itself: a person copies what
holds into `[metadata.qaflow]`. Its queries (e.g. proposed requirements no test reaches) are
answered on the declared graph, the tests' reading and the proposal together.
"""

from __future__ import annotations

import json
from pathlib import Path

from qaflow.harden.errors import HardenError
from qaflow.harden.prompts import graph_messages
from qaflow.harden.versions import PROPOSED_FILE
from qaflow.llm import LLM
from qaflow.requirements.graph import RequirementGraph
from qaflow.requirements.spec import GraphSpec, GraphSpecError
from qaflow.task import Task

PREFIX = "llm:"


def propose_graph(task: Task, llm: LLM) -> GraphSpec:
    """The model's graph of `task`, ids prefixed `llm:`.

    Raises:
        LLMError: no valid `GraphSpec` from the model.
    """
    return llm.structured(graph_messages(task), GraphSpec).prefixed(PREFIX)


def save_proposal(task: Task, spec: GraphSpec, model: str) -> Path:
    path = task.path / PROPOSED_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"task": task.name, "version": task.version, "model": model, "graph": spec.model_dump(exclude_defaults=True)}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def with_proposal(task: Task, spec: GraphSpec) -> RequirementGraph:
    """The task's graph (declared + tests' reading) with the proposal merged in (its nodes: `source = "llm"`).

    Raises:
        HardenError: the declared graph is malformed.
    """
    try:
        graph = RequirementGraph.for_task(task)
    except GraphSpecError as e:
        raise HardenError(task.path / "task.toml", str(e)) from e
    return graph.merge(RequirementGraph.from_spec(spec, source="llm"))
