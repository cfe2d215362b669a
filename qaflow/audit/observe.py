"""Observe the verifier's trust boundary by running it: the `observe` probe.

One extra trial per task: without changing the task image, the observer
(`qaflow.audit.observer_files`) is uploaded to `/logs/.qaflow-observe`, and the oracle, then the real
verifier, run with `BASH_ENV` (and through it `PYTHONPATH`) pointing there. What the
verifier ran, executed, imported, opened, and where its pytest looked for conftest.py, is read back
from the logs; one more exec, as the agent user, says which of those paths exist and which the agent
could write (the file, or the folder it is in). The result is an `Observation`, kept in the probe's
ledger payload and shown in the report; `qaflow.audit.exploits` turns the agent-writable,
task-owned inputs of it into exploit trials.

Why not a tracer: the host's strace is linked against the host's libc (Debian ships no static
one), a running container takes no new bind mount, and ptrace is not granted everywhere (gVisor);
what the verifier's own bash and Python report about themselves works the same under docker and
bwrap. How (both backends, nothing bind-mounted): bash xtrace of every bash the verifier
starts (expanded command words, the script and folder of each), a `sys.addaudithook` hook in every
Python it starts (open, exec of code objects with their importer, run_file/run_module with
sys.path, subprocess/os.exec/posix_spawn/system), a pytest plugin (rootdir, inifile, confcutdir,
conftests loaded, files collected). The reference solution runs under the same observer first (its
reads are kept apart). Blind spots: programs that are neither bash nor Python (their reads; what a
`sh`/dash script does: only that a traced bash started it), shell input
redirections (`< file`), Python started with `-I`/`-E`/`-S` or with a PYTHONPATH the verifier sets
itself, a test.sh that turns xtrace off, a verifier that runs in a view (services left running) or
in its own image (separate mode): the observation then says it saw nothing and why.
"""

from __future__ import annotations

import base64
import json
import posixpath
import shlex
import tempfile
import time
from pathlib import Path
from typing import Literal, NamedTuple

from qaflow.agents import OracleAgent
from qaflow.agents.base import Agent
from qaflow.audit.exploits.decodes import decode_steps
from qaflow.audit.exploits.replay_plants import REWARD_FILES
from qaflow.audit.git_history import GitLeak, git_leaks, mentions_git
from qaflow.audit.observation import (
    MAX_PATHS,
    MAX_REPLAY_BYTES,
    SYSTEM_ROOTS,
    Access,
    DecodeStep,
    Observation,
    Replay,
    Seen,
    is_answer_candidate,
    parse_logs,
)
from qaflow.audit.observer_files import FILES, LOG_DIR, OBSERVE_DIR, verifier_env
from qaflow.audit.trace import VerifierTrace, parse_trace
from qaflow.models.trial import PhaseResult, TrialResult, VerifierSandbox
from qaflow.sandbox.base import SHELL, SYSTEM_TOOLS, Sandbox
from qaflow.sandbox.dockerfile import logical_lines
from qaflow.sandbox.spec import RunNetwork
from qaflow.task import Task
from qaflow.trial import run_trial
from qaflow.trial.guard import GUARD_DIR, TRACE
from qaflow.trial.hooks import TrialHooks
from qaflow.trial.phases import VerifierPlan


def observe_trial(
    task: Task,
    *,
    backend: str,
    run_id: str,
    network: RunNetwork | None,
    reruns: int = 0,
    outputs: dict[str, str] | None = None,
    last_step: str | None = None,
) -> tuple[TrialResult, Observation]:
    """The oracle, then the verifier under observation (a `run_trial` with `ObserveHooks`), then up to
    `reruns` plain runs of the verifier on the same final state (single-step tasks). On a multi-step task,
    the oracle's steps up to `last_step`, that one observed."""
    hooks = ObserveHooks(outputs)
    result = run_trial(task, OracleAgent(), backend=backend, run_id=run_id, network=network,
                       verifier_reruns=reruns, hooks=hooks, last_step=last_step)  # fmt: skip
    observation = hooks.observation
    observation.reruns = result.reruns
    return result, observation


