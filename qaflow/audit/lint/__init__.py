"""Probe 1, lint: static checks of a task folder, no sandbox (milliseconds per task).

- timeouts not set explicitly in task.toml (`lint` warning);
- a verifier that never mentions `/logs/verifier/reward.txt|json` (`lint` warning; the tamper probe decides);
- leaks (`leak`): files the image gets from environment/ (COPY/ADD, step workdirs) that equal or nearly
  equal a file of tests/ or solution/; a Dockerfile copying the task's tests or solution; configured
  canary strings where the agent can see them; and, as warnings, an instruction naming /tests or
  /solution paths (a leak only when the hidden-link exploit uses it, `qaflow.audit.exploits.hidden_links`) and
  expected values of the tests quoted in the instruction;
- requirements declared in `[metadata.qaflow]` that no check reaches (`unverified_requirement`, see coverage.py).
"""

from __future__ import annotations

import posixpath
import re
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, Field

from qaflow.audit.lint.coverage import coverage_findings
from qaflow.audit.lint.similarity import (
    copy_words,
    dockerignore_patterns,
    dockerignored,
    expected_values,
    heredocs,
    in_source,
    is_code,
    is_test_code,
    looks_like_answer,
    normalise_lines,
    similarity,
)
from qaflow.audit.lint.verifier import verifier_findings
from qaflow.errors import QaflowError
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode, Severity
from qaflow.sandbox.dockerfile import Copy, plan_build
from qaflow.task import Task, _walk_files
from qaflow.text import dockerfile_logical_lines, utf8_text

BUILD_FILES = frozenset({"dockerfile", ".dockerignore", "docker-compose.yaml", "docker-compose.yml", ".gitkeep"})
ANSWER_WORDS = ("expect", "answer", "solution", "solve", "gold", "truth", "correct", "oracle", "output", "result")
HIDDEN_DIRS = frozenset({"tests", "solution"})
SOLUTION_NAMES = frozenset({"solve.sh", "solve.bat", "solution.sh", "run-tests.sh"})
MANIFEST_RE = re.compile(
    r"requirements[\w.-]*\.txt|pyproject\.toml|setup\.cfg|package(-lock)?\.json|tsconfig\.json|Cargo\.(toml|lock)"
    r"|go\.(mod|sum)|(uv|poetry|yarn|pnpm-lock)\.(lock|yaml)|Gemfile(\.lock)?|\.gitignore|LICENSE(\.\w+)?"
)
REWARD_RE = re.compile(r"reward\.(txt|json)\b|\brewardkit\b", re.IGNORECASE)
HIDDEN_PATH_RE = re.compile(
    r"(?<![\w.~$/:-])/(tests|solution)(?:/(?:[\w.*/-]*[\w*/-])?)?(?=$|[\s`'\")\],;:!?]|\.(?:\s|$))", re.MULTILINE
)
EXAMPLE_RE = re.compile(r"example|e\.g\.|for instance|such as|sample", re.IGNORECASE)


class LintConfig(BaseModel):
    canaries: list[str] = Field(default_factory=list, description="Strings that must never reach the agent")
    similarity_threshold: float = Field(0.9, ge=0.0, le=1.0, description="Near-duplicate test files at or above")
    max_file_bytes: int = Field(256 * 1024, ge=1, description="Larger files are compared for equality only")
    min_file_bytes: int = Field(40, ge=0, description="Smaller files are never compared")
    min_literal_chars: int = Field(12, ge=1, description="Shortest expected string flagged in the instruction")


@dataclass
class _File:
    rel: str
    data: bytes
    part: str = ""
    name: str = ""
    suffix: str = ""

    @cached_property
    def text(self) -> str | None:
        return utf8_text(self.data)

    @cached_property
    def stripped(self) -> bytes:
        return self.data.strip()

    @cached_property
    def lines(self) -> list[str]:
        return normalise_lines(self.text or "")

    @cached_property
    def code_lines(self) -> list[str]:
        """Lines without comments: equal code lines mean the same program."""
        return normalise_lines(self.text or "", drop_comments=True)

    @property
    def label(self) -> str:
        return f"{self.rel} ({self.part})" if self.part else self.rel


