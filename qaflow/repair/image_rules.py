"""Rule repairs that move what the verifier trusts out of the image and into tests/.

The audit proves two defects by running exploits: the verifier runs a grader the image ships where
the agent can replace it (`reward_tamper`, exploit `script-shim`), and the verifier's expected answer
ships in the image where the agent can read it (`leak`, exploit `answer-copy`). Both are fixed the
same way when the file came from the build context: follow environment/Dockerfile statically to the
COPY that put it there, move it (a grader with the folder it was copied with, so sibling modules and
data still resolve) into tests/, point the verifier's references at /tests, and take it out of the
image: its COPY line dropped and its context files deleted, or only the files where it came with a
larger folder. (A copy left in the image would be the verifier's own code or answer in the agent's
reach, which the audit's lint reports as `leak`.) A grader the instruction, the reference solution
or a RUN names is left alone: the task uses it in the image. An answer is moved even when the
reference solution reads it: then the fresh audit fails the oracle, as it should.

The Dockerfile is read, never built: anything it does that cannot be followed for certain (a
variable in a COPY, `COPY --from`, a second FROM, a RUN that names the file afterwards, a source the
build would not find, a COPY that would be left without a source) makes the rule give up on that
file. Like every rule, its change counts only after a fresh audit.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
import shlex
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass

from qaflow.errors import UnsupportedError
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode
from qaflow.repair.rule_files import ENVIRONMENT, TaskChanges, TaskFiles, is_shell, is_text, verifier_dir
from qaflow.repair.shell_fixes import split_comment
from qaflow.sandbox.dockerfile import DockerIgnore, logical_lines

DOCKERFILE = ENVIRONMENT + "Dockerfile"
SHIM_EXPLOIT = "script-shim"
REWRITE_EXPLOIT = "expected-rewrite"
PLANT_EXPLOIT = "python-plant"
SHADOW_EXPLOIT = "module-shadow"
COPY_FLAGS = frozenset({"--chown", "--chmod", "--link"})
ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".zip")


# --- the findings' evidence -------------------------------------------------------------------


def exploit_files(findings: Iterable[AuditFinding], exploit: str) -> list[str]:
    """The container files a proven `reward_tamper` exploit of that name planted, in order, once each."""
    found: list[str] = []
    for f in findings:
        if f.code is not FindingCode.REWARD_TAMPER:
            continue
        won = f.evidence.get("exploits")
        for e in won if isinstance(won, list) else []:
            if isinstance(e, dict) and e.get("exploit") == exploit and isinstance(e.get("files"), list):
                found += [p for p in e["files"] if isinstance(p, str) and p.startswith("/")]
    return list(dict.fromkeys(found))


DATA_FORGE_EXPLOITS = ("data-zero", "data-empty")


def leaked_answers(findings: Iterable[AuditFinding]) -> list[str]:
    """The answer files of `leak` findings proven by copying them onto the outputs, and the expected values
    a proven `expected-rewrite`, `data-zero` or `data-empty` exploit rewrote (`reward_tamper`)."""
    found: list[str] = [posixpath.normpath(p) for p in exploit_files(findings, REWRITE_EXPLOIT)]
    for f in findings:
        won = f.evidence.get("exploits") if f.code is FindingCode.REWARD_TAMPER else None
        for e in won if isinstance(won, list) else []:
            data = e.get("data") if isinstance(e, dict) and e.get("exploit") in DATA_FORGE_EXPLOITS else None
            found += [posixpath.normpath(p) for p in data or [] if isinstance(p, str) and p.startswith("/")]
    for f in findings:
        copies = f.evidence.get("copies") if f.code is FindingCode.LEAK else None
        for c in copies if isinstance(copies, list) else []:
            if isinstance(c, dict) and isinstance(c.get("answer"), str) and c["answer"].startswith("/"):
                found.append(posixpath.normpath(c["answer"]))
    return list(dict.fromkeys(found))


# --- where a file of the image comes from -------------------------------------------------------


@dataclass(frozen=True)
class ImageCopy:
    """A COPY/ADD of the build context, followed statically."""

    start: int
    end: int
    """Physical lines [start, end) of the instruction (0-based, continuations included)."""
    sources: tuple[str, ...]
    """Context-relative paths it copies, files or folders ("" is the whole context)."""
    dest: str
    """Absolute container path."""
    dest_is_dir: bool
    exact: str | None
    """The source when there is one source word without a glob (a file or a folder): the instruction
    copies exactly that, and dropping it takes just that out of the image."""


@dataclass(frozen=True)
class Unfollowed:
    """A COPY/ADD that cannot be followed: it may put anything anywhere."""

    start: int


@dataclass(frozen=True)
class RunStep:
    text: str


Step = ImageCopy | Unfollowed | RunStep


@dataclass(frozen=True)
class Placed:
    """The COPY that last put a container file in place, and the context file it copied."""

    index: int
    copy: ImageCopy
    source: str
    root: tuple[str, str] | None
    """(context folder, container folder) when the file came with a folder source."""


def instruction_spans(text: str) -> list[tuple[int, int, str]]:
    """(first line, line after the last, instruction text) per instruction, 0-based, as
    `qaflow.text.numbered_dockerfile_lines` joins them."""
    out: list[tuple[int, int, str]] = []
    lines = text.splitlines()
    current, start = "", 0
    for i, raw in enumerate(lines):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not current:
            start = i
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        out.append((start, i + 1, current + stripped))
        current = ""
    if current.strip():
        out.append((start, len(lines), current))
    return out


class Context:
    """The build context as the rule files list it (environment/, every file), with .dockerignore."""

    def __init__(self, files: TaskFiles, ignore: DockerIgnore):
        self.texts = {rel.removeprefix(ENVIRONMENT): t for rel, t in files.items() if rel.startswith(ENVIRONMENT)}
        self.ignore = ignore
        self.dirs = {""}
        self.children: dict[str, set[str]] = {}
        for rel in self.texts:
            parts = rel.split("/")
            for i in range(len(parts)):
                parent, name = "/".join(parts[:i]), parts[i]
                self.children.setdefault(parent, set()).add(name)
                if i < len(parts) - 1:
                    self.dirs.add("/".join(parts[: i + 1]))

    def is_file(self, rel: str) -> bool:
        return rel in self.texts and not self.ignore.excluded(rel)

    def files_under(self, folder: str) -> list[str]:
        prefix = folder + "/" if folder else ""
        return sorted(r for r in self.texts if r.startswith(prefix) and not self.ignore.excluded(r))

    def expand(self, pattern: str) -> list[str] | None:
        """Context paths a COPY source names, or None when it names nothing the build would find."""
        rel = posixpath.normpath(pattern.lstrip("/") or ".")
        if rel == ".." or rel.startswith("../"):
            return None
        if rel == ".":
            return [""]
        if not any(c in rel for c in "*?["):
            found = [rel] if rel in self.dirs or rel in self.texts else []
        else:
            found = [""]
            for part in rel.split("/"):
                found = [
                    f"{base}/{name}" if base else name
                    for base in found
                    for name in sorted(self.children.get(base, ()))
                    if fnmatch.fnmatchcase(name, part)
                ]
        found = [f for f in found if not self.ignore.excluded(f)]
        return found or None


def _copy_words(args: str) -> list[str] | None:
    if args.startswith("["):
        try:
            value = json.loads(args)
        except json.JSONDecodeError:
            return None
        ok = isinstance(value, list) and all(isinstance(w, str) for w in value)
        return list(value) if ok else None
    try:
        return shlex.split(args)
    except ValueError:
        return None


def _follow_copy(keyword: str, args: str, workdir: str | None, ctx: Context, span: tuple[int, int]) -> Step:
    unfollowed = Unfollowed(span[0])
    words = _copy_words(args)
    if words is None or "$" in args or "<<" in args:
        return unfollowed
    while words and words[0].startswith("--"):
        if words.pop(0).partition("=")[0] not in COPY_FLAGS:
            return unfollowed  # --from and anything else this reading does not know
    if len(words) < 2:
        return unfollowed
    *patterns, dest = words
    if keyword == "ADD" and any("://" in p or p.startswith("git@") or p.endswith(ARCHIVES) for p in patterns):
        return unfollowed
    if not dest.startswith("/") and workdir is None:
        return unfollowed
    sources: list[str] = []
    for pattern in patterns:
        found = ctx.expand(pattern)
        if found is None:
            return unfollowed
        sources += found
    is_dir = [s in ctx.dirs for s in sources]
    target = posixpath.normpath(posixpath.join(workdir or "/", dest))
    exact = sources[0] if len(patterns) == 1 and not any(c in patterns[0] for c in "*?[") else None
    dest_is_dir = dest.endswith("/") or len(sources) > 1 or any(is_dir)
    return ImageCopy(span[0], span[1], tuple(sources), target, dest_is_dir, exact)


def image_steps(dockerfile: str, ctx: Context) -> list[Step] | None:
    """The Dockerfile's COPY/ADD and RUN steps, or None when it cannot be read this way (a parser
    directive, several stages)."""
    try:
        logical_lines(dockerfile)
    except UnsupportedError:
        return None
    steps: list[Step] = []
    workdir: str | None = None  # Docker's default is /, the bwrap backend's /app: relative paths are unknown
    seen_from = False
    for start, end, body in instruction_spans(dockerfile):
        keyword, _, args = body.partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            if seen_from:
                return None
            seen_from = True
        elif keyword == "WORKDIR":
            if "$" in args or not (args.startswith("/") or workdir is not None):
                workdir = None
            else:
                workdir = posixpath.normpath(posixpath.join(workdir or "/", args.strip("\"'")))
        elif keyword in ("COPY", "ADD"):
            steps.append(_follow_copy(keyword, args, workdir, ctx, (start, end)))
        elif keyword == "RUN":
            steps.append(RunStep(body))
    return steps


def _places(copy: ImageCopy, path: str, ctx: Context) -> tuple[str, tuple[str, str] | None] | None:
    """The context file `copy` puts at `path` (and its folder source), or None."""
    found: tuple[str, tuple[str, str] | None] | None = None
    for source in copy.sources:
        if source == "" or source in ctx.dirs:
            prefix = copy.dest.rstrip("/") + "/"
            if path.startswith(prefix):
                rel = path[len(prefix) :]
                candidate = f"{source}/{rel}" if source else rel
                if ctx.is_file(candidate):
                    found = (candidate, (source, copy.dest))
        else:
            name = posixpath.basename(source)
            targets = [posixpath.join(copy.dest, name)] if copy.dest_is_dir else [copy.dest, f"{copy.dest}/{name}"]
            if path in targets:
                found = (source, None)
    return found


class Image:
    """The build context and the Dockerfile's steps, to trace container files back to the context."""

    def __init__(self, ctx: Context, steps: list[Step]):
        self.ctx, self.steps = ctx, steps

    @classmethod
    def of(cls, files: TaskFiles) -> Image | None:
        """None where the image is not built from environment/Dockerfile as the agent and the verifier
        share it (no readable Dockerfile, a separate verifier)."""
        dockerfile = files.get(DOCKERFILE)
        ignore = files.get(ENVIRONMENT + ".dockerignore", "")
        if not is_text(dockerfile) or not is_text(ignore) or separate_verifier(files):
            return None
        assert dockerfile is not None
        ctx = Context(files, DockerIgnore(ignore))
        steps = image_steps(dockerfile, ctx)
        return cls(ctx, steps) if steps is not None else None

    def locate(self, path: str) -> Placed | None:
        """The COPY that last put `path` in place, where nothing after it may have changed it."""
        path = posixpath.normpath(path)
        placed = None
        for i, step in enumerate(self.steps):
            if isinstance(step, ImageCopy) and (hit := _places(step, path, self.ctx)) is not None:
                placed = Placed(i, step, hit[0], hit[1])
        if placed is None:
            return None
        name = posixpath.basename(path)
        for later in self.steps[placed.index + 1 :]:
            if isinstance(later, Unfollowed) or (isinstance(later, RunStep) and name in later.text):
                return None
        return placed

    def copied_elsewhere(self, index: int, file: str) -> bool:
        """Whether a COPY other than step `index` (or one that cannot be followed) also takes the context
        file into the image."""
        for i, step in enumerate(self.steps):
            if i == index or isinstance(step, RunStep):
                continue
            if isinstance(step, Unfollowed):
                return True
            if any(source in (file, "") or file.startswith(source + "/") for source in step.sources):
                return True
        return False

    def named_by_run(self, path: str) -> bool:
        """Whether a RUN names the container path (a file, or a folder as a prefix)."""
        pattern = path_pattern(path)
        return any(isinstance(step, RunStep) and pattern.search(step.text) for step in self.steps)

    def take_out(self, placed: Placed, unit: str, files: list[str], left: TaskFiles) -> tuple[range, list[str]] | None:
        """How to take `files` (the context files of `unit`, a file or folder `placed.copy` copied) out of
        the image: (Dockerfile lines to drop, context files to delete); None where it cannot be done
        cleanly (another COPY takes them too, or without them a COPY would find no source). `left`: the
        rule files as they stand (files already deleted are not there)."""
        if any(self.copied_elsewhere(placed.index, f) for f in files):
            return None
        copy = placed.copy
        if copy.exact == unit:
            return range(copy.start, copy.end), files
        if placed.root is None:
            return None  # one of several sources
        folder = placed.root[0]
        remaining = [f for f in self.ctx.files_under(folder) if ENVIRONMENT + f in left and f not in files]
        return (range(0), files) if remaining else None