class ObserveHooks(TrialHooks):
    """The observe probe as hooks of the oracle's trial: before the agent, the compiled leftovers and the
    `.git` history the agent could read, and the observer uploaded; the oracle runs under it (its reads
    and decodes kept, its outputs' digests taken); the verifier's first run is observed, then read back
    with the replays of what it ran. `observation` is the result (reruns are the trial's)."""

    def __init__(self, outputs: dict[str, str] | None = None):
        self.outputs = outputs or {}
        self.observation = Observation(why_not="the trial did not reach the verifier")
        self._env: dict[str, str] = {}
        self._leftovers: list[str] = []
        self._in_git: list[GitLeak] = []
        self._oracle: tuple[dict[str, str], list[str], list[DecodeStep]] = ({}, [], [])

    def wrap_agent(self, task: Task, box: Sandbox, agent: Agent) -> Agent:
        roots = task_roots(task, box.workdir)
        self._leftovers = find_leftovers(box, roots)
        if not mentions_git(task.instruction):
            self._in_git = git_leaks(box, roots, self.outputs, user=task.config.agent.user)
        self._env = verifier_env(_upload_observer(box))
        if isinstance(agent, OracleAgent):
            return OracleAgent(extra_env={**agent.extra_env, **self._env})
        return agent

    def after_agent(self, task: Task, box: Sandbox, result: PhaseResult) -> None:
        digests, _ = read_digests(box, sorted(self.outputs))
        self._oracle = (digests, *read_oracle_reads(box, task))

    def verifier_env(self) -> dict[str, str]:
        return self._env

    def trace_verifier(self) -> bool:
        return True

    def after_verifier(self, task: Task, box: Sandbox, plan: VerifierPlan, result: PhaseResult) -> None:
        if result.verifier_sandbox is not VerifierSandbox.SHARED:
            where = result.verifier_sandbox.value if result.verifier_sandbox else "different"
            self.observation.why_not = f"the verifier ran in a {where} sandbox, not observed"
        else:
            t0 = time.perf_counter()
            self.observation = read_observation(box, task)
            self.observation.duration_s = time.perf_counter() - t0
            self.observation.replays = replay_scripts(box, plan, self.observation, set(self.outputs))
            read_trace(box, task, self.observation)
        found = self.observation
        found.output_digests, found.oracle_reads, found.oracle_decodes = self._oracle
        found.leftovers, found.git_leaks = self._leftovers, self._in_git


MAX_LOG_BYTES = 4 * 1024 * 1024
"""Each observer log is cut to this size before it is read back (a solution that loops in bash traces
every iteration)."""
MAX_ORACLE_READS = 400


def read_oracle_reads(box: Sandbox, task: Task) -> tuple[list[str], list[DecodeStep]]:
    """The task-owned files the reference solution read or named as an argument, and its decoding steps
    (from the observer's logs of the oracle's run), then the log folder emptied for the verifier's run."""
    seen = Seen()
    logs = _read_logs(box)
    parse_logs(logs, seen, Observation())
    box.exec(f"find {LOG_DIR} -mindepth 1 -delete", timeout=60, user="0")
    roots = task_roots(task, box.workdir)
    reads = [
        path
        for path, (hows, _) in seen.paths.items()
        if {"read", "arg"} & hows and owner_of(path, roots) == "task" and not path.startswith("/solution/")
    ]
    return sorted(reads)[:MAX_ORACLE_READS], decode_steps(logs)


MAX_REPLAYS = 4


