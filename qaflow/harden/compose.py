"""The compose transform: two tasks chained so that the second consumes the first's output.

A link joins a file part 1 writes (`source`) to a file part 2 reads (`target`): the composed image
does not hold `target` (part 2's COPY of it is dropped), so part 2 can only start from part 1's
result. Links are found by running both reference solutions in sandboxes (a file part 1 creates or
modifies with the same bytes as one of part 2's inputs), or named with `--link SOURCE=TARGET`, which
must hold the same bytes too (otherwise part 2's verifier would expect other values). The composed task:

- environment/: part 1's build context and Dockerfile, then part 2's Dockerfile lines (its FROM
  dropped; both must use the same base image and workdir) with COPY sources moved under
  `qaflow_part2/`, where part 2's build context goes;
- tests/part1, tests/part2: both verifiers, `/tests` in their files rewritten to their folder; a
  composite test.sh gives 1 only when both give full reward;
- solution/part1, solution/part2 likewise; solve.sh runs part 1, copies linked files whose paths
  differ, then part 2;
- instruction.md: both instructions as parts, and how they connect;
- task.toml: part 1's, named `<A>+<B>`, timeouts added, resources the larger of the two, both
  declared graphs (ids prefixed `part1:`/`part2:`) and the links as `depends_on` edges.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from qaflow.errors import TaskError
from qaflow.harden.errors import HardenError
from qaflow.harden.observe import WorkdirSnapshots, observe
from qaflow.harden.process_chain import check_transformable, grouped, harden_markers
from qaflow.harden.verifier import Step, StepKind, write_composite
from qaflow.harden.versions import HardenRecord, Transform, building, ensure_recorded, record
from qaflow.pool import Pool
from qaflow.requirements.reading import workdir_of
from qaflow.requirements.spec import SECTION, ArtifactSpec, CheckSpec, GraphSpec, GraphSpecError, RequirementSpec
from qaflow.task import IGNORED_NAMES, Task, TaskConfig
from qaflow.text import dockerfile_logical_lines

PART2_CONTEXT = "qaflow_part2"
AUTHOR = f"harden:{Transform.COMPOSE.value}"
_GLOB = re.compile(r"[*?\[]")
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_.:/@+-]")


class Link(BaseModel):
    source: str = Field(description="Absolute path of a file part 1 creates or modifies")
    target: str = Field(description="Absolute path of a file part 2 reads, withheld from the composed image")

    @classmethod
    def parse(cls, text: str) -> Link:
        """`SOURCE=TARGET` (or just `PATH` when both are the same path)."""
        source, _, target = text.partition("=")
        source, target = source.strip(), (target or source).strip()
        if not source.startswith("/") or not target.startswith("/"):
            raise ValueError(f"link {text!r}: use absolute paths, SOURCE=TARGET")
        return cls(source=posixpath.normpath(source), target=posixpath.normpath(target))


class ComposeConfig(BaseModel):
    backend: str = Field("auto", description="Sandbox backend used to run both reference solutions")
    links: list[Link] = Field(default_factory=list, description="Explicit links; none: found by content")
    max_listed: int = Field(40, ge=1, description="Changed paths listed one by one in the graph; more go by folder")


def compose(
    pool: Pool, a_dir: Path, b_dir: Path, out_dir: Path, *, run_id: str, config: ComposeConfig | None = None
) -> HardenRecord:
    """Compose the tasks at `a_dir` (part 1) and `b_dir` (part 2) into `out_dir/<a>+<b>@compose`.

    Raises:
        HardenError: a task cannot be wrapped, the two do not fit together (base image, workdir, files both
            use), no link is found or a named one does not hold, or the result does not load.
        SandboxError: an environment cannot be observed.
    """
    config = config or ComposeConfig()
    a, b = _load(a_dir), _load(b_dir)
    for task in (a, b):
        check_transformable(task, Transform.COMPOSE)
    if a.version == b.version:
        raise HardenError(b.path, "composing a task with itself")
    base = _same_base(a, b)
    parents = [ensure_recorded(pool, a), ensure_recorded(pool, b)]
    seen_a = observe(a, backend=config.backend, run_id=run_id)
    seen_b = observe(b, backend=config.backend, run_id=run_id)
    if seen_a.workdir != seen_b.workdir:
        raise HardenError(b.path, f"the workdirs differ ({seen_a.workdir} and {seen_b.workdir})")
    workdir = seen_a.workdir
    links = _links(a, b, seen_a, seen_b, config.links)
    _no_clashes(b, seen_a, seen_b, links)
    withheld = {_rel(workdir, link.target) for link in links}
    with building(a.path, out_dir, f"{a.path.name}+{b.path.name}@compose") as work:
        _write_environment(work, a, b, base, withheld, workdir)
        _write_parts(work, a, b, links)
        (work / "instruction.md").write_text(_instruction(a, b, links), encoding="utf-8")
        spec = _graph(a, b, seen_a, seen_b, links, config.max_listed)
        marker = {"transform": Transform.COMPOSE.value, "parents": [a.version, b.version],
                  "links": [link.model_dump() for link in links]}  # fmt: skip
        _write_config(work, a, b, spec, marker)
        detail = {"links": [link.model_dump() for link in links], "part1": a.name, "part2": b.name}
        return record(pool, work, transform=Transform.COMPOSE, author=AUTHOR, parents=parents, run_id=run_id,
                      detail=detail)  # fmt: skip


def _load(folder: Path) -> Task:
    try:
        return Task.load(folder)
    except TaskError as e:
        raise HardenError(e.path, e.reason) from e


def _rel(workdir: str, path: str) -> str:
    prefix = workdir.rstrip("/") + "/"
    if not path.startswith(prefix):
        raise HardenError(path, f"links join files under the workdir {workdir}")
    return path[len(prefix) :]


def _from_line(task: Task) -> str:
    text = task.dockerfile.read_text(encoding="utf-8", errors="replace") if task.dockerfile.is_file() else ""
    first = next((ln for ln in dockerfile_logical_lines(text) if ln.split(None, 1)[0].upper() == "FROM"), None)
    if first is None:
        raise HardenError(task.dockerfile, "composing needs an environment/Dockerfile with a FROM line")
    return " ".join(first.split()[1:])


def _same_base(a: Task, b: Task) -> str:
    base_a, base_b = _from_line(a), _from_line(b)
    if base_a != base_b:
        raise HardenError(b.dockerfile, f"the base images differ ({base_a} and {base_b})")
    if workdir_of(a) != workdir_of(b):
        raise HardenError(b.dockerfile, f"the workdirs differ ({workdir_of(a)} and {workdir_of(b)})")
    return base_a


def _links(a: Task, b: Task, seen_a: WorkdirSnapshots, seen_b: WorkdirSnapshots, asked: list[Link]) -> list[Link]:
    workdir = seen_a.workdir.rstrip("/")
    outputs = {rel: seen_a.final[rel] for rel in [*seen_a.created, *seen_a.modified]}
    if asked:
        for link in asked:
            source, target = _rel(seen_a.workdir, link.source), _rel(seen_b.workdir, link.target)
            if source not in outputs:
                raise HardenError(a.solution_dir / "solve.sh", f"part 1's solution does not write {link.source}")
            if target not in seen_b.initial:
                raise HardenError(b.environment_dir, f"part 2's environment has no {link.target}")
            if outputs[source] != seen_b.initial[target]:
                why = f"{link.target} in part 2's environment is not what part 1 writes to {link.source}"
                raise HardenError(b.environment_dir, f"{why}, so part 2's verifier would expect other values")
        return asked
    found = []
    for target, digest in sorted(seen_b.initial.items()):
        sources = [rel for rel, d in outputs.items() if d == digest]
        if sources:
            source = target if target in sources else sources[0]
            found.append(Link(source=f"{workdir}/{source}", target=f"{workdir}/{target}"))
    if not found:
        raise HardenError(
            b.path, f"part 2 reads nothing part 1 writes: no input of {b.name} has the bytes of a file {a.name}'s "
            "solution creates or modifies; name a link with --link SOURCE=TARGET",
        )  # fmt: skip
    return found


def _no_clashes(b: Task, seen_a: WorkdirSnapshots, seen_b: WorkdirSnapshots, links: list[Link]) -> None:
    targets = {_rel(seen_b.workdir, link.target) for link in links}
    written_a = set(seen_a.created) | set(seen_a.modified)
    problems = []
    for rel, digest in sorted(seen_b.initial.items()):
        if rel in targets:
            continue
        if rel in written_a:
            problems.append(f"{rel} is part 2's input and part 1 writes it; link it so the image does not hold it")
        elif rel in seen_a.initial and seen_a.initial[rel] != digest:
            problems.append(f"{rel} is in both environments with different contents")
    touched_b = set(seen_b.created) | set(seen_b.modified) | set(seen_b.deleted)
    problems += [f"{rel} is written by both parts" for rel in sorted(written_a & touched_b)]
    if problems:
        raise HardenError(b.path, "the tasks clash: " + "; ".join(problems[:5]))


# -- environment ----------------------------------------------------------------------------------


def _copy_words(args: str) -> tuple[list[str], list[str], bool]:
    """(flags, words, json_form) of a COPY/ADD argument string."""
    if args.startswith("["):
        return [], [str(w) for w in json.loads(args)], True
    words = shlex.split(args)
    return [w for w in words if w.startswith("--")], [w for w in words if not w.startswith("--")], False


def _part2_dockerfile(b: Task, withheld: set[str], workdir: str) -> tuple[list[str], list[str]]:
    """Part 2's Dockerfile lines without FROM, COPY/ADD sources moved under PART2_CONTEXT, withheld files
    dropped; and the build-context paths of the dropped sources."""
    text = b.dockerfile.read_text(encoding="utf-8", errors="replace")
    lines: list[str] = []
    dropped: list[str] = []
    current, left = "/", set(withheld)
    context = b.environment_dir
    for line in dockerfile_logical_lines(text):
        keyword, _, args = line.partition(" ")
        word = keyword.upper()
        if word == "FROM":
            continue
        if word == "WORKDIR":
            current = posixpath.normpath(posixpath.join(current, args.strip().strip("\"'")))
        if word not in ("COPY", "ADD"):
            lines.append(line)
            continue
        flags, words, json_form = _copy_words(args.strip())
        if any(f.startswith("--from") for f in flags) or len(words) < 2:
            raise HardenError(b.dockerfile, f"cannot move {line!r} into the composed image")
        sources, dest = (
            words[:-1],
            posixpath.normpath(posixpath.join(current, words[-1])) + ("/" if words[-1].endswith("/") else ""),
        )
        kept = []
        for source in sources:
            provided = _provided(context, source, dest, len(sources) > 1, workdir)
            hit = provided & left
            if not hit:
                kept.append(source)
                continue
            if provided != hit or _GLOB.search(source) or (context / source).is_dir():
                raise HardenError(b.dockerfile, f"{line!r} copies {', '.join(sorted(hit))} together with other "
                                  "files; copy each withheld file on its own line")  # fmt: skip
            left -= hit
            dropped.append(source.lstrip("/"))
        if not kept:
            continue
        moved = [s if "://" in s else posixpath.join(PART2_CONTEXT, s.lstrip("/")) for s in kept]
        rest = [*moved, words[-1]]
        lines.append(f"{keyword} {json.dumps(rest)}" if json_form else shlex.join([keyword, *flags, *rest]))
    if left:
        raise HardenError(b.dockerfile, f"no COPY line provides {', '.join(sorted(left))}, so the composed image "
                          "cannot withhold it (made by RUN?)")  # fmt: skip
    return lines, dropped


def _provided(context: Path, source: str, dest: str, several: bool, workdir: str) -> set[str]:
    """Workdir-relative paths a COPY source puts in the image (files of a source folder included)."""
    prefix = workdir.rstrip("/") + "/"
    root = context / source.lstrip("/")
    if root.is_dir():
        files = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
        paths = [posixpath.join(dest, f) for f in files]
    else:
        into_folder = dest.endswith("/") or several
        paths = [posixpath.join(dest, posixpath.basename(source)) if into_folder else dest.rstrip("/")]
    return {p[len(prefix) :] for p in paths if p.startswith(prefix)}


def _write_environment(work: Path, a: Task, b: Task, base: str, withheld: set[str], workdir: str) -> None:
    env = work / "environment"
    part2 = env / PART2_CONTEXT
    if part2.exists():
        raise HardenError(a.environment_dir / PART2_CONTEXT, "part 1's build context already uses this name")
    shutil.copytree(b.environment_dir, part2, symlinks=True,
                    ignore=shutil.ignore_patterns(*IGNORED_NAMES, "Dockerfile", ".dockerignore"))  # fmt: skip
    lines, dropped = _part2_dockerfile(b, withheld, workdir)
    for source in dropped:
        (part2 / source).unlink(missing_ok=True)
    for folder in sorted((p for p in part2.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    if not any(part2.iterdir()):
        part2.rmdir()
    text = a.dockerfile.read_text(encoding="utf-8").rstrip("\n")
    text += f"\n\n# part 2 ({b.name}), build context under {PART2_CONTEXT}/\n" + "\n".join(lines) + "\n"
    (env / "Dockerfile").write_text(text, encoding="utf-8")


# -- tests, solution, instruction ---------------------------------------------------------------


def _rewrite(folder: Path, root: str, part: str) -> None:
    """`/tests` (or `/solution`) in the text files of `folder` becomes `/tests/<part>`."""
    pattern = re.compile(rf"(?<![\w./-]){re.escape(root)}(?![\w.-])")
    for path in folder.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = pattern.sub(f"{root}/{part}", text)
        if new != text:
            path.write_text(new, encoding="utf-8")


def _write_parts(work: Path, a: Task, b: Task, links: list[Link]) -> None:
    for sub, root in (("tests", "/tests"), ("solution", "/solution")):
        shutil.rmtree(work / sub)
        for part, task in (("part1", a), ("part2", b)):
            dest = work / sub / part
            shutil.copytree(task.path / sub, dest, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED_NAMES))
            _rewrite(dest, root, part)
    steps = [
        Step(kind=StepKind.VERIFIER, path="part1/test.sh", label=f"part 1: {a.name}"),
        Step(kind=StepKind.VERIFIER, path="part2/test.sh", label=f"part 2: {b.name}"),
    ]
    write_composite(work / "tests", f"Composed verifier: {a.name}, then {b.name}; both must pass.", steps)
    copies = "".join(
        f"mkdir -p {shlex.quote(posixpath.dirname(link.target))} && cp -p {shlex.quote(link.source)} "
        f"{shlex.quote(link.target)}\n"
        for link in links
        if link.source != link.target
    )
    solve = work / "solution" / "solve.sh"
    solve.write_text(
        "#!/bin/bash\n"
        "# Reference solution of the composed task: part 1, the files part 2 reads from it, part 2.\n"
        "set -euo pipefail\n"
        'HERE="$(cd "$(dirname "$0")" && pwd)"\n'
        'bash "$HERE/part1/solve.sh"\n' + copies + 'bash "$HERE/part2/solve.sh"\n',
        encoding="utf-8",
    )
    solve.chmod(0o755)


def _instruction(a: Task, b: Task, links: list[Link]) -> str:
    connect = []
    for link in links:
        if link.source == link.target:
            connect.append(f"- `{link.target}`, which part 2 reads, is not provided: it is the file part 1 writes.")
        else:
            connect.append(
                f"- `{link.target}`, which part 2 reads, is not provided: it must hold exactly what part 1 writes "
                f"to `{link.source}`; copy it there before you start part 2."
            )
    return (
        "This task has two parts. Do part 1 first: part 2 works on what part 1 produces.\n\n"
        f"## Part 1\n\n{a.instruction.strip()}\n\n## Part 2\n\n{b.instruction.strip()}\n\n"
        "## How the parts connect\n\n" + "\n".join(connect) + "\n\n"
        "Both parts are checked at the end; the task passes only when both pass.\n"
    )


# -- graph and task.toml ------------------------------------------------------------------------


def _safe(text: str) -> str:
    return _UNSAFE_ID.sub("_", text)


def _part_spec(task: Task, part: str) -> GraphSpec:
    try:
        spec = GraphSpec.from_metadata(task.config.metadata).prefixed(f"{part}:")
    except GraphSpecError as e:
        raise HardenError(task.path / "task.toml", f"cannot merge its declared graph: {e}") from e
    checks = [
        c.model_copy(update={"file": f"tests/{part}/" + c.file.removeprefix("tests/")}) if c.file else c
        for c in spec.checks
    ]
    return spec.model_copy(update={"checks": checks})


def _graph(
    a: Task, b: Task, seen_a: WorkdirSnapshots, seen_b: WorkdirSnapshots, links: list[Link], limit: int
) -> GraphSpec:
    workdir = seen_a.workdir.rstrip("/")
    targets = {link.target for link in links}
    sources = {link.source for link in links}
    artifacts: dict[str, ArtifactSpec] = {}

    def artifact(part: str, path: str, description: str) -> str:
        aid = f"compose:{part}:{_safe(path)}"
        artifacts.setdefault(aid, ArtifactSpec(id=aid, path=path, description=description))
        return aid

    out_a = [artifact("part1", f"{workdir}/{p}", "a file part 1 writes")
             for p in grouped([*seen_a.created, *seen_a.modified], limit)]  # fmt: skip
    out_a_paths = {artifacts[i].path: i for i in out_a}
    for s in sources:
        out_a_paths.setdefault(s, artifact("part1", s, "a file part 1 writes"))
    inputs = {t: (out_a_paths[t] if t in out_a_paths else artifact("part2", t, "part 2's input, made by part 1"))
              for t in targets}  # fmt: skip
    for link in links:
        if link.source != link.target:
            node = artifacts[inputs[link.target]]
            artifacts[node.id] = node.model_copy(update={"depends_on": [*node.depends_on, out_a_paths[link.source]]})
    out_b = []
    for p in grouped([*seen_b.created, *seen_b.modified], limit):
        aid = artifact("part2", f"{workdir}/{p}", "a file part 2 writes")
        node = artifacts[aid]
        artifacts[aid] = node.model_copy(update={"depends_on": sorted({*node.depends_on, *inputs.values()} - {aid})})
        out_b.append(aid)
    chain = GraphSpec(
        requirements=[
            RequirementSpec(id="compose:part1", text=f"part 1: {a.name}", produces=out_a),
            RequirementSpec(id="compose:part2", text=f"part 2: {b.name}, from part 1's result", produces=out_b),
        ],
        artifacts=list(artifacts.values()),
        checks=[
            CheckSpec(id="compose:part1-verifier", description="part 1's verifier gives full reward",
                      verifies=["compose:part1"]),
            CheckSpec(id="compose:part2-verifier", description="part 2's verifier gives full reward",
                      verifies=["compose:part2"]),
        ],
    )  # fmt: skip
    try:
        return _part_spec(a, "part1").extended(_part_spec(b, "part2")).extended(chain)
    except GraphSpecError as e:
        raise HardenError(a.path / "task.toml", f"cannot merge the graphs: {e}") from e


def _larger(x: Any, y: Any) -> Any:
    return y if x is None else x if y is None else max(x, y)


def _merged_env(name: str, one: dict[str, str], two: dict[str, str], where: Path) -> dict[str, str]:
    clash = sorted(k for k in set(one) & set(two) if one[k] != two[k])
    if clash:
        raise HardenError(where, f"{name} sets {', '.join(clash)} differently in the two tasks")
    return {**one, **two}


def _write_config(work: Path, a: Task, b: Task, spec: GraphSpec, marker: dict[str, Any]) -> None:
    ca, cb = a.config, b.config
    short_b = b.name.rsplit("/", 1)[-1]
    toml = work / "task.toml"
    data = ca.model_dump(mode="json", exclude_unset=True)
    data.setdefault("task", {"name": a.name})["name"] = f"{a.name}+{short_b}"
    if ca.task is not None and cb.task is not None and (ca.task.description or cb.task.description):
        data["task"]["description"] = f"{ca.task.description} Then: {cb.task.description}".strip()
    for phase in ("agent", "verifier"):
        first, second = getattr(ca, phase).timeout_sec, getattr(cb, phase).timeout_sec
        if first is not None or second is not None:
            data.setdefault(phase, {})["timeout_sec"] = float((first or 600.0) + (second or 600.0))
    env = data.setdefault("environment", {})
    for table, one, two in (
        ("verifier", ca.verifier.env, cb.verifier.env),
        ("solution", ca.solution.env, cb.solution.env),
        ("environment", ca.environment.env, cb.environment.env),
    ):
        merged = _merged_env(f"[{table}] env", one, two, toml)
        if merged:
            data.setdefault(table, {})["env"] = merged
    for key in ("cpus", "memory_mb", "storage_mb"):
        value = _larger(getattr(ca.environment, key), getattr(cb.environment, key))
        if value is not None:
            env[key] = value
    env["build_timeout_sec"] = ca.environment.build_timeout_sec + cb.environment.build_timeout_sec
    if cb.agent_network() and not ca.agent_network():
        env["network_mode"] = "public"
    metadata = spec.to_metadata(ca.metadata)
    section = dict(metadata[SECTION])
    section["harden"] = [*harden_markers(a), marker]
    metadata[SECTION] = section
    data["metadata"] = metadata
    config = TaskConfig.model_validate(data)
    toml.write_text(config.to_toml(), encoding="utf-8")
