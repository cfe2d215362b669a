"""`ProbeRun`, the ledger payload of a probe trial: typed fields that round-trip through JSON, and results
recorded before they were typed (carried in `extra`) read into the same fields."""

from __future__ import annotations

import json

from qaflow.audit.observation import Access, Observation
from qaflow.audit.probe_run import ProbeRun, recorded_network
from qaflow.trial.effects import ChangeKind, Effect, FileChange

EFFECT = Effect(changes=[FileChange(path="/app/out.bin", kind=ChangeKind.CREATED, content=b"\xff\x00 answer")])
OBSERVATION = Observation(
    observed=True,
    reruns=[True, False],
    output_digests={"/app/out.bin": "ab" * 32},
    accesses=[Access(path="/tests/check.py", how=["run"], exists=True, writable=False, owner="task")],
)


def _typed() -> ProbeRun:
    step = ProbeRun(probe="b/oracle", step="b", aborted="min_reward", setup_output="set up", reward=0.5)
    return ProbeRun(
        probe="oracle",
        reward=1.0,
        full=True,
        network="none",
        effect=EFFECT,
        effects={"b": EFFECT},
        observation=OBSERVATION,
        description="emptied /app/out.bin",
        steps=[step],
        timings={"agent": 0.25, "verifier": 0.5},
    )


def test_typed_fields_round_trip_through_the_ledgers_json():
    run = _typed()
    again = ProbeRun.model_validate(json.loads(json.dumps(run.model_dump(mode="json"))))
    assert again == run
    assert again.effect is not None and again.effect.changes[0].content == b"\xff\x00 answer"
    assert again.observation is not None and again.observation.reruns == [True, False]
    assert again.steps[0].aborted == "min_reward" and again.extra == {}


def test_a_result_recorded_with_extra_reads_into_the_typed_fields():
    typed = _typed().model_dump(mode="json")
    moved = ("network", "effect", "effects", "observation", "description", "steps")
    old = {k: v for k, v in typed.items() if k not in moved}
    old["extra"] = {k: typed[k] for k in moved} | {"from_a_newer_qaflow": [1, 2]}
    old["steps"] = []
    del old["extra"]["steps"]
    step = {k: v for k, v in typed["steps"][0].items() if k not in ("step", "aborted", "setup_output")}
    old["extra"]["steps"] = [step | {"extra": {"step": "b", "aborted": "min_reward", "setup_output": "set up"}}]
    del old["steps"]
    assert recorded_network(old) == recorded_network(typed) == "none"
    assert recorded_network({"extra": {}}) is None and recorded_network({}) is None
    read = ProbeRun.model_validate(old)
    assert read.model_copy(update={"extra": {}}) == _typed()
    assert read.extra == {"from_a_newer_qaflow": [1, 2]}  # kept as read