def replay_scripts(
    box: Sandbox, plan: VerifierPlan, observation: Observation, work: set[str] | None = None
) -> dict[str, Replay]:
    """Run again, untraced and as the verifier ran them (argv, cwd, user, env), the task-owned Python
    and shell scripts the verifier ran that the agent can write, on the final state the oracle left;
    keep what each printed and its exit status (for `exploits.replay_shim`). `plan`: the task's plain
    verifier plan; `work`: what the reference solution wrote (never shimmed, so not replayed)."""
    replays: dict[str, Replay] = {}
    runs = [(r.main, r.argv, r.cwd) for r in observation.python if r.main]
    runs += [(r.script, r.argv, r.cwd) for r in observation.scripts]
    for script, argv, cwd in runs:
        if len(replays) >= MAX_REPLAYS:
            break
        access = observation.get(script)
        if access is None or access.owner != "task" or not access.writable or access.is_dir or not argv:
            continue
        if "run" not in access.how or access.path in replays or access.path in (work or set()):
            continue
        ex = box.exec(
            [SHELL, "-c", 'cd "$1" && shift && exec "$@" </dev/null', "sh", cwd, *argv],
            timeout=min(plan.timeout_sec, 60.0),
            env=plan.env,
            user=plan.user,
            kill_strays_after=True,
        )
        if not ex.timed_out:
            replays[access.path] = Replay(stdout=ex.stdout[:MAX_REPLAY_BYTES], exit=ex.exit_code)
    return replays


_LEFTOVERS = r"""
for r in "$@"; do [ -d "$r" ] && find "$r" -name '*.pyc' 2>/dev/null; done | while IFS= read -r f; do
  b=${f##*/}; m=${b%%.*}; d=${f%/*}
  case "$d" in */__pycache__) d=${d%/__pycache__} ;; esac
  [ -e "$d/$m.py" ] || printf '%s\n' "$f"
done | sort -u | head -n 50
"""


def find_leftovers(box: Sandbox, roots: list[str]) -> list[str]:
    """Compiled Python files under the task's folders whose source file is not there: what is left of a
    generator or answer script removed from the image, which an agent can decompile (one exec, before the
    agent starts)."""
    ex = box.exec([SHELL, "-c", SYSTEM_TOOLS + _LEFTOVERS, "sh", *roots], timeout=60, user="0")
    return [line for line in ex.stdout.splitlines() if line.startswith("/")]


def _upload_observer(box: Sandbox) -> str:
    """Uploads the observer; returns the image's own `BASH_ENV` (empty when it sets none)."""
    with tempfile.TemporaryDirectory(prefix="qaflow-observe-") as tmp:
        root = Path(tmp)
        for rel, text in FILES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        (root / "log").mkdir()
        box.put(OBSERVE_DIR, root)
    ex = box.exec(
        f'chmod -R a+rX {OBSERVE_DIR} && chmod 1777 {LOG_DIR} && printf %s "${{BASH_ENV-}}"', timeout=30, user="0"
    )
    return ex.stdout.strip() if ex.exit_code == 0 else ""


def _read_logs(box: Sandbox) -> dict[str, str]:
    box.exec(
        f"find {LOG_DIR} -type f -size +{MAX_LOG_BYTES // 1024}k -exec truncate -s {MAX_LOG_BYTES} {{}} +",
        timeout=60,
        user="0",
    )
    with tempfile.TemporaryDirectory(prefix="qaflow-observe-") as tmp:
        box.get_dir(LOG_DIR, Path(tmp))
        return {
            p.name: p.read_text(encoding="utf-8", errors="replace") for p in sorted(Path(tmp).iterdir()) if p.is_file()
        }


# -- which of them the agent can write ------------------------------------------------------------


def task_roots(task: Task, workdir: str) -> list[str]:
    """Where the task's own files live: the workdir, every Dockerfile COPY/ADD destination, and every folder
    in a home folder that the Dockerfile's `ENV PATH` puts on PATH (a lookup there is the task's choice; the
    toolchain folders a task adds under /usr stay the system's)."""
    roots = {workdir.rstrip("/") or "/"}
    current = "/"
    try:
        text = task.environment_dir.joinpath("Dockerfile").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return sorted(roots)
    for _line, logical in logical_lines(text):
        parts = logical.split(None, 1)
        if len(parts) < 2:
            continue
        keyword, args = parts[0].upper(), parts[1]
        try:
            words = [w for w in shlex.split(args) if not w.startswith("--")]
        except ValueError:
            continue
        if keyword == "ENV":
            roots.update(_home_path_folders(words))
        elif keyword == "WORKDIR" and words:
            current = posixpath.join(current, words[-1])
        elif keyword in ("COPY", "ADD") and len(words) >= 2:
            dest = words[-1]
            if args.lstrip().startswith("["):
                try:
                    dest = json.loads(args.strip())[-1]
                except (ValueError, IndexError, TypeError):
                    continue
            roots.add(posixpath.normpath(posixpath.join(current, dest)))
    return sorted(r for r in roots if r != "/")