def lint_task(task: Task, config: LintConfig | None = None) -> list[AuditFinding]:
    config = config or LintConfig()
    env, hidden = _Environment(task), _hidden_files(task)
    findings = _timeouts(task) + _reward_writes(task)
    findings += _copied_hidden_files(task, env, hidden, config)
    findings += _dockerfile_copies(env)
    findings += _instruction_paths(task)
    findings += _instruction_answers(task, env, hidden, config)
    findings += _canaries(task, env, config)
    findings += coverage_findings(task)
    findings += verifier_findings(task, _step_dirs(task, "tests"))
    return findings


def _rel(task: Task, path: Path) -> str:
    return path.relative_to(task.path).as_posix()


def _read(task: Task, path: Path) -> _File | None:
    if not stat.S_ISREG(path.lstat().st_mode):
        return None
    return _File(_rel(task, path), path.read_bytes(), name=path.name, suffix=path.suffix.lower())


def _files(task: Task, folders: list[Path]) -> list[_File]:
    found = []
    for folder in folders:
        for path in _walk_files(folder) if folder.is_dir() else []:
            file = _read(task, path)
            if file is not None:
                found.append(file)
    return found


def _step_dirs(task: Task, sub: str) -> list[Path]:
    steps = task.config.steps or []
    return [task.path / sub] + [task.path / "steps" / s.name / sub for s in steps]


def _instruction_files(task: Task) -> list[Path]:
    if task.config.steps:
        return [task.path / "steps" / s.name / "instruction.md" for s in task.config.steps]
    return [task.path / "instruction.md"]


# --- task.toml and the verifier ---------------------------------------------------------------


def _timeouts(task: Task) -> list[AuditFinding]:
    findings = []
    for phase in ("agent", "verifier"):
        top = getattr(task.config, phase)
        if "timeout_sec" in top.model_fields_set:
            continue
        steps = task.config.steps or []
        unset = [s.name for s in steps if "timeout_sec" not in getattr(s, phase).model_fields_set]
        if steps and not unset:
            continue
        where = f"[{phase}] timeout_sec" + (f" (and in steps {', '.join(unset)})" if steps else "")
        findings.append(
            AuditFinding(
                code=FindingCode.LINT,
                severity=Severity.WARNING,
                message=f"task.toml does not set {where}: the harness default (600 s) applies; "
                f"set an explicit bound that fits the task",
                evidence={"file": "task.toml", "field": f"{phase}.timeout_sec", "steps": unset},
            )
        )
    return findings


def _reward_writes(task: Task) -> list[AuditFinding]:
    """Each verifier (per step: its tests/ merged with the top tests/) should name the reward file somewhere."""
    verifiers: dict[str, tuple[Path, ...]] = {}
    for folder in _step_dirs(task, "tests")[1:] or [task.tests_dir]:
        dirs = (folder, task.tests_dir) if folder != task.tests_dir else (folder,)
        entry = next((d / n for d in dirs for n in ("test.sh", "test.bat") if (d / n).is_file()), None)
        if entry is not None:
            verifiers.setdefault(_rel(task, entry), dirs)
    findings = []
    for verifier, searched in verifiers.items():
        texts = [f.text or "" for f in _files(task, [d for d in searched if d.is_dir()])]
        if any(REWARD_RE.search(t) or ("/logs/verifier" in t and "reward" in t) for t in texts):
            continue
        findings.append(
            AuditFinding(
                code=FindingCode.LINT,
                severity=Severity.WARNING,
                message=f"{verifier} does not appear to write a reward: no verifier file mentions "
                "/logs/verifier/reward.txt or reward.json; write 1 or 0 there on every path, failure included",
                evidence={"file": verifier, "searched": sorted({_rel(task, d) for d in searched})},
            )
        )
    return findings


# --- the image: what the agent can read ------------------------------------------------------


class _Environment:
    """environment/ files, which of them the Dockerfile puts in the image, and its COPY lines."""

    def __init__(self, task: Task):
        self.files = _files(task, [task.environment_dir])
        self.workdir = _files(task, [d for d in _step_dirs(task, "workdir")[1:]])
        self.copies: list[tuple[str, list[str], str]] = []  # (line, sources, destination)
        self.in_image: dict[str, str] = {f.rel: "uploaded to the workdir before the agent runs" for f in self.workdir}
        text = task.dockerfile.read_text(encoding="utf-8", errors="replace") if task.dockerfile.is_file() else ""
        self.dockerfile_lines = dockerfile_logical_lines(text)
        ignored = dockerignore_patterns(task.environment_dir / ".dockerignore")
        for line in self.dockerfile_lines:
            words = copy_words(line)
            if len(words) < 2:
                continue
            sources = [s for s in words[:-1] if "://" not in s and not s.startswith("<<")]
            self.copies.append((line, sources, words[-1]))
            for file in self.files:
                inner = file.rel.removeprefix("environment/")
                if any(in_source(inner, s) for s in sources) and not dockerignored(inner, ignored):
                    self.in_image.setdefault(file.rel, line)

    def compared(self) -> list[_File]:
        return [f for f in self.files + self.workdir if f.name.lower() not in BUILD_FILES]


