"""What an agent phase changed in a sandbox: files created, modified and deleted, with their contents.

`RecordingAgent` wraps any agent. Before it runs, one exec lists every non-folder path under the
sandbox's writable roots (`writable_roots`: docker `/`, bwrap its writable folders), skipping
/proc, /sys, /dev, /logs, /tests, /solution and its own state folder, and creates a marker file;
it then waits for the clock to tick past the marker, so that any later change has a newer ctime.
After the agent, one exec lists again, takes the paths whose ctime is newer than the marker
(`find -cnewer`: ctime, so a preserved mtime hides nothing), compares the two listings for
deletions, and dumps the contents of the changed regular files (one `tar | base64`, capped per
file and in total) into a report. A small report comes back on that exec's stdout and the state
folder is removed in the same exec (two execs in all); a large one is fetched with one `get`.
Without GNU find (and coreutils) a python3 walk does the same; without either, `Effect.error`
says so. Folders are not recorded: a created folder shows through the files in it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import shlex
import tarfile
import time
import uuid
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from qaflow.agents.base import Agent
from qaflow.errors import SandboxError
from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task
from qaflow.task_steps import StepTask

PER_FILE_CAP = 1 << 20
TOTAL_CAP = 20 << 20
STREAM_LIMIT = 512 << 10
"""Reports up to this size come back on stdout (under the 1 MiB default output cap); larger ones by `get`."""
EXCLUDED = ("/proc", "/sys", "/dev", "/logs", "/tests", "/solution")
STATE_PREFIX = "/tmp/.qaflow-effect-"
TIMEOUT_S = 300.0
Method = Literal["auto", "find", "python3"]
FileType = Literal["file", "symlink", "other"]


MIN_LOOSE_BYTES = 16
"""A whitespace-insensitive match needs this much content left: short answers ("2") match by chance."""


def loose_bytes(content: bytes) -> bytes:
    """`content` without the bytes `tr -d '[:space:]'` removes in the C locale."""
    return content.translate(None, b" \t\n\v\f\r")


class ChangeKind(StrEnum):
    CREATED = "created"
    MODIFIED = "modified"
    DELETED = "deleted"


class FileChange(BaseModel):
    """One path the agent changed. `content` is None for deletions, non-regular files and files over the cap."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    path: str = Field(description="Absolute container path")
    kind: ChangeKind
    file_type: FileType = "file"
    content: bytes | None = None
    mode: int | None = Field(None, description="Permission bits (e.g. 0o644); None for deletions")
    size: int | None = Field(None, description="Size in bytes as listed; None for deletions")
    link_target: str | None = Field(None, description="Where a symlink points")


class Effect(BaseModel):
    """Everything an agent phase changed, sorted by path; `error` is set when it could not be captured."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    changes: list[FileChange] = Field(default_factory=list)
    truncated: bool = False
    """Some changed regular file's content was left out (over the per-file or total cap)."""
    error: str | None = None
    """Why the effect could not be captured (then `changes` is empty)."""
    method: str | None = None
    """How it was captured: 'find' or 'python3'."""
    workdir: str | None = None
    roots: list[str] = Field(default_factory=list)
    duration_s: float = 0.0
    """Time spent recording (both execs and the fetch), not counting the agent."""

    @property
    def ok(self) -> bool:
        return self.error is None

    def output_digests(self, *, loose: bool = False) -> dict[str, str]:
        """sha256 of every non-empty regular file created or modified, by path (none when not captured).
        `loose`: of the content without whitespace (`loose_bytes`), only where at least `MIN_LOOSE_BYTES` remain."""
        if not self.ok:
            return {}
        outputs: dict[str, bytes] = {}
        for c in self.changes:
            if c.kind is not ChangeKind.DELETED and c.file_type == "file" and c.content:
                outputs[c.path] = loose_bytes(c.content) if loose else c.content
        floor = MIN_LOOSE_BYTES if loose else 1
        return {p: hashlib.sha256(b).hexdigest() for p, b in outputs.items() if len(b) >= floor}

    @property
    def created(self) -> list[FileChange]:
        return [c for c in self.changes if c.kind is ChangeKind.CREATED]

    @property
    def modified(self) -> list[FileChange]:
        return [c for c in self.changes if c.kind is ChangeKind.MODIFIED]

    @property
    def deleted(self) -> list[FileChange]:
        return [c for c in self.changes if c.kind is ChangeKind.DELETED]

    @property
    def written(self) -> list[FileChange]:
        """Created and modified paths."""
        return [c for c in self.changes if c.kind is not ChangeKind.DELETED]

    @property
    def paths(self) -> dict[str, ChangeKind]:
        return {c.path: c.kind for c in self.changes}

    def get(self, path: str) -> FileChange | None:
        return next((c for c in self.changes if c.path == path), None)