def separate_verifier(files: TaskFiles) -> bool:
    """The verifier runs in an image of its own (a Dockerfile in a verifier folder, or task.toml says so)."""
    if any(verifier_dir(rel) and rel.endswith("/Dockerfile") for rel in files):
        return True
    try:
        config = tomllib.loads(files.get("task.toml", ""))
    except tomllib.TOMLDecodeError:
        return True
    tables = [config.get("verifier")] + [s.get("verifier") for s in config.get("steps") or [] if isinstance(s, dict)]
    return any(isinstance(t, dict) and t.get("environment_mode") == "separate" for t in tables)


# --- pointing the verifier at /tests ------------------------------------------------------------


def path_pattern(path: str) -> re.Pattern[str]:
    """`path` as a whole path or a folder prefix of one (not the tail of a longer path, nor a longer name)."""
    return re.compile(rf"(?<![\w./-]){re.escape(path)}(?![\w.-])")


def _rewrite_text(rel: str, text: str, pattern: re.Pattern[str], new: str) -> tuple[str, int]:
    """Replace the references in code; in shell and Python files comments are left as they were."""
    if not (is_shell(rel, text) or rel.endswith(".py")):
        return pattern.subn(lambda _m: new, text)
    lines = text.splitlines(keepends=True)
    count = 0
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        code, comment = split_comment(body)
        fixed, n = pattern.subn(lambda _m: new, code)
        if n:
            lines[i] = fixed + comment + line[len(body) :]
            count += n
    return "".join(lines), count


