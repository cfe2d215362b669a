"""SFT stage on CPU with the tiny offline model: masking at the token level, loss checker, gradients,
training with LoRA, checkpoint selection by agentic success."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import datasets
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from sft.check import check_sessions
from sft.config import SFTTrainConfig
from sft.local_llm import parse_reply
from sft.masking import IGNORE_INDEX, MaskingConfig, clean_messages, mask_sessions
from sft.select import EvalOutcome, select_checkpoint
from sft.templates import training_template
from sft.tiny_model import build_tiny_model
from sft.train import CheckpointInfo, held_out_tasks, train
from tests.trajectories import make_record


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def tokenizer(tiny: Path):
    return AutoTokenizer.from_pretrained(tiny)


def session(steps: int = 3) -> tuple[list[dict], list[dict]]:
    record = make_record(tool_steps=steps)
    record.messages[3]["content"] = "TOOL-OUTPUT-0: secret observation text\n"
    return record.messages, record.tools


def expected_assistant_text(message: dict) -> str:
    """What the assistant generated in one turn, written out by hand in Qwen3's training format."""
    text = (
        "<think>\n"
        + (message.get("reasoning_content") or "").strip("\n")
        + "\n</think>\n\n"
        + (message.get("content") or "")
    )
    for i, call in enumerate(message.get("tool_calls") or []):
        if i or message.get("content"):
            text += "\n"
        fn = call["function"]
        text += '<tool_call>\n{"name": "' + fn["name"] + '", "arguments": ' + fn["arguments"] + "}\n</tool_call>"
    return text + "<|im_end|>\n"


def labelled_runs(ids: list[int], labels: list[int]) -> list[list[int]]:
    runs, current = [], []
    for token, label in zip(ids, labels, strict=True):
        if label != IGNORE_INDEX:
            assert label == token, "a label is either the input token or -100"
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def test_tiny_model_loads_through_from_pretrained(tiny: Path, tokenizer) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny)
    assert model.config.model_type == "qwen3" and sum(p.numel() for p in model.parameters()) < 200_000
    text = "any text, even <|im_end|> and ünïcode\n"
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text


def test_only_assistant_generated_tokens_carry_loss(tokenizer) -> None:
    messages, tools = session()
    template = training_template(tokenizer)
    example = mask_sessions([messages], [tools], tokenizer, template).examples[0]
    runs = labelled_runs(example.input_ids, example.labels)
    assistants = [m for m in messages if m["role"] == "assistant"]
    # independent reconstruction: each labelled run decodes to exactly one assistant turn as written by hand
    assert [tokenizer.decode(r) for r in runs] == [expected_assistant_text(m) for m in assistants]
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert all(im_end in r for r in runs), "every assistant turn's end-of-turn token carries loss"
    unlabelled = tokenizer.decode(
        [t for t, lab in zip(example.input_ids, example.labels, strict=True) if lab == IGNORE_INDEX]
    )
    assert "TOOL-OUTPUT-0: secret observation text" in unlabelled
    assert "Solve demo/task." in unlabelled and "You are a coding agent." in unlabelled
    # and identical to transformers' own assistant mask, which TRL's assistant_only_loss uses
    reference = tokenizer.apply_chat_template(
        clean_messages(messages), tools=tools, chat_template=template, tokenize=True, return_dict=True,
        return_assistant_tokens_mask=True,
    )  # fmt: skip
    assert example.input_ids == list(reference["input_ids"])
    assert example.labels == [
        t if m else IGNORE_INDEX for t, m in zip(reference["input_ids"], reference["assistant_masks"], strict=True)
    ]


def test_overlong_sessions_are_dropped_or_cut_at_a_turn_boundary(tokenizer) -> None:
    messages, tools = session(steps=6)
    template = training_template(tokenizer)
    full = mask_sessions([messages], [tools], tokenizer, template).examples[0]
    limit = len(full.input_ids) - 40
    dropped = mask_sessions([messages], [tools], tokenizer, template, MaskingConfig(max_length=limit))
    assert dropped.examples == [] and dropped.dropped == [(0, f"{len(full.input_ids)} tokens > max_length {limit}")]
    cut = mask_sessions(
        [messages], [tools], tokenizer, template, MaskingConfig(max_length=limit, overlong="truncate_turns")
    )
    example = cut.examples[0]
    assert example.truncated and len(example.input_ids) <= limit
    assert example.input_ids == full.input_ids[: len(example.input_ids)]
    assert tokenizer.decode(example.input_ids).endswith("</tool_call><|im_end|>\n")
    runs = labelled_runs(example.input_ids, example.labels)
    assert len(runs) < len(labelled_runs(full.input_ids, full.labels))
    tiny_limit = mask_sessions(
        [messages], [tools], tokenizer, template, MaskingConfig(max_length=16, overlong="truncate_turns")
    )
    assert tiny_limit.examples == [] and "no assistant turn ends before it" in tiny_limit.dropped[0][1]


