"""`qaflow sft train`: TRL's SFTTrainer on pre-tokenized, observation-masked sessions, LoRA by default.

The dataset is tokenized here (`sft.masking`), so TRL receives `input_ids` + `labels` and neither
re-renders nor truncates (max_length is handled by the explicit overlong rule: by default the model's
context length, a longer session left out and counted, or cut at a turn boundary with
`masking.overlong: truncate_turns`). A row's `effort` is rendered into its session as the policy sees it
(`sft.conditioning`: the template's own switch or the system line). Checkpoints are saved every
`save_steps` with a validation loss computed at the same steps.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from qaflow.model_source import model_source
from qaflow.models.export import EXPORT_REPORT_FILE
from sft.conditioning import effort_conditioning, own_template
from sft.config import SFTTrainConfig
from sft.masking import MaskingConfig, mask_sessions, model_context_length
from sft.templates import training_template

log = logging.getLogger(__name__)


class CheckpointInfo(BaseModel):
    path: Path
    step: int
    eval_loss: float | None = None
    train_loss: float | None = None


class TrainReport(BaseModel):
    output_dir: Path
    precision: Precision | None = Field(None, description="The precision it trained at (and any fallback).")
    rows: int
    dropped: list[tuple[int, str]] = Field(default_factory=list)
    truncated: int = 0
    context_length: int | None = Field(None, description="The session limit applied (None: none known).")
    train_examples: int = 0
    eval_examples: int = 0
    eval_split: str = ""
    """Where the validation sessions came from: the --eval dataset, the export's task-disjoint test split,
    whole tasks held out of the training rows, or none (and why)."""
    checkpoints: list[CheckpointInfo] = Field(default_factory=list)
    losses: list[float] = Field(default_factory=list, description="Training loss at every logging step.")
    learning_rates: list[float] = Field(default_factory=list, description="Learning rate at every logging step.")


def load_rows(path: Path, split: str = "train") -> Any:
    """An SFT dataset: the `split` of a `qaflow export sft` folder, a save_to_disk folder, a parquet file, or a
    folder of parquet files."""
    import datasets

    path = Path(path)
    if (path / EXPORT_REPORT_FILE).is_file():
        configs = json.loads((path / EXPORT_REPORT_FILE).read_text())["configs"]["default"]
        if split not in configs:
            raise FileNotFoundError(f"{path}: the export has no {split} split (it has {', '.join(configs)})")
        files = sorted(str(p) for p in path.glob(configs[split]))
        return datasets.load_dataset("parquet", data_files=files, split="train")
    if (path / "dataset_info.json").is_file() or (path / "state.json").is_file():
        return datasets.load_from_disk(str(path))
    files = [str(path)] if path.is_file() else sorted(str(p) for p in path.rglob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"{path}: no saved dataset or parquet files")
    return datasets.load_dataset("parquet", data_files=files, split="train")


def has_split(path: Path, split: str) -> bool:
    """Whether `path` is a `qaflow export sft` folder with that split."""
    report = Path(path) / EXPORT_REPORT_FILE
    return report.is_file() and split in json.loads(report.read_text())["configs"]["default"]


def held_out_tasks(tasks: list[str | None], fraction: float, seed: int) -> set[str]:
    """Whole tasks to validate on, about `fraction` of the rows, at least one task left to train on (none with
    fewer than two tasks): attempts of one task never land on both sides."""
    distinct = sorted({t for t in tasks if t})
    if len(distinct) < 2 or fraction <= 0:
        return set()
    order = distinct[:]
    random.Random(seed).shuffle(order)
    sizes = {t: tasks.count(t) for t in distinct}
    want, chosen, rows = max(1, round(fraction * len(tasks))), set(), 0
    for task in order[:-1]:
        if rows >= want:
            break
        chosen.add(task)
        rows += sizes[task]
    return chosen


def tokenize_dataset(rows: Any, tokenizer: Any, template: str, masking: MaskingConfig) -> tuple[Any, Any]:
    """(datasets.Dataset of input_ids/labels, MaskingResult); each row under its effort's conditioning."""
    import datasets

    efforts = rows["effort"] if "effort" in rows.column_names else [None] * len(rows)
    switch_source = own_template(tokenizer, template)
    conditioning = [effort_conditioning(switch_source, e) for e in efforts]
    result = mask_sessions(rows["messages"], rows["tools"], tokenizer, template, masking, conditioning)
    data = datasets.Dataset.from_dict(
        {"input_ids": [e.input_ids for e in result.examples], "labels": [e.labels for e in result.examples]}
    )
    return data, result


def checkpoint_infos(output_dir: Path) -> list[CheckpointInfo]:
    """Every `checkpoint-N` folder with the validation and training loss logged at step N."""
    checkpoints = sorted(
        (p for p in Path(output_dir).glob("checkpoint-*") if p.is_dir()), key=lambda p: int(p.name.split("-")[1])
    )
    history: list[dict[str, Any]] = []
    if checkpoints:
        state = checkpoints[-1] / "trainer_state.json"
        if state.is_file():
            history = json.loads(state.read_text())["log_history"]
    infos = []
    for path in checkpoints:
        step = int(path.name.split("-")[1])
        evals = [h["eval_loss"] for h in history if h.get("step") == step and "eval_loss" in h]
        trains = [h["loss"] for h in history if h.get("step") == step and "loss" in h]
        infos.append(
            CheckpointInfo(
                path=path, step=step, eval_loss=evals[-1] if evals else None, train_loss=trains[-1] if trains else None
            )
        )
    return infos