def _hidden_files(task: Task) -> list[tuple[str, _File]]:
    """tests/ and solution/ files (steps included) and the heredoc bodies of their scripts."""
    found: list[tuple[str, _File]] = []
    for role in ("tests", "solution"):
        for file in _files(task, _step_dirs(task, role)):
            if file.name.lower() in BUILD_FILES:
                continue
            found.append((role, file))
            text = file.text
            if text and file.suffix in ("", ".sh", ".bash") and "<<" in text:
                for line, suffix, body in heredocs(text):
                    found.append((role, _File(file.rel, body.encode(), f"heredoc at line {line}", "", suffix)))
    return found


def _answer_like(name: str) -> bool:
    words = re.split(r"[^a-z0-9]+", name.lower())
    return any(w.startswith(a) for w in words for a in ANSWER_WORDS)


def _match(
    env: _File, hidden: _File, role: str, named: str, instruction: str, config: LintConfig
) -> tuple[float, str] | None:
    """(similarity, how) when `env` gives the agent `hidden`'s content, else None."""
    if min(len(env.stripped), len(hidden.stripped)) < config.min_file_bytes or env.text is None or hidden.text is None:
        return None
    code = is_code(hidden.suffix) or is_code(env.suffix)
    if role == "solution" and code and only_installs(env.code_lines):
        return None  # a setup step shared with the solution (installs, no answer in it)
    test_code = role == "tests" and is_test_code(hidden.name, hidden.suffix, hidden.text)
    if env.stripped == hidden.stripped:
        return None if not test_code and _kept_input(env, hidden, role, named, instruction) else (1.0, "identical to")
    if max(len(env.data), len(hidden.data)) > config.max_file_bytes:
        return None
    if test_code:
        score = similarity(env.lines, hidden.lines, floor=config.similarity_threshold)
        return (score, "nearly identical to") if score >= config.similarity_threshold else None
    if (
        code
        and env.code_lines
        and env.code_lines == hidden.code_lines
        and not _kept_input(env, hidden, role, named, instruction)
    ):
        return similarity(env.lines, hidden.lines), "the same code as"
    return None


_INSTALL_LINE = re.compile(
    r"(?:sudo\s+)?(?:(?:python3?|\S*/python3?)\s+-m\s+)?"
    r"(?:pip3?|uv(?:\s+pip)?|apt(?:-get)?|npm|yarn|pnpm|conda|mamba|micromamba|poetry|gem|cargo|go|apk)"
    r"\s+(?:install|add|sync|update|upgrade|-y\s+install|ci|get)\b.*"
)
_SETUP_LINE = re.compile(
    r"#!.*|set\s+-[euxo\s\w]+|cd\s+\S+|export\s+\w+=\S*|echo\b.*|mkdir\s+(?:-p\s+)?\S+|source\s+\S+|\.\s+\S+"
    r"|(?:rm\s+-rf\s+/var/lib/apt/lists/\*)|(?:python3?\s+-m\s+venv\s+\S+)|true|exit\s+0"
)


def only_installs(code_lines: list[str]) -> bool:
    """Whether a script only installs dependencies (package installs, venvs, cd/set/echo around them):
    the same script in the image and in solution/ is a shared setup step, not the reference solution."""
    commands = [part.strip() for line in code_lines for part in re.split(r"\s*(?:&&|;|\|\|)\s*", line)]
    commands = [c.rstrip("\\").strip() for c in commands if c.strip() and c.strip() != "\\"]
    installs = [c for c in commands if _INSTALL_LINE.fullmatch(c)]
    return bool(installs) and all(_INSTALL_LINE.fullmatch(c) or _SETUP_LINE.fullmatch(c) for c in commands)