def turn_ends(labels: list[int]) -> list[int]:
    """The lengths of the prefixes that end where an assistant turn ends."""
    return [i + 1 for i, lab in enumerate(labels) if lab != IGNORE_INDEX and (i + 1 == len(labels)
            or labels[i + 1] == IGNORE_INDEX)]  # fmt: skip


def test_a_limit_at_a_turn_boundary_keeps_that_turn_and_a_session_of_exactly_the_limit_is_whole(tokenizer) -> None:
    messages, tools = session(steps=4)
    template = training_template(tokenizer)
    full = mask_sessions([messages], [tools], tokenizer, template).examples[0]
    second = turn_ends(full.labels)[1]
    at_boundary = MaskingConfig(max_length=second, overlong="truncate_turns")
    (cut,) = mask_sessions([messages], [tools], tokenizer, template, at_boundary).examples
    assert cut.truncated and cut.input_ids == full.input_ids[:second]
    for overlong in ("drop", "truncate_turns"):
        exact = MaskingConfig(max_length=len(full.input_ids), overlong=overlong)
        (whole,) = mask_sessions([messages], [tools], tokenizer, template, exact).examples
        assert not whole.truncated and whole.input_ids == full.input_ids


def test_a_session_without_assistant_tokens_is_dropped_with_its_reason(tokenizer) -> None:
    messages, tools = session()
    template = training_template(tokenizer)
    result = mask_sessions([messages[:2], messages], [tools, tools], tokenizer, template)
    assert [e.index for e in result.examples] == [1]
    assert result.dropped == [(0, "no assistant tokens: nothing to learn")]


def test_the_session_limit_is_the_models_context_unless_the_config_sets_one(tiny: Path, tokenizer) -> None:
    from sft.train import session_masking

    config = SFTTrainConfig(model=str(tiny), dataset=Path("d"), output_dir=Path("o"))
    default = session_masking(config, str(tiny), tokenizer)
    assert (default.max_length, default.overlong) == (8192, "drop")  # the tiny config's max_position_embeddings
    set_ = config.model_copy(update={"masking": MaskingConfig(max_length=512, overlong="truncate_turns")})
    assert session_masking(set_, str(tiny), tokenizer) == MaskingConfig(max_length=512, overlong="truncate_turns")


def test_checker_counts_loss_per_role_and_flags_a_leaky_template(tokenizer) -> None:
    messages, tools = session()
    messages[5]["content"] = "output with a forged <|im_end|> inside"
    report = check_sessions([messages], [tools], tokenizer, training_template(tokenizer))
    roles = report.roles
    assert report.ok and roles["tool"].loss_tokens == 0 and roles["user"].loss_tokens == 0
    assert roles["system"].loss_tokens == 0 and roles["assistant"].loss_tokens > 0
    assert roles["tool"].tokens > 0
    assert any("control token" in w for w in report.sessions[0].warnings)
    leaky = training_template(tokenizer).replace(
        "{{- '\\n<tool_response>\\n' }}", "{%- generation %}{{- '\\n<tool_response>\\n' }}{%- endgeneration %}"
    )
    assert leaky != training_template(tokenizer)
    bad = check_sessions([messages], [tools], tokenizer, leaky)
    assert not bad.ok and any("(tool) has" in e for e in bad.errors)


def test_masked_positions_get_no_gradient(tiny: Path, tokenizer) -> None:
    messages, tools = session()
    example = mask_sessions([messages], [tools], tokenizer, training_template(tokenizer)).examples[0]
    model = AutoModelForCausalLM.from_pretrained(tiny)
    ids = torch.tensor([example.input_ids])
    labels = torch.tensor([example.labels])
    out = model(input_ids=ids, output_hidden_states=False)
    logits = out.logits
    logits.retain_grad()
    loss = torch.nn.functional.cross_entropy(logits[0, :-1], labels[0, 1:], ignore_index=IGNORE_INDEX)
    loss.backward()
    grad = logits.grad[0, :-1].abs().sum(-1)
    target_masked = labels[0, 1:] == IGNORE_INDEX
    assert torch.all(grad[target_masked] == 0) and torch.all(grad[~target_masked] > 0)
    # perturbing the targets at tool-observation positions changes nothing in the loss
    perturbed = labels.clone()
    tool_span = (ids[0] != perturbed[0]) & (perturbed[0] == IGNORE_INDEX)
    assert tool_span.any()
    assert torch.equal(model(input_ids=ids, labels=labels).loss, model(input_ids=ids, labels=perturbed).loss)
    # the model's own loss is our masked cross entropy
    assert model(input_ids=ids, labels=labels).loss.item() == pytest.approx(loss.item(), rel=1e-5)


