"""Synthetic augmentation: LLM rewrites of instructions, kept only when the rewritten task audits clean.

For every task (row with a folder), every style and every seed (`seeds` variants per style, so a task gets
styles x seeds rewrites), the model gets `prompts/augment_system.j2` and `prompts/augment_<style>.j2` and
answers a `Rewrite` (structured output, re-asked when malformed). Variant 1 is that prompt as is; variant k > 1
also gets `prompts/augment_variant.j2` (its number: write it differently from the other variants), so neither
the response cache nor a deterministic model repeats variant 1, and each variant is deduplicated against the
others and audited on its own like any rewrite:

- paraphrase, terse, verbose: a new instruction; environment, tests and solution are copied unchanged.
- files: a new instruction plus files holding the moved specification; each is written to
  `environment/<name>` and copied to its path by a `COPY` line appended to the Dockerfile (the one change to
  the environment). A path outside an absolute folder, under /tests, /solution or /logs, or a name the
  environment already has, rejects the rewrite.

A rewrite is dropped (with its reason, stage `augment`) when the model fails, when its normalised text equals
the original's, when it is a near duplicate (`curation.dedup`, Jaccard >= threshold) of any instruction of
the input frame or of `existing`, or of an earlier rewrite kept in this run, and when the audit of the new task
(`qaflow.audit.runner.Auditor`, recorded in `out_dir`'s pool ledger) gives any verdict but `accepted`.

The new task is `out_dir/<parent folder name>~<variant>`, where the variant is "<style>" (variant 1) or
"<style>-<k>": a copy of the parent with instruction.md replaced and task.toml's `[task] name` =
"<parent name>~<variant>" and `[metadata.augmentation]` = {style, parent_id, parent_version, model, and
`variant` = k for k > 1}. Rejected folders are moved to `out_dir/.rejected/`. A folder already made from the
same parent version, style and variant is reused without asking the model again. Output rows keep the
parent's source and original_id (so an eval split by original_id keeps a parent and its rewrites together)
and get id "<parent id>~<variant>", `parent_id`, `augment_style`, `augment_variant` and `status` columns.
"""

from __future__ import annotations

import shutil
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2
import polars as pl
import tomli_w
from pydantic import BaseModel, ConfigDict, Field

from curation.dedup import DedupConfig, near_duplicate_pairs, near_duplicates_against, normalise
from curation.sources import TASK_SCHEMA, StageResult, removed_frame, safe_folder_name
from qaflow.audit.lint import lint_task
from qaflow.audit.runner import AuditConfig
from qaflow.audit.service import audit_folders
from qaflow.errors import LLMError, TaskError
from qaflow.llm import LLM, LLMConfig
from qaflow.pool import Pool
from qaflow.task import Task, copy_task_folder
from qaflow.text import dockerfile_logical_lines

STAGE = "augment"
REJECTED = ".rejected"
FORBIDDEN_PREFIXES = ("/tests", "/solution", "/logs")


class Style(StrEnum):
    PARAPHRASE = "paraphrase"
    TERSE = "terse"
    VERBOSE = "verbose"
    FILES = "files"


class MovedFile(BaseModel):
    path: str = Field(description="Absolute path of the new file in the task's container.")
    content: str


class Rewrite(BaseModel):
    """The model's answer."""

    instruction: str = Field(min_length=1)
    files: list[MovedFile] = Field(default_factory=list)


class AugmentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    out_dir: Path = Field(description="Where rewritten tasks are written (a pool with its own ledger).")
    llm: LLMConfig
    styles: list[Style] = Field(default_factory=lambda: [Style.PARAPHRASE])
    seeds: int = Field(
        1, ge=1, description="Rewrites per style and task (variants 1..seeds): styles x seeds new tasks per task."
    )
    audit: AuditConfig = Field(default_factory=AuditConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)


@dataclass
class _Candidate:
    parent: dict[str, Any]
    style: Style
    id: str
    folder: Path
    variant: int = 1
    rewrite: Rewrite | None = None
    reused: bool = False