def _home_path_folders(words: list[str]) -> list[str]:
    """The folders in a home folder among the PATH entries of an `ENV` instruction's words."""
    values = [w.split("=", 1)[1] for w in words if w.startswith("PATH=")]
    if words[:1] == ["PATH"] and len(words) == 2:
        values.append(words[1])
    entries = [e.rstrip("/") for v in values for e in v.split(":")]
    return [e for e in entries if e.startswith(("/root/", "/home/")) and "$" not in e and ".." not in e]


def owner_of(path: str, roots: list[str]) -> Literal["task", "system"]:
    """task: under a task root, or outside the system folders; system: the toolchain, and / itself
    (a file planted at the top of the tree needs a root agent, as a replaced interpreter does)."""
    if any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots):
        return "task"
    top_level_file = posixpath.dirname(path) == "/" and posixpath.splitext(path)[1] != ""
    if path == "/" or top_level_file or any(path == s or path.startswith(s + "/") for s in SYSTEM_ROOTS):
        return "system"
    return "task"


_CLASSIFY = r"""
creatable() {
  a=${1%/*}
  while [ -n "$a" ] && [ ! -e "$a" ]; do a=${a%/*}; done
  [ -n "$a" ] || a=/
  [ -d "$a" ] && [ -w "$a" ] && [ ! -k "$a" ]
}
while IFS= read -r line; do
  case "$line" in
    N*) n=${line#N}; p=$(command -v -- "$n" 2>/dev/null) || continue
        case "$p" in /*) printf 'R\t%s\t%s\n' "$n" "$p" ;; *) continue ;; esac
        rest=$PATH:
        while [ -n "$rest" ]; do
          e=${rest%%:*}; rest=${rest#*:}
          case "$e" in /*) ;; *) continue ;; esac
          [ "${e%/}/$n" = "$p" ] && break
          [ -e "${e%/}/$n" ] && continue
          c=0; creatable "${e%/}/$n" && c=1
          printf 'S\t%s\t%s\t%s\n' "$n" "$c" "${e%/}/$n"
        done
        continue ;;
    *) p=${line#P} ;;
  esac
  t=-; [ -d "$p" ] && t=d; [ "$t" = - ] && [ -e "$p" ] && t=f
  w=0; [ -w "$p" ] && w=1
  r=0; [ -r "$p" ] && r=1
  d=${p%/*}; [ -n "$d" ] || d=/
  pw=0; [ -w "$d" ] && [ ! -k "$d" ] && pw=1
  c=0; [ "$t" = - ] && creatable "$p" && c=1
  printf 'C\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$w" "$pw" "$r" "$c" "$p"
done <<'QAFLOW_PATHS'
"""


MAX_LOOKUPS = 200


class PathFacts(NamedTuple):
    """What `_CLASSIFY` found of one path, as the agent user: its kind (`d`, `f`, `-` for none), whether
    the agent can write it, write its folder, read it, create it."""

    kind: str = "-"
    can_write: bool = False
    folder_writable: bool = False
    readable: bool = False
    creatable: bool = False

    @classmethod
    def of(cls, cols: list[str]) -> tuple[str, PathFacts] | None:
        """(path, facts) of one `C` row of `_CLASSIFY`; None for any other row."""
        if cols[0] != "C" or len(cols) != 7:
            return None
        return cols[6], cls(cols[1], *(c == "1" for c in cols[2:6]))

    @property
    def writable(self) -> bool:
        """The agent can write it, or replace it (write to the folder it is in)."""
        return self.can_write or (self.kind != "d" and self.folder_writable)

    def access(self, path: str, owner: Literal["task", "system"], how: list[str], by: list[str]) -> Access:
        return Access(
            path=path, how=how, by=by, exists=self.kind != "-", is_dir=self.kind == "d", writable=self.writable,
            readable=self.readable, creatable=self.creatable, owner=owner,
        )  # fmt: skip


