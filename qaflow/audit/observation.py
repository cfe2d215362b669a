"""The observed trust boundary as data, and how the observer's logs become it (`qaflow.audit.observe`
runs the observed verifier; this module only reads what its observer wrote: pure, testable offline).

Shell trace lines (`+<SEP>script<SEP>cwd<SEP> words`) give the programs each bash ran (a bare name is
resolved through PATH in the sandbox afterwards) and the path-like words it passed; each bash's first line
(`#start<SEP>HOME<SEP>login`) and the shells it started (`bash -l`, `bash -i`, `sh -l`) or files it sourced
give the shell start-up files it would read (`startup`, whether they exist or not); the Python logs give
the interpreter's argv, the main script or module with sys.path[0], code it executed and who imported
it, files it opened, processes it spawned; the pytest logs give rootdir, inifile, confcutdir, the
conftests loaded and the files collected, from which `conftest_folders`/`ini_folders` say where pytest
would also load a planted conftest.py or pytest.ini (its own rules, pytest 7 and 8).
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from typing import Any, Literal

from pydantic import BaseModel, Field

from qaflow.audit.git_history import GitLeak
from qaflow.audit.observer_files import BASH_ENV_FILE, OBSERVE_DIR, SEP
from qaflow.audit.trace import VerifierTrace
from qaflow.trial.effects import Effect

How = Literal[
    "run", "import", "read", "write", "arg", "conftest", "sitecustomize", "syspath", "collect", "path_lookup", "startup"
]
_SKIP = ("/proc/", "/sys/", "/dev/", "/tests/", "/logs/")
_SHELL_WORDS = (
    "[ [[ ]] echo printf test true false cd export set unset local read return exit shift source . eval exec "
    "trap wait declare typeset readonly let shopt pushd popd dirs command type hash builtin getopts umask "
    "alias unalias break continue if then else elif fi for while until do done case esac function time "
    "mapfile readarray compgen complete enable help history jobs kill logout suspend ulimit caller times"
)
_NOT_PROGRAMS = frozenset(_SHELL_WORDS.split(" "))
SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/var", "/run", "/root")
"""Where the image's toolchain lives: agent-writable trusted inputs there (an agent that runs as root)
are a property of the shared verifier mode, reported once per pool, never per task."""
MAX_PATHS = 3000


class Access(BaseModel):
    """One path the observed verifier touched, and how (several ways at once are common)."""

    path: str
    how: list[How]
    by: list[str] = Field(default_factory=list, description="The verifier files (or programs) that touched it")
    exists: bool = False
    is_dir: bool = False
    writable: bool = False
    """The agent user can write it, or replace it (write to the folder it is in)."""
    readable: bool = False
    """The agent user can read it (as the oracle left the sandbox)."""
    creatable: bool = False
    """It does not exist and the agent user can create it (the nearest folder above it that exists is writable)."""
    owner: Literal["task", "system"] = "system"
    """task: under the workdir or a Dockerfile COPY/ADD destination (or outside the system folders)."""


def is_answer_candidate(access: Access) -> bool:
    """A task-owned file the verifier read (or named as an argument) that the agent can read."""
    return (
        access.exists
        and not access.is_dir
        and access.readable
        and access.owner == "task"
        and bool({"read", "arg"} & set(access.how))
        and not access.path.startswith(("/solution/", "/tests/", "/logs/"))
    )


class PytestRun(BaseModel):
    rootdir: str
    inifile: str | None = None
    confcutdir: str | None = None
    args: list[str] = Field(default_factory=list)
    cwd: str = ""
    noconftest: bool = False
    conftests: list[str] = Field(default_factory=list)
    collected: list[str] = Field(default_factory=list)


class PythonRun(BaseModel):
    argv: list[str]
    cwd: str
    main: str | None = None
    """The script (path) or module (name) it ran."""
    path0: str | None = None
    """sys.path[0] when the main code started (script folder, or the cwd for -m and -c)."""
    site: list[str] = Field(default_factory=list)
    user_site: str | None = None
    """The user site folder when this Python had it on (no `-s`, no PYTHONNOUSERSITE): a `.pth` there runs."""
    imports: list[str] = Field(default_factory=list, description="Top-level modules the main code imported")


class ScriptRun(BaseModel):
    """A script a traced bash ran by path (`bash /app/check.sh x`, `/app/check.sh x`), as it ran it."""

    script: str
    argv: list[str]
    cwd: str


MAX_SCRIPT_RUNS = 50


class Replay(BaseModel):
    """A script's standard output (at most `MAX_REPLAY_BYTES`) and exit status."""

    stdout: str
    exit: int