def _kept_input(env: _File, hidden: _File, role: str, named: str, instruction: str) -> bool:
    """A hidden copy of an input, telling nothing new: of the same name, a file the solution's tree leaves
    unchanged, a dependency manifest, or the verifier's pristine copy of an input that the instruction or
    the solution names (a planted answer or verifier script is named by neither); of another name that is
    not an answer's, the verifier's copy of an input the instruction names."""
    if _answer_like(env.name) or env.name in SOLUTION_NAMES:
        return False
    if hidden.name != env.name:
        return role == "tests" and not _answer_like(hidden.name) and _names(instruction, env.name)
    return role == "solution" or MANIFEST_RE.fullmatch(env.name) is not None or _names(named, env.name)


def _handed_over(task: Task, env: _Environment) -> set[str]:
    """environment/ files the instruction hands the agent: the Dockerfile copies each to a path that is, or lies
    in, a folder the instruction names (never the root, the workdir or a top-level folder), and its name is no
    answer's. Visible by design, so never a leak of the verifier's files of the same kind (an answer's copy of one
    still is): whether the verifier needs more than them is for its runs to show (mutants, instruction-overfit)."""
    try:
        plan = plan_build(task.dockerfile, task.environment_dir)
    except (QaflowError, OSError):
        return set()
    root = task.environment_dir.resolve()
    paths = {file.rel: (task.path / file.rel).resolve() for file in env.files}
    spots: dict[str, str] = {}
    for step in plan.steps:
        if not isinstance(step, Copy):
            continue
        for source in step.sources:
            for rel, path in paths.items():
                if path == source and path.is_file():
                    spots.setdefault(rel, posixpath.join(step.dest, path.name) if step.dest_is_dir else step.dest)
                elif source.is_dir() and path.is_relative_to(source) and source.is_relative_to(root):
                    spots.setdefault(rel, posixpath.join(step.dest, path.relative_to(source).as_posix()))
    workdir = posixpath.normpath(plan.workdir)
    given = set()
    for rel, spot in spots.items():
        name = posixpath.basename(spot)
        if _answer_like(name) or name in SOLUTION_NAMES:
            continue
        folder = posixpath.normpath(spot)
        while folder.count("/") >= 2 and folder != workdir:
            if re.search(rf"(?<![\w/.-]){re.escape(folder)}(?![\w-])", task.instruction):
                given.add(rel)
                break
            folder = posixpath.dirname(folder)
    return given