def classify(box: Sandbox, lines: list[str], user: str | int | None) -> list[list[str]]:
    """The rows `_CLASSIFY` prints for `lines` (`P<path>`, `N<program name>`), run as `user` in one exec."""
    lines = [line for line in lines if "\n" not in line and "QAFLOW_PATHS" not in line]
    script = _CLASSIFY + "\n".join(lines) + "\nQAFLOW_PATHS\n"
    ex = box.exec([SHELL, "-c", script], timeout=120, user=user)
    return [row.split("\t") for row in ex.stdout.splitlines()]


def read_observation(box: Sandbox, task: Task) -> Observation:
    """Parse the observer's logs in `box` and classify every path it saw (one exec as the agent user)."""
    obs = Observation(observed=True, agent_user=None if task.config.agent.user is None else str(task.config.agent.user))
    seen = Seen()
    parse_logs(_read_logs(box), seen, obs)
    if not obs.shell_commands and not obs.python:
        obs.observed, obs.why_not = False, "the observer saw no bash or Python process of the verifier"
    lines = ["P/"] + [f"P{p}" for p in list(seen.paths)[:MAX_PATHS]] + [f"N{n}" for n in sorted(seen.names)]
    facts: dict[str, PathFacts] = {}
    lookups: dict[str, tuple[str, bool]] = {}
    for cols in classify(box, lines, task.config.agent.user):
        if cols[0] == "R" and len(cols) == 3:
            obs.programs.append(cols[1])
            for by in seen.names.get(cols[1], set()) or {""}:
                seen.add(cols[2], "run", by or None, "/")
        elif cols[0] == "S" and len(cols) == 4:
            lookups.setdefault(cols[3], (cols[1], cols[2] == "1"))
        elif (found := PathFacts.of(cols)) is not None:
            facts[found[0]] = found[1]
    obs.root_writable = facts.get("/", PathFacts()).writable
    roots = task_roots(task, box.workdir)
    for path, (hows, bys) in sorted(seen.paths.items()):
        obs.accesses.append(facts.get(path, PathFacts()).access(path, owner_of(path, roots), sorted(hows), sorted(bys)))
    for path, (name, can_create) in sorted(lookups.items())[:MAX_LOOKUPS]:
        # a folder on PATH ahead of where the name was found, with no such program: the agent's would run instead
        callers = sorted(seen.names.get(name, set()))
        obs.accesses.append(
            Access(path=path, how=["path_lookup"], by=callers, creatable=can_create, owner=owner_of(path, roots))
        )
    obs.digests, obs.loose_digests = read_digests(box, [a.path for a in obs.accesses if is_answer_candidate(a)])
    return obs


MAX_DIGESTS = 64
_DIGESTS = r"""
for f in "$@"; do
  [ -f "$f" ] || continue
  e=$(sha256sum < "$f") && printf 'E %s  %s\n' "${e%% *}" "$f"
  l=$(tr -d '[:space:]' < "$f" | sha256sum) && printf 'L %s  %s\n' "${l%% *}" "$f"
done
"""