MAX_REPLAY_BYTES = 16 * 1024


class DecodeStep(BaseModel):
    """A decoding command the reference solution ran (`qaflow.audit.exploits.decodes`), as traced (words expanded), and
    where."""

    command: str
    cwd: str = "/"
    inputs: list[str] = Field(default_factory=list, description="The absolute paths among its arguments")
    stdin: bool = Field(False, description="It names no file to decode: it read a pipe (`openssl ... | tar x`)")


class Observation(BaseModel):
    """What the verifier read, ran and loaded on the oracle's final state (see the module doc)."""

    observed: bool = False
    why_not: str | None = None
    accesses: list[Access] = Field(default_factory=list)
    pytest: list[PytestRun] = Field(default_factory=list)
    python: list[PythonRun] = Field(default_factory=list)
    shell_commands: int = 0
    scripts: list[ScriptRun] = Field(default_factory=list, description="Scripts the verifier's bash ran by path")
    oracle_reads: list[str] = Field(
        default_factory=list,
        description="Task-owned files the reference solution read or named as an argument (observed the same "
        "way, in the same trial): its inputs, or the verifier's answer where it copies one",
    )
    oracle_decodes: list[DecodeStep] = Field(
        default_factory=list,
        description="The reference solution's decoding steps (decryption, decoding, unpacking), in order",
    )
    leftovers: list[str] = Field(
        default_factory=list,
        description="Compiled Python files in the task's folders whose source is gone, before the agent starts",
    )
    agent_user: str | None = None
    programs: list[str] = Field(
        default_factory=list, description="Programs the verifier's shells ran by name, that PATH resolved"
    )
    root_writable: bool = False
    """The agent user can write `/` itself (a root agent): `/conftest.py` and `/pytest.ini` are its to plant."""
    duration_s: float = 0.0
    digests: dict[str, str] = Field(
        default_factory=dict,
        description="sha256 of the task-owned files the verifier read (as the oracle left them): a reference "
        "output equal to one of them is an answer baked into the image (`qaflow.audit.exploits.answers`)",
    )
    loose_digests: dict[str, str] = Field(
        default_factory=dict,
        description="sha256 of the same files with every whitespace byte removed (`qaflow.trial.effects.loose_bytes`): "
        "an answer that differs from the output only in spacing or line ends",
    )
    git_leaks: list[GitLeak] = Field(
        default_factory=list, description="Reference outputs found in a readable .git history in the image"
    )
    replays: dict[str, Replay] = Field(
        default_factory=dict,
        description="What each task-owned Python or shell script the verifier ran printed when run again on the "
        "oracle's final state (a shim that prints it passes verifiers that read the grader's output)",
    )
    reruns: list[bool] = Field(
        default_factory=list,
        description="Whether each untraced rerun of the verifier on the same final state gave full reward",
    )
    output_digests: dict[str, str] = Field(
        default_factory=dict,
        description="sha256 of the outputs the first oracle run wrote (the probe's `outputs`), as this run's "
        "reference solution left them: a path missing or different means the solution's result varies",
    )
    opaque_programs: list[str] | None = Field(
        None,
        description="Programs the verifier ran whose file reads the observer cannot see (not Python, not a "
        "traced bash, not a tool that takes its files as visible arguments); None when not recorded",
    )

    def reads_all_seen(self) -> bool:
        """Whether every file the verifier's processes read shows in `accesses` (observed, no opaque program)."""
        return self.observed and self.opaque_programs == []

    def touched(self, path: str) -> bool:
        """Whether the verifier took `path`, or a folder above it, in a way other than writing it."""
        for a in self.accesses:
            if set(a.how) - {"write"} and (a.path == path or (a.is_dir and path.startswith(a.path.rstrip("/") + "/"))):
                return True
        return False

    trace: VerifierTrace | None = Field(
        None, description="Every process of the verifier's run at the system-call level (`qaflow.audit.trace`)"
    )
    trace_access: dict[str, Access] = Field(
        default_factory=dict, description="Whether the agent user can write or create each task-owned traced path"
    )
    kept: dict[str, str] = Field(
        default_factory=dict,
        description="What the files the verifier appended to (or wrote without truncating) held after its run",
    )
    outputs: dict[str, str] = Field(
        default_factory=dict,
        description="What the files a program the verifier started (not test.sh itself) wrote held after the run, "
        "where they were left: what the work produced at verify time (`qaflow.audit.mutants.output`)",
    )

    def get(self, path: str) -> Access | None:
        return next((a for a in self.accesses if a.path == path), None)

    def trusted(self, owner: str = "task") -> list[Access]:
        """Agent-writable paths the verifier ran, imported or read, of that owner."""
        return [a for a in self.accesses if a.writable and a.exists and a.owner == owner]

    def brief(self, limit: int = 40) -> dict[str, Any]:
        """The evidence view: what the verifier took from places the agent can write."""

        def row(a: Access) -> dict[str, Any]:
            return {"path": a.path, "how": a.how, "by": a.by[:3], "owner": a.owner}

        places = {"conftest", "syspath", "sitecustomize", "collect"}
        touched = [a for a in self.accesses if a.exists and a.writable and (not a.is_dir or places & set(a.how))]
        return {
            "observed": self.observed,
            "why_not": self.why_not,
            "agent_writable_inputs": [row(a) for a in touched if a.owner == "task"][:limit],
            "agent_writable_system": [row(a) for a in touched if a.owner == "system" and not a.is_dir][:limit],
            "pytest": [p.model_dump(exclude_defaults=True) for p in self.pytest][:6],
            "python": [{"argv": p.argv[:8], "cwd": p.cwd, "path0": p.path0} for p in self.python][:10],
            "shell_commands": self.shell_commands,
            "read_by_both": [p for p in self.oracle_reads if (a := self.get(p)) and {"read", "arg"} & set(a.how)][
                :limit
            ],
        }


