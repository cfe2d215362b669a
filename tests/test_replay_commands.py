"""Which `qaflow run --agent` replays a finding, read from its evidence, over every evidence shape the judges
write; findings of the files alone and of one step of a multi-step task name none."""

from __future__ import annotations

import itertools

import pytest

from qaflow.audit.replay import replay_agent, replay_command, rerun_count
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode

EXPLOIT = {"exploits": [{"exploit": "script-shim", "files": ["/app/grader/check.py"], "plants": []}], "tried": ["x"]}
CASES: list[tuple[FindingCode, dict, str | None]] = [
    (FindingCode.REWARD_TAMPER, EXPLOIT, "exploit:script-shim"),
    (FindingCode.LEAK, {"copies": [], **EXPLOIT}, "exploit:script-shim"),
    (
        FindingCode.WEAK_VERIFIER,
        {"passing_mutants": ["empty-all", "shuffle:app/x.csv"], "mutants_run": 4},
        "mutant:empty-all",
    ),
    (FindingCode.REWARD_TAMPER, {"tamper": {"probe": "tamper", "attempt": 0, "reward": 1.0}}, "tamper"),
    (FindingCode.FALSE_PASS, {"runs": 1, "first": {"probe": "nop", "attempt": 0, "reward": 1.0}}, "nop"),
    (FindingCode.FALSE_REJECTION, {"runs": 1, "first": {"probe": "oracle", "attempt": 0, "reward": 0.0}}, "oracle"),
    (FindingCode.REWARD_TAMPER, {"runs": [{"probe": "nop", "attempt": 0, "reward": None}]}, "nop"),
    (FindingCode.FLAKY, {"probe": "oracle", "pass_rate": 0.4, "rewards": [0.0, 1.0, 1.0, 0.0, 0.0]}, "rerun:4"),
    (FindingCode.FLAKY, {"probe": "nop", "pass_rate": 0.5, "rewards": [0.0, 1.0]}, "nop --reruns 1"),
    (FindingCode.BUILD_FAILED, {"log_tail": "E: oops", "backend": "bwrap"}, "nop"),
    (FindingCode.LINT, {"check": "set_e_before_reward", "file": "tests/test.sh"}, None),
    (FindingCode.LEAK, {"file": "environment/tests/check.py", "hidden_file": "tests/check.py"}, None),
    (FindingCode.INVALID_TASK, {"file": "task.toml", "reason": "malformed TOML"}, None),
]


@pytest.mark.parametrize(("code", "evidence", "agent"), CASES)
def test_the_agent_comes_from_the_evidence(code: FindingCode, evidence: dict, agent: str | None) -> None:
    finding = AuditFinding(code=code, message="m", evidence=evidence)
    assert replay_agent(finding) == agent
    stepped = AuditFinding(code=code, message="m", evidence={**evidence, "step": "one"})
    assert replay_agent(stepped) is None


@pytest.mark.parametrize(
    ("backend", "offline", "network"),
    list(itertools.product(["auto", "docker:runsc"], [False, True], ["task", "none"])),
)
def test_the_command_carries_the_audits_backend_and_network(backend: str, offline: bool, network: str) -> None:
    finding = AuditFinding(code=FindingCode.FALSE_PASS, message="m", evidence={"first": {"probe": "nop"}})
    command = replay_command(finding, "/pools/my pool/t", backend=backend, offline=offline, network=network)
    assert command is not None and command.startswith("qaflow run '/pools/my pool/t' --agent nop")
    assert ("--backend docker:runsc" in command) == (backend != "auto")
    assert ("--offline" in command) == offline and ("--network none" in command) == (network == "none")


def test_rerun_counts() -> None:
    assert rerun_count("rerun:12") == 12 and rerun_count("oracle") is None
    for bad in ("rerun:", "rerun:0", "rerun:x"):
        with pytest.raises(ValueError, match="positive whole number"):
            rerun_count(bad)