def rewrite_references(files: TaskFiles, old: str, new: str) -> tuple[TaskFiles, int]:
    """The verifier's text files with every reference to the container path `old` (a file, or a folder
    as a prefix) made `new`; and how many references there were."""
    pattern = path_pattern(old)
    changes: TaskFiles = {}
    total = 0
    for rel, text in files.items():
        if verifier_dir(rel) and is_text(text):
            fixed, n = _rewrite_text(rel, text, pattern, new)
            if n:
                changes[rel], total = fixed, total + n
    return changes, total


def _verifier_roots(files: TaskFiles) -> set[str]:
    roots = {"tests"}
    for rel in files:
        parts = rel.split("/")
        if len(parts) > 3 and parts[0] == "steps" and parts[2] == "tests":
            roots.add("/".join(parts[:3]))
    return roots


def _fits(files: TaskFiles, new: dict[str, str], name: str) -> bool:
    """Whether the new tests/ files can be added: nothing different there already, and no step's
    tests/ that would shadow them under /tests."""
    if any(rel in files and files[rel] != text for rel, text in new.items()):
        return False
    target = f"tests/{name}"
    if any(rel not in new and (rel == target or rel.startswith(target + "/")) for rel in files):
        return False  # something else is there already
    shadows = [f"{root}/{name}" for root in _verifier_roots(files) if root != "tests"]
    return not any(rel == s or rel.startswith(s + "/") for rel in files for s in shadows)