class Seen:
    def __init__(self) -> None:
        self.paths: dict[str, tuple[set[str], set[str]]] = {}
        self.names: dict[str, set[str]] = {}

    def add(self, path: str, how: str, by: str | None, cwd: str = "/") -> None:
        if not path:
            return
        path = posixpath.normpath(posixpath.join(cwd or "/", path))
        if path.startswith(_SKIP) or path.startswith(OBSERVE_DIR) or path in ("/", "/tests", "/logs"):
            return
        hows, bys = self.paths.setdefault(path, (set(), set()))
        hows.add(how)
        if by:
            bys.add(by)

    def program(self, word: str, by: str | None, cwd: str) -> None:
        """A command word: a path is run as is, a bare name is resolved through PATH in the sandbox."""
        if "/" in word:
            self.add(word, "run", by, cwd)
        elif word and word not in _NOT_PROGRAMS and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            self.names.setdefault(word, set()).update([by] if by else [])


TRACE_LINE = re.compile(rf"^\++{SEP}([^{SEP}]*){SEP}([^{SEP}]*){SEP} (.*)$")
"""A line of the observer's shell trace: (the file it ran from, the folder, the command as run)."""


_TRANSPARENT_WORDS = (
    "bash cat diff cmp grep egrep fgrep sed awk gawk mawk jq head tail wc sort uniq test [ ls stat sha256sum "
    "sha1sum sha512sum md5sum cksum cut tr paste comm join nl od xxd hexdump file basename dirname realpath "
    "readlink mkdir rm rmdir cp mv touch chmod chown ln echo printf true false tee seq expr date sleep find "
    "pwd id whoami rev fold fmt column iconv base64 du df"
)
TRANSPARENT = frozenset(_TRANSPARENT_WORDS.split())
"""Programs that read only the files their (traced) arguments name, so the observer sees what they read."""
WRAPPERS = frozenset({"env", "timeout", "nice", "nohup", "stdbuf", "time", "command", "exec", "builtin", "sudo"})


def _opaque(program: str) -> bool:
    name = posixpath.basename(program)
    return not (name in TRANSPARENT or name in _NOT_PROGRAMS or re.fullmatch(r"python[\d.]*", name))