_PY_WALK = r"""
import base64, json, os, shutil, stat, sys, time
mode, S = sys.argv[1], sys.argv[2]
per, total, stream = (int(v) for v in sys.argv[3:6])
roots, skip = json.loads(sys.argv[6]), set(json.loads(sys.argv[7])) | {S}
TYPES = dict(zip((stat.S_IFREG, stat.S_IFLNK, stat.S_IFIFO, stat.S_IFSOCK, stat.S_IFBLK, stat.S_IFCHR), "flpsbc"))
def walk():
    for root in roots:
        if root in skip or not os.path.lexists(root):
            continue
        for d, dirs, files in os.walk(root):
            keep = []
            for x in dirs:
                p = os.path.join(d, x)
                if p not in skip:
                    (files if os.path.islink(p) else keep).append(x)
            dirs[:] = keep
            for x in files:
                yield os.path.join(d, x)
try:
    with open("/proc/self/mountinfo") as fh:
        skip |= {f[4] for f in (line.split() for line in fh) if "ro" in f[5].split(",") and f[4] != "/"}
except OSError:
    pass
marker, enc = os.path.join(S, "marker"), dict(encoding="utf-8", errors="surrogateescape")
if mode == "before":
    open(marker, "w").close()
    with open(os.path.join(S, "before"), "w", **enc) as fh:
        fh.writelines(p + "\n" for p in walk())
    tick = os.path.join(S, "tick")
    for _ in range(500):
        open(tick, "w").close()
        os.utime(tick)
        if os.stat(tick).st_mtime_ns > os.stat(marker).st_mtime_ns:
            break
        time.sleep(0.001)
    sys.exit(0)
cut = os.stat(marker).st_mtime_ns
with open(os.path.join(S, "before"), **enc) as fh:
    before = set(fh.read().splitlines())
out, fetch, seen, used = ["QAFLOW-EFFECT 1 python3"], [], set(), 0
for p in walk():
    seen.add(p)
    try:
        st = os.lstat(p)
    except OSError:
        continue
    if st.st_ctime_ns <= cut:
        continue
    y = TYPES.get(stat.S_IFMT(st.st_mode), "u")
    link = os.readlink(p) if y == "l" else ""
    out.append("X\t%s\t%o\t%d\t%s\t%s" % (y, stat.S_IMODE(st.st_mode), st.st_size, link, p))
    if p in before:
        out.append("O\t" + p)
    if y == "f" and st.st_size <= per and used + st.st_size <= total:
        used += st.st_size
        fetch.append(p)
out += ["D\t" + p for p in sorted(before - seen)]
for p in fetch:
    try:
        with open(p, "rb") as fh:
            data = fh.read()
    except OSError:
        continue
    out += ["B\t" + p, base64.encodebytes(data).decode().rstrip("\n"), "."]
text = ("\n".join(out) + "\nEND\n").encode("utf-8", "surrogateescape")
if len(text) <= stream:
    sys.stdout.buffer.write(text)
    shutil.rmtree(S, ignore_errors=True)
else:
    with open(os.path.join(S, "report"), "wb") as fh:
        fh.write(text)
    print("QAFLOW-EFFECT-FILE\t" + S + "/report")
"""


_RO_MOUNTS = r"""set --
while read -r _ _ _ _ mp opts _; do
  case ",$opts," in *,ro,*) [ "$mp" = / ] || set -- "$@" -o -path "$mp";; esac
done < /proc/self/mountinfo"""
"""Shell: read-only mount points other than / as `-o -path MP` find arguments in "$@"."""