# --- the rules ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """What moves into tests/ for one shimmed file: a context folder or file, and where the image has it."""

    placed: Placed
    source: str
    image: str
    folder: bool


def _grader_unit(image: Image, path: str) -> Unit | None:
    placed = image.locate(path)
    if placed is None:
        return None
    if placed.root is None:
        return Unit(placed, placed.source, posixpath.normpath(path), folder=False)
    folder, image_dir = placed.root
    if folder == "":  # the whole context was copied: take the top folder holding the file
        top, _, rest = placed.source.partition("/")
        if not rest:
            return Unit(placed, placed.source, posixpath.normpath(path), folder=False)
        return Unit(placed, top, posixpath.join(image_dir, top), folder=True)
    return Unit(placed, folder, image_dir, folder=True)


def _named_by_the_task(files: TaskFiles, path: str) -> bool:
    """Whether the instruction or the reference solution names the container path (a file, or a folder
    as a prefix): the task uses it in the image."""
    pattern = path_pattern(path)
    return any(
        is_text(text) and pattern.search(text) is not None
        for rel, text in files.items()
        if rel.rsplit("/", 1)[-1] == "instruction.md" or rel.split("/")[0] == "solution" or "/solution/" in rel
    )


def _drop_lines(files: TaskFiles, changes: TaskChanges, drop: set[int]) -> None:
    if drop:
        lines = files[DOCKERFILE].splitlines(keepends=True)
        changes[DOCKERFILE] = "".join(line for i, line in enumerate(lines) if i not in drop)