def _program_words(words: list[str]) -> list[str]:
    """The program word and, through wrappers (`timeout 10 node x.js`, `env A=1 cmd`), the programs they run."""
    out: list[str] = []
    rest = list(words)
    while rest:
        word = rest.pop(0)
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word) or (out and (word.startswith("-") or word[:1].isdigit())):
            continue
        out.append(word)
        if posixpath.basename(word) not in WRAPPERS:
            break
    return out


def parse_logs(logs: dict[str, str], seen: Seen, obs: Observation) -> None:
    """Fold the observer's log files into `seen` (paths, names) and `obs` (pytest and python runs)."""
    if obs.opaque_programs is None:
        obs.opaque_programs = []
    for name, text in logs.items():
        if name.startswith("sh."):
            _parse_trace(text, seen, obs)
        elif name.startswith("py."):
            _parse_python(text, seen, obs)
        elif name.startswith("pytest."):
            _parse_pytest(text, seen, obs)


def _parse_trace(text: str, seen: Seen, obs: Observation) -> None:
    home = ""
    for line in text.splitlines():
        if line.startswith("#start" + SEP):
            fields = line.split(SEP)
            home = fields[1] if len(fields) > 1 and fields[1].startswith("/") else ""
            if home and len(fields) > 2 and fields[2] == "login":
                for path in (SYSTEM_STARTUP_FILES[("bash", "login")], posixpath.join(home, ".bash_profile")):
                    seen.add(path, "startup", None)
            continue
        m = TRACE_LINE.match(line)
        if not m:
            continue
        source, cwd, command = m.groups()
        if source == BASH_ENV_FILE:  # the observer's own lines: only the image's BASH_ENV file counts
            words = command.split(maxsplit=2)
            if len(words) > 1 and words[0] == ".":
                seen.add(words[1], "startup", None, cwd)
            elif len(words) > 2 and words[:2] == [":", "startup"]:  # named but absent: the agent may create it
                seen.add(words[2], "startup", None, cwd)
            continue
        obs.shell_commands += 1
        if source:
            seen.add(source, "run", None, cwd)
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
        if not words:
            continue
        seen.program(words[0], source or None, cwd)
        _startup_files(words, home, cwd, source or None, seen)
        _note_opaque(obs, [w for w in _program_words(words) if _opaque(w)])
        _script_run(words, cwd, source or None, seen, obs)
        _pytest_targets(words, cwd, source or None, seen)
        for word in words[1:]:
            for part in word.split("=", 1)[-1:]:
                if part.startswith(("/", "./", "../")) or ("/" in part and not part.startswith("-")):
                    seen.add(part, "arg", source or None, cwd)


STARTUP_FILES = {("bash", "login"): ".bash_profile", ("bash", "interactive"): ".bashrc", ("sh", "login"): ".profile"}
"""The home file each kind of shell reads at start-up (a login bash reads the first of ~/.bash_profile,
~/.bash_login and ~/.profile that exists: one planted at ~/.bash_profile comes first)."""
SYSTEM_STARTUP_FILES = {
    ("bash", "login"): "/etc/profile",
    ("bash", "interactive"): "/etc/bash.bashrc",
    ("sh", "login"): "/etc/profile",
}
"""The system-wide file each kind reads before its home file (Debian's `/etc/profile` also sources
`/etc/profile.d/*.sh`): a root agent can write them."""


def _startup_files(words: list[str], home: str, cwd: str, by: str | None, seen: Seen) -> None:
    """The start-up files a command makes a shell read: a file it sources (`source F`, `. F`), and the home
    file of a login or interactive shell it starts (`bash -l`, `bash --login`, `bash -i`, `sh -l`)."""
    if words[0] in ("source", ".") and len(words) > 1:
        seen.add(words[1], "startup", by, cwd)
        return
    shell = {"bash": "bash", "sh": "sh", "dash": "sh"}.get(posixpath.basename(words[0]))
    if shell is None or not home:
        return
    kinds: set[str] = set()
    for word in words[1:]:
        if word == "--login":
            kinds.add("login")
        elif word.startswith("-") and not word.startswith("--") and word[1:].isalpha():
            kinds |= {"login"} if "l" in word else set()
            kinds |= {"interactive"} if "i" in word else set()
            if "c" in word:
                break
        elif not word.startswith("-"):
            break
    for kind in sorted(kinds):
        name = STARTUP_FILES.get((shell, kind))
        if name:
            seen.add(SYSTEM_STARTUP_FILES[(shell, kind)], "startup", by)
            seen.add(posixpath.join(home, name), "startup", by)