def session_masking(config: SFTTrainConfig, source: str, tokenizer: Any) -> MaskingConfig:
    """The run's length rule: `masking` with max_length filled in from the model's context when unset."""
    if config.masking.max_length is not None:
        return config.masking
    from transformers import AutoConfig

    limit = model_context_length(AutoConfig.from_pretrained(source), tokenizer)
    return config.masking.model_copy(update={"max_length": limit})


class Precision(BaseModel):
    """The precision training runs at, and why."""

    setting: str = Field(description="The configured `bf16`: auto, true or false.")
    bf16: bool
    note: str = Field("", description="Why `auto` fell back to fp32; empty when it did not fall back.")


def resolve_precision(setting: str | bool, *, cuda: bool, bf16_supported: bool) -> Precision:
    """`bf16: auto` is bf16 where the hardware supports it, else fp32 with a note saying so."""
    if setting != "auto":
        return Precision(setting=str(setting).lower(), bf16=bool(setting))
    if cuda and bf16_supported:
        return Precision(setting="auto", bf16=True)
    why = "no CUDA device" if not cuda else "the CUDA device does not support bf16"
    return Precision(setting="auto", bf16=False, note=f"bf16: auto fell back to fp32 ({why})")


def _precision(setting: str | bool) -> Precision:
    import torch

    cuda = bool(torch.cuda.is_available())
    return resolve_precision(setting, cuda=cuda, bf16_supported=cuda and bool(torch.cuda.is_bf16_supported()))


def train(config: SFTTrainConfig) -> TrainReport:
    """Tokenize, split, train, checkpoint; returns what was done."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    source = model_source(config.model)
    tokenizer = AutoTokenizer.from_pretrained(source)
    template = training_template(tokenizer, config.chat_template)
    rows = load_rows(config.dataset)
    masking = session_masking(config, source, tokenizer)
    data, masked = tokenize_dataset(rows, tokenizer, template, masking)
    precision = _precision(config.bf16)
    if precision.note:
        log.warning("%s", precision.note)
    report = TrainReport(
        output_dir=config.output_dir,
        precision=precision,
        rows=len(rows),
        dropped=masked.dropped,
        truncated=masked.truncated,
        context_length=masking.max_length,
    )
    if len(data) == 0:
        raise ValueError(f"{config.dataset}: no session left to train on after masking ({len(masked.dropped)} dropped)")
    if config.eval_dataset is not None:
        eval_data, _ = tokenize_dataset(load_rows(config.eval_dataset), tokenizer, template, masking)
        train_data, report.eval_split = data, f"the eval dataset {config.eval_dataset}"
    elif has_split(config.dataset, "test"):
        eval_data, _ = tokenize_dataset(load_rows(config.dataset, "test"), tokenizer, template, masking)
        train_data, report.eval_split = data, "the export's test split (task-disjoint)"
    elif config.eval_fraction > 0 and "task" in rows.column_names:
        tasks = list(rows["task"])
        held = held_out_tasks(tasks, config.eval_fraction, config.seed)
        sides = [tasks[e.index] in held for e in masked.examples]
        eval_data = data.select([i for i, side in enumerate(sides) if side]) if held else None
        train_data = data.select([i for i, side in enumerate(sides) if not side]) if held else data
        report.eval_split = (
            f"{len(held)} whole task(s) held out of the training rows" if held else "none: fewer than two tasks"
        )
    elif config.eval_fraction > 0 and len(data) >= 2:
        split = data.train_test_split(test_size=config.eval_fraction, seed=config.seed)
        train_data, eval_data = split["train"], split["test"]
        report.eval_split = "random rows (the dataset has no task column)"
    else:
        train_data, eval_data, report.eval_split = data, None, "none (eval_fraction 0)"
    if eval_data is not None and len(eval_data) == 0:
        eval_data = None
    report.train_examples, report.eval_examples = len(train_data), len(eval_data) if eval_data is not None else 0

    peft_config = None
    if config.lora is not None:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=config.lora.r,
            lora_alpha=config.lora.alpha,
            lora_dropout=config.lora.dropout,
            target_modules=config.lora.target_modules,
            task_type="CAUSAL_LM",
        )
    args = SFTConfig(
        output_dir=str(config.output_dir),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.batch_size,
        gradient_accumulation_steps=config.grad_accum,
        warmup_steps=config.warmup,
        lr_scheduler_type=config.lr_scheduler_type,
        logging_steps=config.logging_steps,
        save_strategy="steps",
        save_steps=config.save_steps,
        eval_strategy="steps" if eval_data is not None else "no",
        eval_steps=config.save_steps,
        bf16=precision.bf16,
        use_cpu=config.use_cpu,
        seed=config.seed,
        max_length=None,
        report_to=[],
        save_only_model=True,
        disable_tqdm=True,
    )
    model = AutoModelForCausalLM.from_pretrained(source)
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=train_data,
        eval_dataset=eval_data,
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    trainer.train()
    final = Path(config.output_dir) / "final"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    report.losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    report.learning_rates = [h["learning_rate"] for h in trainer.state.log_history if "learning_rate" in h]
    report.checkpoints = checkpoint_infos(config.output_dir)
    (Path(config.output_dir) / "qaflow_sft_report.json").write_text(report.model_dump_json(indent=2))
    return report


TrainReport.model_rebuild()