class RecordingAgent:
    """Runs `inner` and records what it changed in `self.effect` (see the module docstring)."""

    def __init__(
        self,
        inner: Agent,
        *,
        per_file_cap: int = PER_FILE_CAP,
        total_cap: int = TOTAL_CAP,
        exclude: tuple[str, ...] = EXCLUDED,
        method: Method = "auto",
        timeout: float = TIMEOUT_S,
    ):
        self.inner = inner
        self.name: str = inner.name
        self.per_file_cap = per_file_cap
        self.total_cap = total_cap
        self.exclude = exclude
        self.method = method
        self.timeout = timeout
        self.effect: Effect | None = None
        """The last run's effect; None before a run, or when the inner agent raised."""
        self.effects: dict[str, Effect] = {}
        """Per step of a multi-step task, that step's effect."""
        self.lost = False
        """A listing after the agent failed where the one before it worked (the agent may have removed the
        recorder's state); a listing that could not start (no find nor python3) is not lost."""

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        self.effect = None
        state = STATE_PREFIX + uuid.uuid4().hex[:12]
        roots = [r for r in sandbox.writable_roots or ["/"] if not self._excluded(r)]
        t0 = time.perf_counter()
        error = self._start(sandbox, state, roots)
        spent = time.perf_counter() - t0
        result = self.inner.run(task, sandbox)
        t1 = time.perf_counter()
        effect = Effect(error=error) if error else self._finish(sandbox, state, roots)
        self.lost = self.lost or (error is None and effect.error is not None)
        extra = {"workdir": sandbox.workdir, "roots": roots, "duration_s": spent + time.perf_counter() - t1}
        self.effect = effect.model_copy(update=extra)
        if isinstance(task, StepTask):
            self.effects[task.step_name] = self.effect
        return result

    def _excluded(self, path: str) -> bool:
        return any(path == e or path.startswith(e.rstrip("/") + "/") for e in self.exclude)

    def _find_args(self, state: str, roots: list[str]) -> str:
        """find's roots and pruning; read-only mounts inside the roots (bwrap's host pieces) are pruned
        too, from the positional parameters that `_RO_MOUNTS` sets."""
        prune = " -o ".join(f"-path {shlex.quote(p)}" for p in [*self.exclude, state])
        return f'{" ".join(shlex.quote(r) for r in roots)} \\( {prune} "$@" \\) -prune -o ! -type d'

    def _python(self, mode: str, state: str, roots: list[str]) -> str:
        args = [mode, state, self.per_file_cap, self.total_cap, STREAM_LIMIT, json.dumps(roots)]
        args.append(json.dumps(list(self.exclude)))
        return f"python3 -c {shlex.quote(_PY_WALK)} " + " ".join(shlex.quote(str(a)) for a in args)

    def _start(self, sandbox: Sandbox, state: str, roots: list[str]) -> str | None:
        """Create the state folder and marker and list the paths; returns an error or None."""
        detect = {
            "auto": 'if find "$S" -maxdepth 0 -printf "" >/dev/null 2>&1 && command -v sort >/dev/null '
            "&& command -v comm >/dev/null && command -v sed >/dev/null && command -v base64 >/dev/null; then m=find; "
            "elif command -v python3 >/dev/null 2>&1; then m=python3; else m=; fi",
            "find": "m=find",
            "python3": "m=python3",
        }[self.method]
        script = f"""S={shlex.quote(state)}
rm -rf "$S" && mkdir -p "$S" && chmod 700 "$S" || {{ echo "QAFLOW-EFFECT-ERROR cannot create $S"; exit 0; }}
{detect}
[ -n "$m" ] || {{ echo 'QAFLOW-EFFECT-ERROR the image has neither GNU find (with coreutils) nor python3'; exit 0; }}
echo "$m" > "$S/method"
if [ "$m" = python3 ]; then {self._python("before", state, roots)} && echo QAFLOW-EFFECT-READY; exit 0; fi
{_RO_MOUNTS}
touch "$S/marker"
find {self._find_args(state, roots)} -print > "$S/before" 2>/dev/null
i=0
while [ $i -lt 500 ]; do
  touch "$S/tick"; [ -n "$(find "$S/tick" -newer "$S/marker")" ] && break; i=$((i + 1))
done
echo QAFLOW-EFFECT-READY
"""
        try:
            res = sandbox.exec(script, timeout=self.timeout, user="0")
        except SandboxError as e:
            return f"could not list the sandbox before the agent: {e}"
        if "QAFLOW-EFFECT-READY" in res.stdout:
            return None
        return _script_error(res, "listing before the agent")

    def _finish(self, sandbox: Sandbox, state: str, roots: list[str]) -> Effect:
        find = self._find_args(state, roots)
        script = f"""S={shlex.quote(state)}
[ -f "$S/method" ] || {{ echo "QAFLOW-EFFECT-ERROR the state folder $S is gone (did the agent clear /tmp?)"; exit 0; }}
if [ "$(cat "$S/method")" = python3 ]; then exec {self._python("after", state, roots)}; fi
export LC_ALL=C
{_RO_MOUNTS}
find {find} -fprint "$S/after" -cnewer "$S/marker" -fprint "$S/changed" \\
  -fprintf "$S/records" 'X\\t%y\\t%m\\t%s\\t%l\\t%p\\n' \\
  \\( -type f -fprintf "$S/sizes" '%s %p\\n' -o -true \\) 2>/dev/null
sort -o "$S/before" "$S/before"; sort -o "$S/after" "$S/after"; sort -o "$S/changed" "$S/changed"
{{
echo 'QAFLOW-EFFECT 1 find'
cat "$S/records"
comm -12 "$S/before" "$S/changed" | sed 's/^/O\t/'
comm -23 "$S/before" "$S/after" | sed 's/^/D\t/'
t=0
while IFS= read -r line; do
  s=${{line%% *}}; p=${{line#* }}
  [ "$s" -le {self.per_file_cap} ] && [ $((t + s)) -le {self.total_cap} ] || continue
  t=$((t + s)); printf '%s\\n' "$p"
done < "$S/sizes" > "$S/fetch"
if [ -s "$S/fetch" ]; then
  if command -v tar >/dev/null 2>&1; then echo T; tar -cf - -T "$S/fetch" 2>/dev/null | base64; echo .
  else while IFS= read -r p; do printf 'B\\t%s\\n' "$p"; base64 < "$p"; echo .; done < "$S/fetch"; fi
fi
echo END
}} > "$S/report"
if [ "$(wc -c < "$S/report")" -le {STREAM_LIMIT} ]; then cat "$S/report"; rm -rf "$S"
else printf 'QAFLOW-EFFECT-FILE\\t%s\\n' "$S/report"; fi
"""
        try:
            res = sandbox.exec(script, timeout=self.timeout, user="0")
            text = res.stdout
            if text.startswith("QAFLOW-EFFECT-FILE\t"):
                text = sandbox.get(text.split("\t", 1)[1].strip()).decode("utf-8", errors="replace")
                sandbox.exec(["rm", "-rf", state], timeout=self.timeout, user="0")
        except (SandboxError, FileNotFoundError) as e:
            return Effect(error=f"could not list the sandbox after the agent: {e}")
        if not text.startswith("QAFLOW-EFFECT 1"):
            return Effect(error=_script_error(res, "listing after the agent"))
        return parse_report(text)