def _pytest_targets(words: list[str], cwd: str, by: str | None, seen: Seen) -> None:
    """The folders of the test files (and the folders) a pytest command line names: pytest imports the
    `__init__.py` there with the tests. Read off the command, so a Python that runs unobserved (`-I`)
    is covered too; what does not exist is dropped when the paths are classified."""
    name = posixpath.basename(words[0])
    if name in ("pytest", "py.test"):
        rest = words[1:]
    elif name.startswith("python") and "pytest" in words and words[words.index("pytest") - 1] == "-m":
        rest = words[words.index("pytest") + 1 :]
    else:
        return
    for word in rest:
        target = word.split("::", 1)[0]
        if not target or target.startswith("-") or "=" in target:
            continue
        path = posixpath.normpath(posixpath.join(cwd or "/", target))
        seen.add(posixpath.dirname(path) if target.endswith(".py") else path, "collect", by, "/")


def _script_run(words: list[str], cwd: str, by: str | None, seen: Seen, obs: Observation) -> None:
    """A script run by path: `sh x.sh` runs x.sh (dash is not traced, so this is all that shows it)."""
    shell = posixpath.basename(words[0]) in ("bash", "sh", "dash")
    script = words[1] if shell and len(words) > 1 and not words[1].startswith("-") else None
    if not shell and "/" in words[0]:
        script = words[0]
    if script is None or posixpath.splitext(script)[1] == ".py":
        return
    path = posixpath.normpath(posixpath.join(cwd or "/", script))
    seen.add(path, "run", by, "/")
    if len(obs.scripts) < MAX_SCRIPT_RUNS and not any(r.script == path for r in obs.scripts):
        obs.scripts.append(ScriptRun(script=path, argv=words, cwd=cwd or "/"))


def _note_opaque(obs: Observation, programs: list[str]) -> None:
    if obs.opaque_programs is None:
        obs.opaque_programs = []
    for program in programs:
        if program not in obs.opaque_programs and len(obs.opaque_programs) < 50:
            obs.opaque_programs.append(program)