@pytest.fixture(scope="module")
def sft_run(tiny: Path, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("sft")
    rows = [make_record(tool_steps=5 + i % 3, task=f"t{i // 2}") for i in range(12)]  # two attempts per task
    datasets.Dataset.from_list(
        [{"messages": clean_messages(r.messages), "tools": json.dumps(r.tools), "task": r.task} for r in rows]
    ).save_to_disk(str(root / "data"))
    (root / "sft.yaml").write_text(
        f"model: {tiny}\ndataset: data\noutput_dir: run\nmax_steps: 12\nsave_steps: 6\nlogging_steps: 2\n"
        "grad_accum: 1\nbatch_size: 2\nlearning_rate: 0.01\nuse_cpu: true\neval_fraction: 0.25\n"
        "lora: {r: 8, alpha: 16, dropout: 0.0}\n"
    )
    config = SFTTrainConfig.load(root / "sft.yaml")
    return config, train(config)


def test_training_lowers_the_loss_and_checkpoints_carry_validation_loss(sft_run) -> None:
    config, report = sft_run
    assert report.train_examples == 8 and report.eval_examples == 4  # two whole tasks: 3 rows wanted, 4 held
    assert report.eval_split == "2 whole task(s) held out of the training rows"
    # the sessions are measured against the model's own context (its config), none left out or cut
    assert (report.context_length, report.dropped, report.truncated) == (8192, [], 0)
    assert report.losses[-1] < report.losses[0]
    # the cosine schedule (the default): past warmup it falls slowly, then fast, then slowly towards 0
    assert config.lr_scheduler_type == "cosine"
    lrs = report.learning_rates
    steps = [a - b for a, b in itertools.pairwise(lrs)]
    assert len(lrs) == 6 and all(d > 0 for d in steps) and lrs[-1] < 0.1 * 0.01
    assert steps[0] < steps[2] > steps[-1]
    assert [c.step for c in report.checkpoints] == [6, 12]
    assert all(c.eval_loss is not None for c in report.checkpoints)
    assert (config.output_dir / "checkpoint-6" / "adapter_model.safetensors").is_file()
    # `bf16: auto` on a machine without bf16 trains in fp32 and says so, in the report file too
    assert report.precision is not None and not report.precision.bf16
    assert report.precision.note.startswith("bf16: auto fell back to fp32")
    saved = json.loads((config.output_dir / "qaflow_sft_report.json").read_text())
    assert saved["precision"]["note"] == report.precision.note


@pytest.mark.parametrize("seed", range(20))
def test_held_out_tasks_are_whole_and_leave_one_to_train_on(seed: int) -> None:
    rng = random.Random(seed)
    tasks: list[str | None] = [f"t{rng.randrange(6)}" for _ in range(rng.randrange(1, 30))] + [None]
    held = held_out_tasks(tasks, 0.2, seed)
    names = {t for t in tasks if t}
    if len(names) < 2:
        assert held == set()
    else:
        assert held and held < names  # at least one task each side, never a task split across them
        assert held == held_out_tasks(tasks, 0.2, seed)  # deterministic


def test_the_learning_rate_schedule_is_a_config_option(tmp_path: Path) -> None:
    from qaflow.errors import ConfigError

    (tmp_path / "sft.yaml").write_text("model: m\ndataset: data\noutput_dir: run\nlr_scheduler_type: linear\n")
    assert SFTTrainConfig.load(tmp_path / "sft.yaml").lr_scheduler_type == "linear"
    (tmp_path / "sft.yaml").write_text("model: m\ndataset: data\noutput_dir: run\nlr_scheduler_type: zigzag\n")
    with pytest.raises(ConfigError, match="lr_scheduler_type"):
        SFTTrainConfig.load(tmp_path / "sft.yaml")


def test_lora_adapters_save_and_reload(sft_run, tiny: Path, tokenizer) -> None:
    from peft import PeftModel

    config, _ = sft_run
    final = config.output_dir / "final"
    base = AutoModelForCausalLM.from_pretrained(tiny)
    tuned = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny), str(final))
    ids = torch.tensor([tokenizer.encode("<|im_start|>assistant\n<think>", add_special_tokens=False)])
    with torch.no_grad():
        a, b = base(ids).logits, tuned(ids).logits
        again = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny), str(final))(ids).logits
    assert not torch.allclose(a, b) and torch.allclose(b, again)


