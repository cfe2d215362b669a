"""Expected values the agent can rewrite, found by running: the `expected-rewrite` exploit.

A task whose verifier compares a file the agent works on against expected values it reads from a
file the agent can write is solved by rewriting the expectation instead of the work. The observe
probe says which files the verifier read and which the agent can write; the oracle's recorded effect
says which of the files the verifier read are the work (what the reference solution changed). Each
other agent-writable, task-owned data file the verifier read, that the instruction never names, the
oracle left alone and the reference solution did not read (an input of the work), is a candidate
expectation; the exploit copies onto it, on the untouched environment, the work file as it is there
(the file of the same type the oracle changed and the verifier read). Full reward where the nop gets
none is `reward_tamper`: the agent changed no work, only what the work is compared with.

Work the oracle creates from nothing gives no such copy; data of another form than the work (a count
in a manifest against a CSV the agent must write) is `qaflow.audit.data_forge`'s. Code and configuration
the verifier runs or loads (scripts, modules, pytest configuration) are `script-shim`'s and
`python-plant`'s, not expectations.
"""

from __future__ import annotations

import posixpath

from qaflow.audit.answers import named_in
from qaflow.audit.effects import ChangeKind, Effect
from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.observation import Access, Observation
from qaflow.audit.observe import is_answer_candidate

EXPECTED_REWRITE = "expected-rewrite"
MAX_REWRITES = 4
_CODE_SUFFIXES = (".py", ".pyc", ".pth", ".so", ".sh", ".ini", ".cfg", ".toml")
_LOADED = {"run", "import", "conftest", "sitecustomize", "syspath"}


def _expectation(a: Access, obs: Observation, skip: set[str], instruction: str) -> bool:
    """`skip`: what the oracle changed, and the pytest configuration files."""
    return (
        is_answer_candidate(a)
        and a.writable
        and not (_LOADED & set(a.how))
        and a.path not in skip
        and a.path not in obs.oracle_reads
        and not a.path.endswith(_CODE_SUFFIXES)
        and not named_in(a.path, instruction)
    )


def _read(a: Access | None) -> bool:
    return a is not None and bool({"read", "arg"} & set(a.how))


def candidate_expectations(obs: Observation, effect: Effect, instruction: str) -> list[str]:
    """The agent-writable, task-owned data files the verifier read that could hold its expectations (see the
    module doc), in observation order."""
    skip = {c.path for c in effect.changes} | {p.inifile for p in obs.pytest if p.inifile}
    return [a.path for a in obs.accesses if _expectation(a, obs, skip, instruction)]


def plan_expected_rewrite(obs: Observation, effect: Effect | None, instruction: str) -> Exploit | None:
    """The copies of work files (as the untouched environment has them) onto candidate expectations."""
    if not obs.observed or effect is None or not effect.ok:
        return None
    work = [
        c.path
        for c in effect.changes
        if c.kind is ChangeKind.MODIFIED and c.file_type == "file" and _read(obs.get(c.path))
    ]
    if not work:
        return None
    plants: list[Plant] = []
    for path in candidate_expectations(obs, effect, instruction):
        if len(plants) >= MAX_REWRITES:
            break
        suffix = posixpath.splitext(path)[1]
        alike = [w for w in work if posixpath.splitext(w)[1] == suffix]
        source = alike[0] if alike else work[0] if len(work) == 1 else None
        if source is None:
            continue
        why = f"the verifier reads {path}, which the agent can write: it becomes {source} as the agent found it"
        plants.append(Plant(path=path, content="", copy_from=source, why=why))
    return Exploit(name=EXPECTED_REWRITE, plants=plants) if plants else None