def _script_error(res: ExecResult, what: str) -> str:
    for line in res.stdout.splitlines():
        if line.startswith("QAFLOW-EFFECT-ERROR"):
            return line.removeprefix("QAFLOW-EFFECT-ERROR").strip()
    why = "timed out" if res.timed_out else f"exit {res.exit_code}"
    return f"{what} failed ({why}): {(res.stderr or res.stdout).strip()[-400:]}"


def parse_report(text: str) -> Effect:
    """The Effect described by a recording report (the format the scripts above write)."""
    lines = text.split("\n")
    method = lines[0].split(" ")[2] if len(lines[0].split(" ")) > 2 else None
    records: dict[str, list[str]] = {}
    modified: set[str] = set()
    deleted: list[str] = []
    contents: dict[str, bytes] = {}
    complete = False
    i = 1
    while i < len(lines):
        tag, _, rest = lines[i].partition("\t")
        i += 1
        if tag == "X" and rest.count("\t") >= 4:
            fields = rest.split("\t", 4)
            records[fields[4]] = fields
        elif tag == "O":
            modified.add(rest)
        elif tag == "D":
            deleted.append(rest)
        elif tag in ("T", "B"):
            end = lines.index(".", i) if "." in lines else len(lines)
            blob = "".join(lines[i:end])
            i = end + 1
            try:
                data = base64.b64decode(blob, validate=False)
            except binascii.Error:
                return Effect(error=f"the recording report has bad base64 content ({len(blob)} chars)")
            if tag == "B":
                contents[rest] = data
            else:
                contents.update(_untar(data))
        elif tag == "END":
            complete = True
            break
    if not complete:
        return Effect(error="the recording report is incomplete (no END line); was the output cut?")
    changes: list[FileChange] = []
    truncated = False
    types: dict[str, FileType] = {"f": "file", "l": "symlink"}
    for path, (y, mode, size, link, _) in records.items():
        content = contents.get(path) if y == "f" else None
        truncated |= y == "f" and content is None
        kind = ChangeKind.MODIFIED if path in modified else ChangeKind.CREATED
        number = {"mode": int(mode, 8) if mode.isdigit() else None, "size": int(size) if size.isdigit() else None}
        target = (link or None) if y == "l" else None
        ftype = types.get(y, "other")
        changes.append(FileChange(path=path, kind=kind, file_type=ftype, content=content, link_target=target, **number))
    changes += [FileChange(path=p, kind=ChangeKind.DELETED) for p in deleted]
    changes.sort(key=lambda c: c.path)
    return Effect(changes=changes, truncated=truncated, method=method)


def _untar(data: bytes) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for member in tar:
                if member.isfile():
                    fh = tar.extractfile(member)
                    if fh is not None:
                        out["/" + member.name.lstrip("/")] = fh.read()
    except tarfile.TarError:
        pass  # a cut-off archive: the files read so far stand; the rest count as truncated
    return out