def read_digests(box: Sandbox, paths: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """sha256 of each of `paths` (regular files, at most `MAX_DIGESTS`), read as root, as is and without
    whitespace (`qaflow.trial.effects.loose_bytes`); none on failure."""
    paths = [p for p in paths if "\n" not in p][:MAX_DIGESTS]
    exact: dict[str, str] = {}
    loose: dict[str, str] = {}
    if not paths:
        return exact, loose
    ex = box.exec([SHELL, "-c", SYSTEM_TOOLS + _DIGESTS, "sh", *paths], timeout=60, user="0")
    for line in ex.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        digest, _, path = rest.partition("  ")
        if len(digest) == 64 and path in paths and kind in ("E", "L"):
            (exact if kind == "E" else loose)[path] = digest
    return exact, loose


MAX_TRACE_PATHS = 1500
MAX_KEPT = 20
MAX_KEPT_BYTES = 65536
_MODULE_FILE = (".py", ".pyc", ".so")


def read_trace(box: Sandbox, task: Task, observation: Observation) -> None:
    """The guard's trace of the observed verifier (`qaflow.audit.trace`) into `observation`: condensed to
    what the replay plants need, its task-owned paths classified as the agent user, and what the files
    the verifier appended to held after its run."""
    found = box.read_first_text(GUARD_DIR, [TRACE])
    if found is None:
        return
    roots = task_roots(task, box.workdir)
    trace = condense(parse_trace(found[1]), roots)
    observation.trace = trace
    paths = [p for p in dict.fromkeys(e.path for e in trace.events) if owner_of(p, roots) == "task" or in_home(p)]
    paths += [r.exe for r in trace.executed() if owner_of(r.exe, roots) == "task"]
    paths = list(dict.fromkeys(paths))[:MAX_TRACE_PATHS]
    if paths:
        for cols in classify(box, [f"P{p}" for p in paths], task.config.agent.user):
            if (classified := PathFacts.of(cols)) is not None:
                path, facts = classified
                observation.trace_access[path] = facts.access(path, owner_of(path, roots), [], [])
    kept = [p for p in trace.kept() if owner_of(p, roots) == "task"][:MAX_KEPT]
    observation.kept = _file_texts(box, kept)
    top = trace.executed()[0].pid if trace.executed() else None
    written = [e for e in trace.events if e.writes and not e.path.startswith(("/logs/", "/tests/"))]
    # the children's first (the work's outputs), then test.sh's own (results it wrote into a folder it lists)
    paths = [e.path for e in written if e.pid != top] + [e.path for e in written if e.pid == top]
    observation.outputs = _file_texts(box, [p for p in dict.fromkeys(paths) if p not in kept][:MAX_KEPT])


def _file_texts(box: Sandbox, paths: list[str]) -> dict[str, str]:
    """What each of `paths` holds now (its first `MAX_KEPT_BYTES`), for those that are still there."""
    if not paths:
        return {}
    ex = box.exec(
        [SHELL, "-c", SYSTEM_TOOLS + f'for f in "$@"; do [ -f "$f" ] || continue; printf "%s\\0" "$f"; '
         f'head -c {MAX_KEPT_BYTES} "$f" | base64 -w0; printf "\\0"; done', "sh", *paths], timeout=60, user="0",
    )  # fmt: skip
    fields = ex.stdout.split("\0")
    texts: dict[str, str] = {}
    for path, data in zip(fields[::2], fields[1::2], strict=False):
        try:
            texts[path] = base64.b64decode(data).decode("utf-8", "surrogateescape")
        except ValueError:
            continue
    return texts


def in_home(path: str) -> bool:
    """A file directly in a user's home folder (`/root`, `/home/NAME`): a shell's start-up files."""
    parent = posixpath.dirname(path)
    return parent == "/root" or (posixpath.dirname(parent) == "/home" and parent != "/home")


def condense(trace: VerifierTrace, roots: list[str]) -> VerifierTrace:
    """The events the replay plants read: task-owned paths, the Python modules loaded from the system, the
    verifier's writes of its reward files and its reads of its own files."""
    keep = []
    for e in trace.events:
        if e.writes and e.path in REWARD_FILES:
            keep.append(e)
            continue
        if e.path.startswith("/tests/") and e.reads:
            keep.append(e)  # the verifier's own files it read: what a link of the work's to them would show
            continue
        if e.path.startswith((OBSERVE_DIR, GUARD_DIR, "/tests/", "/logs/")):
            continue
        module = e.op == "open" and not e.failed and e.path.endswith(_MODULE_FILE)
        if owner_of(e.path, roots) == "task" or in_home(e.path) or module:
            keep.append(e)
    return trace.model_copy(update={"events": keep})
