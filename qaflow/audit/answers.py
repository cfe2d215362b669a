"""Answers baked into the image, found by running: the `answer-copy` exploit.

The observe probe records the sha256 of every task-owned file the verifier read that the agent can
read (`Observation.digests`). A file the reference solution wrote (its recorded effect) whose content
equals one of them, where the oracle did not write that file and the instruction never names it, is
the verifier's expected answer shipped in the image (or copied out of it by the reference solution).
The proof is one trial: on the untouched environment the agent only copies each such file onto the
output it equals, then the real verifier runs. Full reward (where the nop gets none) is `leak`.

A file equal to an output but for whitespace (spacing, line ends, a final newline) counts too, where
at least `MIN_LOOSE_BYTES` remain without it: short answers match by chance.

Blind spots: an answer the verifier reads in another form than the output (expected values in a
JSON file, the output a CSV; a count), an answer the verifier never reads (kept in the image for nobody), and
a reference solution that transforms the answer it reads.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from qaflow.audit.effects import Effect
from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.observation import Observation
from qaflow.audit.probe_run import ProbeRun
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode

ANSWER_COPY = "answer-copy"
READ_BY_REFERENCE = "; the reference solution reads it"


def named_in(path: str, instruction: str) -> bool:
    """Whether the instruction names `path`: the path itself, or its file name on its own (not as the
    end of another path, such as the output's). An input it hands the agent is not a leaked answer,
    whatever the verifier does with it."""
    if path in instruction:
        return True
    name = posixpath.basename(path)
    return bool(name) and re.search(rf"(?<![\w./-]){re.escape(name)}(?![\w-])", instruction) is not None


def plan_answer_copy(observation: Observation, effect: Effect | None, instruction: str) -> Exploit | None:
    """The copies that would reproduce the oracle's outputs from files the verifier read, or None: same
    content, or the same but for whitespace (at least `MIN_LOOSE_BYTES` of it)."""
    if effect is None or not effect.ok or not observation.digests:
        return None
    changed = {c.path for c in effect.changes}
    plants: dict[str, Plant] = {}
    for found, wanted, how in (
        (observation.digests, effect.output_digests(), "equals"),
        (observation.loose_digests, effect.output_digests(loose=True), "equals, but for whitespace,"),
    ):
        outputs: dict[str, list[str]] = {}
        for path, digest in wanted.items():
            outputs.setdefault(digest, []).append(path)
        for answer, digest in sorted(found.items()):
            if answer in changed or named_in(answer, instruction):
                continue
            for output in outputs.get(digest, []):
                why = f"the reference solution's {output} {how} {answer}, which the verifier reads"
                if answer in observation.oracle_reads:
                    why += READ_BY_REFERENCE
                plants.setdefault(output, Plant(path=output, content="", copy_from=answer, why=why))
    return Exploit(name=ANSWER_COPY, plants=list(plants.values())) if plants else None


def judge_answer_copy(nop: Sequence[ProbeRun], run: ProbeRun, exploit: Exploit, task: str) -> list[AuditFinding]:
    """`leak` when copying the answers onto the outputs gets full reward and the nop does not."""
    if not run.full or (nop and all(r.full for r in nop)):
        return []
    copies = [{"answer": p.copy_from, "output": p.path} for p in exploit.plants]
    shown = ", ".join(f"{c['answer']} -> {c['output']}" for c in copies)
    copied = [p.copy_from for p in exploit.plants if p.copy_from and p.why.endswith(READ_BY_REFERENCE)]
    reference = (
        f"; the reference solution reads the verifier's expected answer ({', '.join(dict.fromkeys(copied))})"
        if copied
        else ""
    )
    return [
        AuditFinding(
            code=FindingCode.LEAK,
            message=(
                f"the verifier's expected answer ships in the image: copying {shown} on the untouched environment "
                "gets full reward. The agent can read it before it starts and the instruction never names it"
                f"{reference}; move it into tests/ (the verifier's own files) or derive it there"
            ),
            evidence={
                "copies": copies,
                "exploits": [exploit.proof(task, run.brief())],
            },
        )
    ]
