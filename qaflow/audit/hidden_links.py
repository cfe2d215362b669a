"""A hidden file the instruction names, found usable by running: the `hidden-link` exploit.

An instruction that names a file of the verifier's own folders (`/tests/expected_hours.json`) or of the
reference solution tells the agent where the answer will be when the verifier runs, though the agent never
sees it during its phase. That is a leak only when it can be used: the agent makes each output the
reference solution wrote a symlink to the named file of the same kind (suffix), on the untouched
environment, and the real verifier runs. Full reward (where the nop gets none) is `leak`; a mention
the exploit cannot use stays a lint warning (`qaflow.audit.lint`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from qaflow.audit.effects import Effect
from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.mutants import is_code, is_scratch
from qaflow.audit.probe_run import ProbeRun
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode
from qaflow.task import Task

HIDDEN_LINK = "hidden-link"
_MENTION = re.compile(r"(?<![\w.~$/:-])/(tests|solution)/[\w.\-/]*[\w-]")


def named_hidden_files(task: Task) -> list[str]:
    """Container paths of files in the task's tests/ or solution/ folder that its instruction names."""
    found: list[str] = []
    for m in _MENTION.finditer(task.instruction):
        folder, rel = m.group(1), m.group(0).split("/", 2)[2]
        local = task.path / folder / rel
        if local.is_file() and not local.is_symlink() and m.group(0) not in found:
            found.append(m.group(0))
    return found


def plan_hidden_link(task: Task, effect: Effect | None) -> Exploit | None:
    """Each output the oracle wrote linked to the named hidden data file of its suffix (the one whose name
    holds the output's name where several share it); None when nothing pairs."""
    if effect is None or not effect.ok:
        return None
    named = [h for h in named_hidden_files(task) if not _code_name(h)]
    outputs = [c.path for c in effect.written if c.file_type == "file" and not is_scratch(c.path) and not is_code(c)]
    plants: dict[str, Plant] = {}
    for hidden in named:
        suffix, stem = _suffix(hidden), _stem(hidden)
        same_kind = [o for o in outputs if _suffix(o) == suffix and o not in plants]
        alike = [o for o in same_kind if _stem(o) and f"_{_stem(o)}_" in f"_{stem}_"]
        alike = alike or (same_kind if len(same_kind) == 1 else [])
        for output in alike[:1]:
            why = f"the instruction names {hidden}, which exists when the verifier runs"
            plants[output] = Plant(path=output, content="", link_to=hidden, why=why)
    return Exploit(name=HIDDEN_LINK, plants=list(plants.values())) if plants else None


def judge_hidden_link(nop: Sequence[ProbeRun], run: ProbeRun, exploit: Exploit, task: str) -> list[AuditFinding]:
    """`leak` when the outputs linked to the named hidden files get full reward and the nop does not."""
    if not run.full or (nop and all(r.full for r in nop)):
        return []
    links = [{"output": p.path, "hidden_file": p.link_to} for p in exploit.plants]
    shown = ", ".join(f"{link['output']} -> {link['hidden_file']}" for link in links)
    return [
        AuditFinding(
            code=FindingCode.LEAK,
            message=(
                f"the instruction names the verifier's own file, and linking the output to it gets full reward on "
                f"the untouched environment ({shown}): the agent can hand the verifier its own answer; name the "
                "format, not the file, or check that the output is a regular file"
            ),
            evidence={
                "links": links,
                "exploits": [exploit.proof(task, run.brief())],
            },
        )
    ]


def _suffix(path: str) -> str:
    name = posixpath.basename(path)
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def _stem(path: str) -> str:
    """The file name without its suffix, lower case, with `-`, `.` and spaces as `_` (names compare by words)."""
    return re.sub(r"[-. ]", "_", posixpath.basename(path).rsplit(".", 1)[0].lower())


def _code_name(path: str) -> bool:
    return _suffix(path) in {"py", "sh", "bash", "js", "ts", "rb", "pl", "go", "rs", "c", "cc", "cpp", "java"}
