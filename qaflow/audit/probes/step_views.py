"""One step's part of a multi-step task's runs, named as the single-step probe it stands for."""

from __future__ import annotations

from collections.abc import Sequence

from qaflow.audit.probe_run import ProbeRun
from qaflow.models.probe_key import unstepped
from qaflow.task_steps import StepTask


def step_views(runs: Sequence[ProbeRun], name: str, *, first: bool = False) -> list[ProbeRun]:
    """Step `name`'s part of each run that reached it, named as a single-step probe ("nop", "mutant:...").

    A run in which no step ran at all (the sandbox never started) counts as the first step's."""
    out = []
    for run in runs:
        if not run.steps:
            if first:
                out.append(run.model_copy(update={"probe": unstepped(run.probe)}))
            continue
        view = next((p for p in run.steps if p.step == name), None)
        if view is not None:
            out.append(view.model_copy(update={"probe": unstepped(view.probe)}))
    return out


def step_view(run: ProbeRun, step: StepTask) -> ProbeRun:
    """`run`'s part at `step` named as a single-step probe, with the run's observation; the run itself,
    renamed, when it never reached the step (it counts as a run that did not pass there)."""
    name = step.step_name
    views = step_views([run], name, first=step.index == 0)
    view = views[0] if views else run.model_copy(update={"probe": unstepped(run.probe)})
    return view.model_copy(update={"observation": run.observation})