def _records(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _parse_python(text: str, seen: Seen, obs: Observation) -> None:
    recs = _records(text)
    start = next((r for r in recs if r.get("k") == "start"), None)
    if start is None:
        return
    libs = tuple(str(p).rstrip("/") + "/" for p in start.get("libs", []) + start.get("site", []) if p)
    run = PythonRun(
        argv=[str(a) for a in start.get("argv", [])],
        cwd=str(start.get("cwd", "/")),
        site=start.get("site", []),
        user_site=start.get("usersite") or None,
    )
    for site in start.get("site", []):
        seen.add(str(site), "sitecustomize", "python", "/")  # where a .pth or sitecustomize would load from
    exe = start.get("exe")
    if exe:
        seen.add(str(exe), "run", None, "/")
    main_file: str | None = None
    for rec in recs:
        kind, path = rec.get("k"), rec.get("p")
        if kind == "main":
            main_file = path
            run.main = path or rec.get("m")
            search = rec.get("path") or []
            run.path0 = search[0] if search else None
            if path and not path.startswith("<"):
                seen.add(path, "run", "python", run.cwd)
            if run.path0:
                seen.add(run.path0, "syspath", "python", "/")  # modules are looked up there first
        elif kind == "exec" and path and not str(path).startswith(libs):
            by = rec.get("by")
            seen.add(path, "import", by, run.cwd)
            if main_file and by == main_file:
                run.imports.append(posixpath.splitext(posixpath.basename(path))[0])
        elif kind == "exec" and path and main_file and rec.get("by") == main_file:
            rel = str(path)
            for lib in libs:
                if rel.startswith(lib):
                    rel = rel[len(lib) :]
                    break
            run.imports.append(rel.split("/", 1)[0].removesuffix(".py"))
        elif kind == "open" and path and not str(path).startswith(libs) and "/__pycache__/" not in str(path):
            seen.add(path, "write" if rec.get("w") else "read", main_file or "python", run.cwd)
        elif kind == "spawn":
            argv = [str(a) for a in rec.get("argv") or []]
            exe = rec.get("exe")
            word = exe if exe and "/" in exe else (argv[0] if argv else exe)
            if word:
                seen.program(str(word), main_file, str(rec.get("cwd") or run.cwd))
                # a program Python starts gets its arguments untraced: only Python and bash are seen inside
                name = posixpath.basename(str(word))
                if not (name == "bash" or re.fullmatch(r"python[\d.]*", name)):
                    _note_opaque(obs, [str(word)])
        elif kind == "sitecustomize" and path:
            seen.add(path, "import", "python", "/")
    run.imports = list(dict.fromkeys(m for m in run.imports if m and m.isidentifier()))
    obs.python.append(run)


def _parse_pytest(text: str, seen: Seen, obs: Observation) -> None:
    current: PytestRun | None = None
    for rec in _records(text):
        kind = rec.get("k")
        if kind == "pytest":
            current = PytestRun(
                rootdir=str(rec.get("rootdir")),
                inifile=rec.get("inifile"),
                confcutdir=rec.get("confcutdir"),
                args=[str(a) for a in rec.get("args") or []],
                cwd=str(rec.get("cwd") or "/"),
                noconftest=bool(rec.get("noconftest")),
            )
            obs.pytest.append(current)
            if current.inifile:
                seen.add(current.inifile, "conftest", "pytest", "/")
        elif current is not None and kind == "conftest" and rec.get("p"):
            current.conftests.append(str(rec["p"]))
            seen.add(str(rec["p"]), "conftest", "pytest", "/")
        elif current is not None and kind == "collected":
            current.collected = [str(f) for f in rec.get("files") or []]
            for folder in {posixpath.dirname(f) for f in current.collected}:
                seen.add(folder, "collect", "pytest", "/")  # its __init__.py is imported with the tests
    for run in obs.pytest:
        for folder in conftest_folders(run) + ini_folders(run):
            seen.add(folder, "conftest", "pytest", "/")


def conftest_folders(run: PytestRun) -> list[str]:
    """Folders whose conftest.py this pytest run would load: those of the collected files and of its
    arguments, and every folder above them down from its confcutdir (all the way up when none)."""
    if run.noconftest:
        return []
    anchors = {posixpath.dirname(f) for f in run.collected}
    for arg in run.args:
        path = posixpath.normpath(posixpath.join(run.cwd, arg.split("::", 1)[0]))
        anchors.add(path if not posixpath.splitext(path)[1] else posixpath.dirname(path))
    cut = run.confcutdir
    folders: set[str] = set()
    for anchor in anchors:
        folder = anchor
        while True:
            if cut is None or folder == cut or folder.startswith(cut.rstrip("/") + "/"):
                folders.add(folder)
            if folder == "/":
                break
            folder = posixpath.dirname(folder)
    return sorted(folders)


def ini_folders(run: PytestRun) -> list[str]:
    """With no inifile, pytest looks for one upwards from its rootdir: a pytest.ini planted in any
    folder above it makes that folder the rootdir (and the confcutdir), so its conftest.py loads."""
    if run.inifile or run.noconftest:
        return []
    folders, folder = [], posixpath.dirname(run.rootdir.rstrip("/") or "/")
    while folder not in folders:
        folders.append(folder)
        folder = posixpath.dirname(folder)
    return folders


MAX_MODULES = 4
"""The work's modules the in-process probes (and edge mutants) take, at most."""


def imported_modules(observation: Observation, effect: Effect | None) -> dict[str, bytes]:
    """The Python modules the reference solution wrote that the verifier's processes imported (by a file
    the oracle did not write), with the oracle's content: path -> bytes."""
    if effect is None or not effect.ok or not observation.observed:
        return {}
    written = {c.path: c.content for c in effect.written if c.file_type == "file" and c.content is not None}
    found: dict[str, bytes] = {}
    for a in observation.accesses:
        if "import" not in a.how or not a.path.endswith(".py") or a.path not in written:
            continue
        if any(b not in written for b in a.by) or not a.by:
            found[a.path] = written[a.path] or b""
    return dict(sorted(found.items())[:MAX_MODULES])
