"""Answers left in `.git` history inside the image: found by comparing, not by guessing.

Before the agent starts, the observe probe copies every `.git` folder the agent user can read under
the task's folders out of the sandbox (at most `MAX_GIT_BYTES`) and reads it with the host's git: a
blob anywhere in it (any commit, the reflog, dangling objects) whose content equals a file the
reference solution wrote (sha256, from the oracle's recorded effect) is the answer in the history:
the agent can `git show`/`git checkout` it (or inflate the object with zlib). Not counted: a blob
that is a file of the current commit at another path (a template the instruction hands over, not
an answer), a short content (< `MIN_ANSWER_BYTES`) unless history had it at the output's own path,
and any task whose instruction mentions git (the history is then the task's input).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from pydantic import BaseModel

from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode
from qaflow.sandbox.base import SHELL, SYSTEM_TOOLS, Sandbox

MAX_GIT_BYTES = 200 << 20
MAX_BLOB_BYTES = 1 << 20
MAX_BLOBS = 50_000
MIN_ANSWER_BYTES = 64
GIT_TIMEOUT_S = 120


class GitLeak(BaseModel):
    output: str
    """The file the reference solution wrote."""
    git_dir: str
    blob: str
    history_path: str | None = None
    """A path the blob had in the history (None for a blob no commit or reflog entry reaches)."""
    at_head: bool = False
    """The blob is the current commit's version of the output (the image's working tree differs)."""


def mentions_git(instruction: str) -> bool:
    return re.search(r"\bgit\b", instruction, re.IGNORECASE) is not None


_FIND = r"""
for r in "$@"; do [ -d "$r" ] && find "$r" -maxdepth 3 -name .git -type d -prune 2>/dev/null; done |
sort -u | head -n 5 | while IFS= read -r g; do
  [ -r "$g" ] && [ -x "$g" ] && printf '%s\t%s\n' "$(du -sk "$g" 2>/dev/null | cut -f1)" "$g"
done
"""


def git_leaks(box: Sandbox, roots: list[str], outputs: dict[str, str], *, user: str | int | None) -> list[GitLeak]:
    """The outputs (path -> sha256) whose content a readable `.git` under `roots` in `box` holds."""
    if not outputs or shutil.which("git") is None:
        return []
    ex = box.exec([SHELL, "-c", SYSTEM_TOOLS + _FIND, "sh", *roots], timeout=60, user=user)
    leaks: list[GitLeak] = []
    for line in ex.stdout.splitlines():
        size, _, git_dir = line.partition("\t")
        if not git_dir.startswith("/") or not size.isdigit() or int(size) * 1024 > MAX_GIT_BYTES:
            continue
        with tempfile.TemporaryDirectory(prefix="qaflow-git-") as tmp:
            copy = Path(tmp) / "git"
            box.get_dir(git_dir, copy)
            leaks += answers_in(copy, outputs, worktree=posixpath.dirname(git_dir), shown=git_dir)
    return leaks


def _git(git_dir: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(
        ["git", f"--git-dir={git_dir}", "-c", "safe.directory=*", *args],
        input=stdin,
        capture_output=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    return done.stdout if done.returncode == 0 else b""


def answers_in(git_dir: Path, outputs: dict[str, str], *, worktree: str, shown: str) -> list[GitLeak]:
    """`GitLeak`s of the outputs (container path -> sha256) whose content is a blob of the repository at
    `git_dir` (a host copy of the container's `shown`, the repository of the container folder `worktree`)."""
    listing = _git(
        git_dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(objectsize)"
    )
    blobs = []
    for row in listing.decode(errors="replace").splitlines():
        parts = row.split()
        if len(parts) == 3 and parts[1] == "blob" and 0 < int(parts[2]) <= MAX_BLOB_BYTES:
            blobs.append((parts[0], int(parts[2])))
    blobs = blobs[:MAX_BLOBS]
    if not blobs:
        return []
    contents = _git(git_dir, "cat-file", "--batch", stdin="\n".join(oid for oid, _ in blobs).encode() + b"\n")
    by_digest: dict[str, tuple[str, int]] = {}
    at = 0
    for oid, size in blobs:
        header_end = contents.find(b"\n", at)
        if header_end < 0:
            break
        body = contents[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
        by_digest.setdefault(hashlib.sha256(body).hexdigest(), (oid, size))
    history: dict[str, str] = {}
    for row in _git(git_dir, "rev-list", "--all", "--reflog", "--objects").decode(errors="replace").splitlines():
        oid, _, path = row.partition(" ")
        if path:
            history.setdefault(oid, path)
    head: dict[str, set[str]] = {}
    for row in _git(git_dir, "ls-tree", "-r", "HEAD").decode(errors="replace").splitlines():
        meta, _, path = row.partition("\t")
        fields = meta.split()
        if len(fields) == 3:
            head.setdefault(fields[2], set()).add(path)
    leaks = []
    for output, digest in sorted(outputs.items()):
        if digest not in by_digest:
            continue
        oid, size = by_digest[digest]
        rel = posixpath.relpath(output, worktree) if output.startswith(worktree.rstrip("/") + "/") else None
        if oid in head and rel not in head[oid]:
            continue  # a file of the current commit at another path: handed over, not an answer
        if size < MIN_ANSWER_BYTES and history.get(oid) != rel and rel not in head.get(oid, set()):
            continue
        leaks.append(
            GitLeak(output=output, git_dir=shown, blob=oid, history_path=history.get(oid), at_head=oid in head)
        )
    return leaks


def git_findings(leaks: list[GitLeak]) -> list[AuditFinding]:
    """One `leak` for the answers found in `.git` history."""
    if not leaks:
        return []
    shown = ", ".join(
        f"{leak.output} (blob {leak.blob[:12]} in {leak.git_dir}"
        + (", the current commit's version" if leak.at_head else f", history path {leak.history_path}")
        + ")"
        for leak in leaks[:5]
    )
    return [
        AuditFinding(
            code=FindingCode.LEAK,
            message=(
                "the answer is in the image's git history: the reference solution's output equals a blob the agent "
                f"can read ({shown}); rewrite the history without it (e.g. a fresh `git init` with one commit of the "
                "starting state) or remove .git from the image"
            ),
            evidence={"git": [leak.model_dump() for leak in leaks]},
        )
    ]