def test_selection_prefers_solved_tasks_over_loss(tmp_path: Path) -> None:
    from sft.select import SelectConfig, load_tasks
    from tests.taskfactory import write_task

    write_task(tmp_path / "pool", "a")
    infos = [
        CheckpointInfo(path=Path("run/checkpoint-10"), step=10, eval_loss=1.20),
        CheckpointInfo(path=Path("run/checkpoint-20"), step=20, eval_loss=0.80),
        CheckpointInfo(path=Path("run/checkpoint-30"), step=30, eval_loss=0.95),
    ]
    solved = {10: 3, 20: 1, 30: 3}
    selection = select_checkpoint(
        infos,
        load_tasks(tmp_path / "pool"),
        lambda info, tasks, effort, attempts: EvalOutcome(
            solved=solved[info.step], attempted=4, mean_output_tokens=100.0
        ),
        SelectConfig(subset_size=0),
    )
    assert selection.chosen == "run/checkpoint-30"  # tie on solved (3): lower validation loss wins
    assert selection.lowest_loss == "run/checkpoint-20"
    assert selection.frame()["solved"].to_list() == [3, 1, 3]


def test_reply_parsing_of_the_local_backend() -> None:
    content, reasoning, calls = parse_reply(
        "<think>\nlook first\n</think>\n\nLet me see.\n"
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
        "<tool_call>{broken</tool_call>"
    )
    assert (content, reasoning) == ("Let me see.", "look first")
    assert calls[0]["function"] == {"name": "bash", "arguments": '{"command": "ls"}'}
    assert calls[1]["function"] == {"name": "", "arguments": "{broken"}


@pytest.mark.bwrap
def test_harness_evaluates_a_local_checkpoint_end_to_end(sft_run, tmp_path: Path) -> None:
    from sft.select import HarnessEvaluator
    from tests.conftest import require_backend
    from tests.taskfactory import write_task

    require_backend("bwrap")
    _, report = sft_run
    write_task(tmp_path / "pool", "a")
    from qaflow.agents.harness import HarnessConfig
    from qaflow.models.rollout import Effort
    from sft.select import load_tasks

    evaluator = HarnessEvaluator(cache_dir=tmp_path / "eval", backend="bwrap", harness=HarnessConfig(max_turns=2))
    outcome = evaluator(report.checkpoints[0], load_tasks(tmp_path / "pool"), Effort.OFF, 1)
    assert (outcome.solved, outcome.attempted) == (0, 1)  # a random tiny model solves nothing, without crashing
    assert outcome.mean_output_tokens > 0
    assert len(list((tmp_path / "eval").rglob("*.parquet"))) == 1 and evaluator.runs == 1


def test_checker_fails_double_encoded_tool_calls_and_checks_an_export(tiny: Path, tokenizer, tmp_path: Path) -> None:
    import trl
    from typer.testing import CliRunner

    from curation.export import GateOptions, export_sft
    from qaflow.cli import app
    from qaflow.models.frame import records_to_frame

    messages, tools = session()
    qwen25 = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5_training.jinja").read_text()
    as_strings = check_sessions([messages], [tools], tokenizer, qwen25)
    assert not as_strings.ok
    assert [e for e in as_strings.errors if "double-encoded" in e] == [
        f"session 0: message {i} tool call 0 (bash): arguments are rendered double-encoded (a JSON string, not an "
        "object)"
        for i in (2, 4, 6)
    ]
    objects = [
        {**m, "tool_calls": [{**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                             for c in m["tool_calls"]]} if m.get("tool_calls") else m
        for m in messages
    ]  # fmt: skip
    assert check_sessions([objects], [tools], tokenizer, qwen25).ok

    out = tmp_path / "sft"
    records = [make_record(task=f"demo/t{i}", tool_steps=3) for i in range(4)]
    export_sft(records_to_frame(records), out, gate=GateOptions(include_unaccepted=True), sharegpt=False)
    template = tmp_path / "qwen25.jinja"
    template.write_text(qwen25)
    result = CliRunner().invoke(app, ["sft", "check", str(out), "--model", str(tiny), "--template", str(template)])
    assert result.exit_code == 0, result.output
    assert "loss by role · 4 sessions" in result.output
