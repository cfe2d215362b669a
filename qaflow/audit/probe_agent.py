"""`ProbeAgent`: what a probe trial runs, as data that travels to any worker."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from qaflow.agents import NopAgent, OracleAgent
from qaflow.agents.base import Agent
from qaflow.agents.stepwise import StepwiseAgent
from qaflow.audit.exploits import Exploit, ExploitAgent
from qaflow.audit.mutants import Mutant, MutantAgent
from qaflow.audit.tamper import TamperAgent
from qaflow.trial.effects import RecordingAgent


class ProbeAgent(BaseModel):
    """The agent of one probe trial as a small picklable description, rebuilt by `agent()` where the
    trial runs: nop, oracle, tamper (the reward files to plant) or a mutant (its writes); `record`
    wraps it in a `RecordingAgent`, whose effect the trial's `ProbeRun.effect` carries."""

    kind: Literal["nop", "oracle", "tamper", "mutant", "observe", "exploit"]
    record: bool = False
    files: list[str] = Field(default_factory=list, description="tamper: reward files to plant in /logs/verifier")
    extra_paths: list[str] = Field(default_factory=list, description="tamper: files the verifier copies in")
    mutant: Mutant | None = None
    exploit: Exploit | None = Field(None, description="exploit: the plants its agent writes")
    step: str | None = Field(None, description="multi-step: the step probed (oracle before it; ends there)")
    reruns: int = Field(0, ge=0, description="nop, oracle, observe: plain verifier reruns on the trial's final state")
    verifier_timeout_sec: float | None = Field(
        None, gt=0, description="A shorter verifier timeout than the task's (code mutants: a changed loop can spin)"
    )
    outputs: dict[str, str] = Field(
        default_factory=dict, description="observe: the oracle's output files (path -> sha256), sought in .git history"
    )

    @classmethod
    def nop(cls, *, step: str | None = None, reruns: int = 0) -> ProbeAgent:
        return cls(kind="nop", step=step, reruns=reruns)

    @classmethod
    def oracle(cls, *, record: bool = False, reruns: int = 0) -> ProbeAgent:
        return cls(kind="oracle", record=record, reruns=reruns)

    @classmethod
    def tamper(cls, files: list[str], extra_paths: list[str], *, step: str | None = None) -> ProbeAgent:
        return cls(kind="tamper", files=files, extra_paths=extra_paths, step=step)

    @classmethod
    def observe(cls, *, reruns: int = 0, outputs: dict[str, str] | None = None, step: str | None = None) -> ProbeAgent:
        """The oracle, then the verifier under observation, then `reruns` plain verifier runs on the same
        state (`qaflow.audit.observe`; run by `trial_item`); at `step`, the oracle's steps up to it."""
        return cls(kind="observe", reruns=reruns, outputs=outputs or {}, step=step)

    @classmethod
    def of_exploit(cls, exploit: Exploit, *, step: str | None = None) -> ProbeAgent:
        return cls(kind="exploit", exploit=exploit, step=step)

    @classmethod
    def of_mutant(
        cls, mutant: Mutant, verifier_timeout_sec: float | None = None, *, step: str | None = None
    ) -> ProbeAgent:
        return cls(kind="mutant", mutant=mutant, step=step, verifier_timeout_sec=verifier_timeout_sec)

    def agent(self) -> Agent:
        inner: Agent
        if self.kind == "nop":
            inner = NopAgent()
        elif self.kind == "oracle":
            inner = OracleAgent()
        elif self.kind == "tamper":
            inner = TamperAgent(self.files, self.extra_paths)
        elif self.kind == "observe":
            inner = OracleAgent()
        elif self.kind == "exploit":
            if self.exploit is None:
                raise ValueError("an exploit probe needs its exploit")
            inner = ExploitAgent(self.exploit)
        else:
            if self.mutant is None:
                raise ValueError("a mutant probe needs its mutant")
            inner = MutantAgent(self.mutant)
        built = RecordingAgent(inner) if self.record else inner
        return built if self.step is None else StepwiseAgent(self.step, built)