def variant_label(style: Style, variant: int = 1) -> str:
    """The suffix of ids, names and folders: `<style>` for variant 1, `<style>-<k>` for variant k > 1."""
    return style.value if variant == 1 else f"{style.value}-{variant}"


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)


def render(template: str, **variables: Any) -> str:
    """Render `curation/prompts/<template>.j2` (a missing variable raises jinja2.UndefinedError)."""
    text = resources.files("curation").joinpath("prompts", f"{template}.j2").read_text(encoding="utf-8")
    return _env().from_string(text).render(**variables).strip() + "\n"


def _workdir(dockerfile: Path) -> str:
    workdir = "/app"
    if dockerfile.is_file():
        for line in dockerfile_logical_lines(dockerfile.read_text(encoding="utf-8")):
            words = line.split(None, 1)
            if len(words) == 2 and words[0].upper() == "WORKDIR":
                workdir = words[1].strip()
    return workdir


def messages_for(task: Task, style: Style, variant: int = 1, variants: int = 1) -> list[dict[str, str]]:
    """The prompt of one rewrite; variant k > 1 of `variants` adds `augment_variant.j2` to the user message."""
    variables: dict[str, Any] = {"instruction": task.instruction}
    if style is Style.FILES:
        env_dir = task.environment_dir
        variables["workdir"] = _workdir(task.dockerfile).rstrip("/") or "/app"
        variables["existing_files"] = sorted(p.name for p in env_dir.iterdir()) if env_dir.is_dir() else []
    user = render(f"augment_{style.value}", **variables)
    if variant > 1:
        user += "\n" + render("augment_variant", variant=variant, variants=max(variants, variant))
    return [
        {"role": "system", "content": render("augment_system")},
        {"role": "user", "content": user},
    ]


def _check_files(task: Task, rewrite: Rewrite, style: Style) -> str | None:
    """Why the moved files cannot be used, or None."""
    if style is not Style.FILES:
        return None
    if not rewrite.files:
        return "files style, but no file was given"
    names: set[str] = set()
    for moved in rewrite.files:
        path = PurePosixPath(moved.path)
        if not path.is_absolute() or ".." in path.parts or len(path.parts) < 3:
            return f"file path {moved.path!r} is not an absolute path inside a folder"
        if any(moved.path == p or moved.path.startswith(p + "/") for p in FORBIDDEN_PREFIXES):
            return f"file path {moved.path!r} is under a folder reserved for verification"
        if path.name in names or (task.environment_dir / path.name).exists() or path.name == "Dockerfile":
            return f"file name {path.name!r} is already used in environment/"
        names.add(path.name)
    return None


