"""Trusted data the agent can forge together with the work, found by running: `data-zero` and `data-empty`.

`expected-rewrite` copies the work onto an expectation, which only works when the two have the same form.
A verifier can also trust agent-writable data of another form: a count in a manifest checked against
the rows of a CSV the agent must write, a baseline total in a JSON file checked against a computed
sum, a threshold in a config. The candidates are the same as `expected-rewrite`'s (task-owned data
files the verifier read and the agent can write, that the instruction never names, the reference
solution neither changed nor read, and that are no code or configuration the verifier loads); the
work is every file the oracle created or changed that the verifier read.

Two forgeries, each on the untouched environment, each with a control that makes the same change to
the work only:

- `data-zero`: every number in the work (as the oracle left it) and in each candidate (as the agent
  finds it) becomes 0, so a verifier that compares a value computed from one with a value read from the
  other pays (`data-zero-control`: the work's numbers zeroed, the data left alone);
- `data-empty`: the work is empty and every number in each candidate becomes 0, so a verifier that
  checks the work's size against a count it reads pays (`data-empty-control`: the work emptied alone).

Full reward for a forgery whose control fails (and where the nop fails) is `reward_tamper`: the reward
follows the data the agent changed, not the work. A verifier whose expectations live under `/tests`, or
that reads only what the instruction names, gets no trial.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from qaflow.audit.effects import Effect
from qaflow.audit.expected import candidate_expectations
from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.observation import Observation
from qaflow.audit.probe_run import ProbeRun
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode

DATA_ZERO = "data-zero"
DATA_EMPTY = "data-empty"
CONTROL = "-control"
MAX_WORK = 4
MAX_WORK_BYTES = 256 * 1024
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
ZERO_SED = r"s/-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/0/g"
"""The same rewrite as `NUMBER`, in the sandbox (POSIX sed -E), for data the host never read."""


def zero_numbers(data: bytes) -> bytes:
    return NUMBER.sub(b"0", data)


def _zeroed_in_place(path: str, why: str) -> Plant:
    q = shlex.quote(path)
    command = f't=$(mktemp) && sed -E {shlex.quote(ZERO_SED)} {q} > "$t" && cat "$t" > {q}; rm -f "$t"'
    return Plant(path=path, content="", why=why, command=command)


def plan_data_forge(obs: Observation, effect: Effect | None, instruction: str) -> list[tuple[Exploit, Exploit]]:
    """(forgery, control) pairs; none where the verifier read no candidate data or no work file."""
    if not obs.observed or effect is None or not effect.ok:
        return []
    data = candidate_expectations(obs, effect, instruction)
    work = [
        c
        for c in effect.changes
        if c.file_type == "file"
        and c.content is not None
        and len(c.content) <= MAX_WORK_BYTES
        and (a := obs.get(c.path)) is not None
        and {"read", "arg"} & set(a.how)
    ][:MAX_WORK]
    if not data or not work:
        return []
    try:
        zeroed = {c.path: zero_numbers(c.content or b"").decode("utf-8") for c in work}
    except UnicodeDecodeError:
        return []
    why = "the verifier reads {}, which the agent can write: its numbers become 0"
    forged = [_zeroed_in_place(p, why.format(p)) for p in data]
    zero_work = [Plant(path=p, content=text, why="the work with its numbers 0") for p, text in zeroed.items()]
    empty_work = [Plant(path=c.path, content="", why="the work, empty") for c in work]
    variants = [(DATA_EMPTY, empty_work)]
    if any(zeroed[c.path].encode() != c.content for c in work):
        variants.insert(0, (DATA_ZERO, zero_work))
    return [(Exploit(name=name, plants=w + forged), Exploit(name=name + CONTROL, plants=w)) for name, w in variants]


def judge_data_forge(
    nop: Sequence[ProbeRun], results: Sequence[tuple[Exploit, ProbeRun, ProbeRun]], task: str
) -> list[AuditFinding]:
    """One `reward_tamper` for the forgeries that got full reward where their controls did not."""
    if nop and all(r.full for r in nop):
        return []
    won = [(e, run, control) for e, run, control in results if run.full and not control.full]
    if not won:
        return []
    first = won[0][0]
    data = [p.path for p in first.plants if p.command]
    return [
        AuditFinding(
            code=FindingCode.REWARD_TAMPER,
            message=(
                f"the reward follows data the agent can change: {' and '.join(e.name for e, _, _ in won)} got full "
                f"reward on the untouched environment by rewriting {', '.join(data[:4])} with the work, where the "
                "same work alone failed; keep what the verifier compares with under tests/ (its own files) or "
                "derive it there"
            ),
            evidence={
                "exploits": [
                    {
                        "exploit": e.name,
                        "files": [p.path for p in e.plants],
                        "data": [p.path for p in e.plants if p.command],
                        "plants": e.model_dump(mode="json")["plants"],
                        "reproduce": e.reproduction(task),
                        "run": run.brief(),
                        "control": control.brief(),
                    }
                    for e, run, control in won
                ],
            },
        )
    ]