def _names(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


def _copied_hidden_files(
    task: Task, env: _Environment, hidden: list[tuple[str, _File]], config: LintConfig
) -> list[AuditFinding]:
    named = task.instruction + "".join(f.text or "" for role, f in hidden if role == "solution")
    given = _handed_over(task, env)
    findings = []
    for file in env.compared():
        matches = [
            (m, role, h)
            for role, h in hidden
            if not (file.rel in given and not _answer_like(h.name))
            and (m := _match(file, h, role, named, task.instruction, config))
        ]
        if not matches:
            continue
        (score, how), role, best = max(matches, key=lambda x: x[0][0])
        what = "reference solution" if role == "solution" else "verifier's tests and expected values"
        evidence = {"file": file.rel, "hidden_file": best.rel, "similarity": round(score, 3)}
        if best.part:
            evidence["hidden_part"] = best.part
        evidence["also_matches"] = sorted({h.label for _, _, h in matches if h is not best})
        seen = f"{file.rel} is {how} {best.label} (similarity {score:.2f})"
        if file.rel in env.in_image:
            evidence["copied_by"] = env.in_image[file.rel]
            message = f"{seen}: the agent can read the {what} in the image; remove it from the image"
            findings.append(AuditFinding(code=FindingCode.LEAK, message=message, evidence=evidence))
        else:
            message = f"{seen} but the Dockerfile does not copy it into the image; remove it from environment/"
            findings.append(
                AuditFinding(code=FindingCode.LINT, severity=Severity.WARNING, message=message, evidence=evidence)
            )
    return findings


def _dockerfile_copies(env: _Environment) -> list[AuditFinding]:
    """COPY/ADD of the task's tests or solution: absent from the build context, or aimed at /tests or /solution."""
    findings = []
    context = {f.rel.removeprefix("environment/") for f in env.files}
    for line, sources, dest in env.copies:
        for source in sources:
            path = posixpath.normpath(source.lstrip("/"))
            top, name = path.split("/")[0], path.rsplit("/", 1)[-1]
            if top not in HIDDEN_DIRS and name not in SOLUTION_NAMES:
                continue
            present = any(in_source(rel, source) for rel in context)
            into_hidden = posixpath.normpath(dest).split("/")[1:2] in (["tests"], ["solution"])
            if present and not into_hidden and name not in SOLUTION_NAMES and top != "solution":
                continue  # a tests/ folder of the build context: judged by its content above
            severity = Severity.WARNING if present and not into_hidden else Severity.ERROR
            why = "the build context has no such file, so this copies the task's own" if not present else "this puts"
            findings.append(
                AuditFinding(
                    code=FindingCode.LEAK,
                    severity=severity,
                    message=f"Dockerfile line {line!r}: {why} tests or solution into the image where the agent "
                    "can read them; remove the line (tests are uploaded to /tests only at verification)",
                    evidence={"file": "environment/Dockerfile", "line": line, "source": source, "destination": dest},
                )
            )
    return findings


# --- the instruction ------------------------------------------------------------------------


def _instruction_paths(task: Task) -> list[AuditFinding]:
    findings = []
    for path in _instruction_files(task):
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        hits = [(text.count("\n", 0, m.start()) + 1, m.group(0)) for m in HIDDEN_PATH_RE.finditer(text)]
        if not hits:
            continue
        shown = ", ".join(f"{p} (line {n})" for n, p in hits[:5])
        findings.append(
            AuditFinding(
                code=FindingCode.LINT,
                severity=Severity.WARNING,
                message=f"{_rel(task, path)} mentions {shown}: it points the agent at the verifier's tests or the "
                "reference solution, hidden from it during the task (a leak only where the audit's hidden-link "
                "exploit can use it); state the required behaviour instead",
                evidence={"file": _rel(task, path), "mentions": [{"line": n, "path": p} for n, p in hits]},
            )
        )
    return findings


def _instruction_answers(
    task: Task, env: _Environment, hidden: list[tuple[str, _File]], config: LintConfig
) -> list[AuditFinding]:
    """Expected values of the tests, found in no input, quoted in the instruction: a warning only,
    since instructions legitimately state formats (see `looks_like_answer`)."""
    values: set[str] = set()
    for role, file in hidden:
        if role == "tests" and (text := file.text):
            values.update(str(v) for v in expected_values(text, file.suffix))
    inputs = "\n".join(f.text or "" for f in env.files + env.workdir)
    candidates = []
    for value in sorted(values):
        if looks_like_answer(value, config.min_literal_chars) and value not in inputs:
            number = value[-1].isdigit() and value.lstrip("-").replace(".", "", 1).isdigit()
            candidates.append(
                (value, re.compile(rf"(?<![\w.]){re.escape(value)}(?!\w|\.\d)" if number else re.escape(value)))
            )
    findings = []
    for path in _instruction_files(task):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.is_file() else []
        quoted = sorted({v for v, rx in candidates for ln in lines if rx.search(ln) and not EXAMPLE_RE.search(ln)})
        if quoted:
            shown = ", ".join(repr(v) for v in quoted[:5])
            findings.append(
                AuditFinding(
                    code=FindingCode.LEAK,
                    severity=Severity.WARNING,
                    message=f"{_rel(task, path)} quotes {shown}, which the tests expect and no input file holds: "
                    "the instruction may give the answer away; state the format, not the value",
                    evidence={"file": _rel(task, path), "values": quoted},
                )
            )
    return findings


def _canaries(task: Task, env: _Environment, config: LintConfig) -> list[AuditFinding]:
    if not config.canaries:
        return []
    files = [f for f in env.files + env.workdir if f.name.lower() != "dockerfile"]
    sources = [(f.rel, f.data.decode("utf-8", "replace")) for f in files]
    sources.append(("environment/Dockerfile", "\n".join(env.dockerfile_lines)))
    sources += [(_rel(task, p), p.read_text(encoding="utf-8", errors="replace")) for p in _instruction_files(task)]
    findings = []
    for rel, text in sources:
        found = [c for c in config.canaries if c and c in text]
        if found:
            findings.append(
                AuditFinding(
                    code=FindingCode.LEAK,
                    message=f"{rel} holds the canary string {found[0]!r}, which marks hidden task data: "
                    "the agent can see it; remove the file or the data it came with",
                    evidence={"file": rel, "canaries": found},
                )
            )
    return findings