def write_rewrite(
    parent: Task, folder: Path, rewrite: Rewrite, style: Style, parent_id: str, model: str, variant: int = 1
) -> Task:
    """Write the rewritten task folder (see the module docstring) and load it."""
    copy_task_folder(parent.path, folder)
    (folder / "instruction.md").write_text(rewrite.instruction.rstrip() + "\n", encoding="utf-8")
    config = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    config.setdefault("task", {})["name"] = f"{parent.name}~{variant_label(style, variant)}"
    metadata = config.setdefault("metadata", {})
    metadata["augmentation"] = {
        "style": style.value,
        "parent_id": parent_id,
        "parent_version": parent.version,
        "model": model,
    }
    if variant > 1:
        metadata["augmentation"]["variant"] = variant
    (folder / "task.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
    if style is Style.FILES:
        dockerfile = folder / "environment" / "Dockerfile"
        lines = [dockerfile.read_text(encoding="utf-8").rstrip("\n")] if dockerfile.is_file() else []
        for moved in rewrite.files:
            name = PurePosixPath(moved.path).name
            (folder / "environment" / name).write_text(moved.content, encoding="utf-8")
            lines.append(f"COPY {name} {moved.path}")
        dockerfile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Task.load(folder)


def _reusable(folder: Path, parent: Task, style: Style, variant: int = 1) -> Rewrite | None:
    """The rewrite already in `folder` when it was made from this parent version in this style and variant."""
    try:
        task = Task.load(folder)
    except TaskError:
        return None
    made = task.config.metadata.get("augmentation") or {}
    if made.get("parent_version") != parent.version or made.get("style") != style.value:
        return None
    if made.get("variant", 1) != variant:
        return None
    files = []
    if style is Style.FILES:
        dockerfile = folder / "environment" / "Dockerfile"
        original = dockerfile_logical_lines(parent.dockerfile.read_text(encoding="utf-8"))
        added = dockerfile_logical_lines(dockerfile.read_text(encoding="utf-8"))[len(original) :]
        for line in added:
            _, name, dest = line.split()
            files.append(MovedFile(path=dest, content=(folder / "environment" / name).read_text(encoding="utf-8")))
    return Rewrite(instruction=task.instruction, files=files)


def augment_tasks(
    tasks: pl.DataFrame,
    config: AugmentConfig,
    *,
    existing: Sequence[str] = (),
    llm: LLM | None = None,
    progress: Callable[[str], None] | None = None,
) -> StageResult:
    """Rewrite every task of the frame in every configured style, `seeds` times; `kept` holds the new tasks that
    passed, `removed` the rewrites dropped (ids "<parent id>~<variant>") and why. Input rows are not changed.

    Long on purpose: one pass over the candidates (rewrite, load, audit, keep or remove) whose steps share
    the removed/kept bookkeeping.
    """
    t0 = time.perf_counter()
    llm = llm or LLM(config.llm)
    say = progress or (lambda _m: None)
    out_dir = config.out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    removed: list[tuple[str, str, str]] = []
    candidates: list[_Candidate] = []
    parents: dict[str, Task] = {}
    variants = [(style, k) for style in config.styles for k in range(1, config.seeds + 1)]
    for row in tasks.iter_rows(named=True):
        if not row.get("path"):
            for style, k in variants:
                removed.append((f"{row['id']}~{variant_label(style, k)}", STAGE, "parent has no task folder"))
            continue
        try:
            parent = parents.setdefault(row["id"], Task.load(row["path"]))
        except TaskError as e:
            for style, k in variants:
                removed.append((f"{row['id']}~{variant_label(style, k)}", STAGE, f"parent does not load: {e}"))
            continue
        for style, k in variants:
            label = variant_label(style, k)
            cid = f"{row['id']}~{label}"
            folder = out_dir / f"{safe_folder_name(Path(row['path']).name)}~{label}"
            candidate = _Candidate(parent=row, style=style, id=cid, folder=folder, variant=k)
            reused = _reusable(folder, parent, style, k) if folder.is_dir() else None
            if reused is not None:
                candidate.rewrite, candidate.reused = reused, True
            else:
                try:
                    candidate.rewrite = llm.structured(messages_for(parent, style, k, config.seeds), Rewrite)
                except LLMError as e:
                    removed.append((cid, STAGE, f"model failure: {e.reason}"))
                    continue
            problem = _check_files(parent, candidate.rewrite, style) if not candidate.reused else None
            if problem is None and normalise(candidate.rewrite.instruction) == normalise(parent.instruction):
                problem = "unchanged: the rewrite normalises to the original instruction"
            if problem is not None:
                removed.append((cid, STAGE, problem))
                continue
            candidates.append(candidate)
            say(f"{cid}: rewritten")

    candidates = _drop_near_duplicates(candidates, [*tasks["instruction"].fill_null("").to_list(), *existing],
                                       tasks["id"].to_list(), config.dedup, removed)  # fmt: skip

    written: list[tuple[_Candidate, Task, Task]] = []
    for c in candidates:
        assert c.rewrite is not None
        parent = parents[c.parent["id"]]
        try:
            task = write_rewrite(parent, c.folder, c.rewrite, c.style, c.parent["id"], llm.model, c.variant)
        except (TaskError, OSError) as e:
            removed.append((c.id, STAGE, f"rewritten task does not load: {e}"))
            if c.folder.exists():
                shutil.rmtree(c.folder)
            continue
        written.append((c, task, parent))

    rows: list[dict[str, Any]] = []
    verdicts: dict[str, int] = {}
    if written:
        with Pool.open(out_dir) as pool:
            audits = audit_folders(pool, [task.path for _, task, _ in written], config.audit, progress=say).audits
        for (c, task, parent), audit in zip(written, audits, strict=True):
            verdicts[audit.verdict.value] = verdicts.get(audit.verdict.value, 0) + 1
            if audit.verdict.value != "accepted":
                codes = sorted({f.code.value for f in audit.findings if f.severity.value == "error"})
                removed.append((c.id, STAGE, f"audit: {audit.verdict.value} ({', '.join(codes) or 'no codes'})"))
                _reject(c.folder, out_dir)
                continue
            # a rewrite may not make the task worse: no warning its original does not have
            before = {f.message.split(":", 1)[-1] for f in lint_task(parent, config.audit.lint)}
            added = [
                f for f in audit.findings if f.severity.value == "warning" and f.message.split(":", 1)[-1] not in before
            ]
            if added:
                shown = "; ".join(f.message[:160] for f in added[:2])
                removed.append((c.id, STAGE, f"audit: accepted, but the rewrite adds a warning ({shown})"))
                _reject(c.folder, out_dir)
                continue
            rows.append(
                {
                    "id": c.id,
                    "source": c.parent["source"],
                    "original_id": c.parent["original_id"],
                    "licence": c.parent.get("licence"),
                    "name": task.name,
                    "instruction": task.instruction,
                    "path": str(task.path),
                    "version": task.version,
                    "parent_id": c.parent["id"],
                    "augment_style": c.style.value,
                    "augment_variant": c.variant,
                    "status": "accepted",
                }
            )
    schema = TASK_SCHEMA | {
        "parent_id": pl.String(),
        "augment_style": pl.String(),
        "augment_variant": pl.Int64(),
        "status": pl.String(),
    }
    info = {
        "parents": tasks.height,
        "styles": [s.value for s in config.styles],
        "seeds": config.seeds,
        "rewritten": len(candidates),
        "reused": sum(c.reused for c in candidates),
        "audited": len(written),
        "verdicts": verdicts,
        "kept": len(rows),
        "llm": llm.account.summary(),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return StageResult(kept=pl.DataFrame(rows, schema=schema), removed=removed_frame(removed), info=info)


def _drop_near_duplicates(
    candidates: list[_Candidate],
    existing: list[str],
    existing_ids: list[str],
    config: DedupConfig,
    removed: list[tuple[str, str, str]],
) -> list[_Candidate]:
    texts = [c.rewrite.instruction for c in candidates if c.rewrite is not None]
    against = near_duplicates_against(texts, existing, config)
    inner = near_duplicate_pairs([normalise(t) for t in texts], config).pairs
    kept: list[_Candidate] = []
    dropped: set[int] = set()
    for index, c in enumerate(candidates):
        if index in against:
            other, similarity = against[index]
            label = existing_ids[other] if other < len(existing_ids) else f"existing instruction {other}"
            removed.append((c.id, STAGE, f"near duplicate of {label} (jaccard {similarity:.3f})"))
            dropped.add(index)
            continue
        earlier = [(i, s) for i, j, s in inner if j == index and i not in dropped]
        if earlier:
            i, similarity = earlier[0]
            removed.append((c.id, STAGE, f"near duplicate of rewrite {candidates[i].id} (jaccard {similarity:.3f})"))
            dropped.add(index)
            continue
        kept.append(c)
    return kept


def _reject(folder: Path, out_dir: Path) -> None:
    target = out_dir / REJECTED / folder.name
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    folder.rename(target)
