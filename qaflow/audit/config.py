"""How an audit runs (`AuditConfig`, the pipeline's `audit:` section too) and how many repeats catch a
coin-flip verifier."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from qaflow.audit.lint import LintConfig
from qaflow.sandbox.spec import RuntimeNetwork, network_from_env, offline_from_env


def repeats_for(miss_probability: float = 0.05, flip: float = 0.5) -> int:
    """Runs needed so a verifier passing with probability `flip` shows both outcomes with
    probability >= 1 - miss_probability: P(all agree) = flip^n + (1-flip)^n."""
    n = 1
    while flip**n + (1 - flip) ** n > miss_probability:
        n += 1
    return n


DEFAULT_REPEATS = repeats_for()  # 6: a 50% coin-flip verifier is caught with probability 96.9%


class AuditConfig(BaseModel):
    """How `qaflow audit` audits; the pipeline's `audit:` section is this same model."""

    model_config = ConfigDict(extra="forbid")
    backend: str = Field("auto", description="auto, docker or bwrap")
    repeats: int = Field(
        DEFAULT_REPEATS,
        ge=1,
        description="Outcomes of each of nop and oracle that must agree (flakiness): one trial each plus verifier "
        "reruns on its final state, and more trials only where those disagree, fall short or the oracle's outputs "
        "vary (docs/audit.md, 'How many trials'); with exhaustive, trials of each",
    )
    exhaustive: bool = Field(
        False, description="The fixed plan: `repeats` full trials each of nop and oracle whatever the evidence says"
    )
    jobs: int = Field(2, ge=1, description="Trials run concurrently")
    max_mutants: int = Field(12, ge=0, description="Wrong solutions derived from the oracle, per task")
    code_mutants: bool = Field(
        True,
        description="One-change mutants of Python modules the oracle wrote and the verifier imported, judged "
        "against the oracle on the tests' inputs (needs the observe probe)",
    )
    observe: bool = Field(
        True,
        description="Observe the verifier's trust boundary on the oracle's final state and, where it takes "
        "task-owned inputs the agent can write, attack them (the exploit battery)",
    )
    verifier_reruns: int = Field(
        8,
        ge=0,
        description="Observe: plain reruns of the verifier on the oracle's final state (a cheap sign of a "
        "verifier that decides by chance); when they disagree with oracle runs that all agree, 2 x repeats "
        "more oracle trials (at least 8) decide whether it is flaky",
    )
    force: bool = Field(False, description="Redo probes already recorded in the ledger")
    lint: LintConfig = Field(default_factory=LintConfig)
    offline: bool = Field(default_factory=offline_from_env, description="Build without network ($QAFLOW_OFFLINE)")
    network: RuntimeNetwork = Field(
        default_factory=network_from_env, description="Runtime network: task (as declared) or none ($QAFLOW_NETWORK)"
    )


ProgressFn = Callable[[str], None]