def fix_grader_into_tests(files: TaskFiles, findings: list[AuditFinding]) -> TaskChanges:
    """For each file the script-shim exploit replaced that a COPY of the build context put in the image:
    move it (with the folder it was copied with) into tests/, point the verifier at /tests, and take it
    out of the image (a copy left there is the verifier's code in the agent's reach: a `leak`). Only where
    nothing else uses it there: no RUN, nor the instruction or the solution, names it."""
    shimmed = exploit_files(findings, SHIM_EXPLOIT)
    image = Image.of(files) if shimmed else None
    if image is None:
        return {}
    view: TaskFiles = dict(files)
    changes: TaskChanges = {}
    drop: set[int] = set()
    for path in shimmed:
        unit = _grader_unit(image, path)
        name = posixpath.basename(unit.image) if unit else ""
        if unit is None or not name or image.named_by_run(unit.image) or _named_by_the_task(view, unit.image):
            continue
        sources = image.ctx.files_under(unit.source) if unit.folder else [unit.source]
        texts = {s: image.ctx.texts[s] for s in sources if ENVIRONMENT + s in view}
        removal = image.take_out(unit.placed, unit.source, sources, view)
        if removal is None or len(texts) != len(sources) or not all(is_text(t) for t in texts.values()):
            continue
        target = f"tests/{name}"
        if unit.folder:
            new = {f"{target}/{s[len(unit.source) + 1 :]}": t for s, t in texts.items()}
        else:
            new = {target: texts[unit.source]}
        if not _fits(view, new, name):
            continue
        edits, count = rewrite_references({r: t for r, t in view.items() if r not in new}, unit.image, f"/{target}")
        if not count:
            continue
        copies, _ = rewrite_references(new, unit.image, f"/{target}")
        step = {**new, **copies, **edits}
        view.update(step)
        changes.update(step)
        lines, deleted = removal
        drop.update(lines)
        for source in deleted:
            del view[ENVIRONMENT + source]
            changes[ENVIRONMENT + source] = None
    _drop_lines(files, changes, drop)
    return changes


def fix_answers_into_tests(files: TaskFiles, findings: list[AuditFinding]) -> TaskChanges:
    """For each leaked answer (or agent-writable expectation) a COPY of the build context put in the
    image: move it into tests/ (same name), point the verifier at /tests, and take it out of the image
    (its COPY line and context file when the COPY copied just it; its context file when it came with a
    folder that keeps other files)."""
    answers = leaked_answers(findings)
    image = Image.of(files) if answers else None
    if image is None:
        return {}
    view: TaskFiles = dict(files)
    changes: TaskChanges = {}
    drop: set[int] = set()
    for answer in answers:
        placed = image.locate(answer)
        removal = image.take_out(placed, placed.source, [placed.source], view) if placed else None
        text = view.get(ENVIRONMENT + placed.source) if placed else None
        if placed is None or removal is None or text is None or not is_text(text):
            continue
        name = posixpath.basename(answer)
        target = f"tests/{name}"
        if not _fits(view, {target: text}, name):
            continue
        edits, count = rewrite_references(view, answer, f"/{target}")
        if not count:
            continue
        step = {target: text, **edits}
        view.update(step)
        changes.update(step)
        lines, _ = removal
        drop.update(lines)
        del view[ENVIRONMENT + placed.source]
        changes[ENVIRONMENT + placed.source] = None
    _drop_lines(files, changes, drop)
    return changes
