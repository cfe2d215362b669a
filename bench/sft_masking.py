"""SFT masking throughput: our batched observation-masked tokenization against TRL's own
`assistant_only_loss` preprocessing of the same rows, in the same run; labels must be identical.

TRL's side is `SFTTrainer._prepare_dataset` on a `datasets.Dataset` of `messages` + `tools` (per row:
`apply_chat_template(..., return_assistant_tokens_mask=True)`, then labels from the mask). Ours is
`sft.masking.mask_sessions` over the same rows, plus building the same Dataset of input_ids/labels.
Target: ratio (TRL seconds / ours) >= 1.

Usage: python bench/sft_masking.py [--sessions 10000]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from qaflow.agents.tool_specs import TOOLS  # noqa: E402
from sft.masking import IGNORE_INDEX, clean_messages, mask_sessions  # noqa: E402
from sft.templates import training_template  # noqa: E402
from sft.tiny_model import build_tiny_model  # noqa: E402


def synthetic_sessions(n: int, seed: int = 0) -> list[list[dict]]:
    rng = random.Random(seed)
    words = [
        "read",
        "the",
        "file",
        "then",
        "edit",
        "calc.py",
        "run",
        "pytest",
        "check",
        "output",
        "fix",
        "mean",
        "median",
        "variance",
        "done",
    ]
    sessions = []
    for i in range(n):
        messages = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": f"Task {i}: " + " ".join(rng.choices(words, k=30))},
        ]
        for t in range(rng.randint(4, 12)):
            call_id = f"c{i}_{t}"
            messages.append(
                {
                    "role": "assistant",
                    "content": " ".join(rng.choices(words, k=rng.randint(0, 12))),
                    "reasoning_content": " ".join(rng.choices(words, k=rng.randint(5, 40))),
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "bash", "arguments": json.dumps({"command": f"echo {t}"})},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": " ".join(rng.choices(words, k=60))})
        messages.append({"role": "assistant", "content": "Done."})
        sessions.append(messages)
    return sessions


def trl_labels(rows, tokenizer, template: str, tiny: Path):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    model = AutoModelForCausalLM.from_pretrained(tiny)
    args = SFTConfig(
        output_dir=tempfile.mkdtemp(), assistant_only_loss=True, max_length=None, report_to=[], use_cpu=True,
        chat_template_path=None,
    )  # fmt: skip
    tiny_ds = Dataset.from_list(rows[:2])
    trainer = SFTTrainer(model=model, args=args, train_dataset=tiny_ds, processing_class=tokenizer)
    dataset = Dataset.from_list(rows)
    started = time.perf_counter()
    prepared = trainer._prepare_dataset(dataset, tokenizer, args, False, None, "bench")
    seconds = time.perf_counter() - started
    return prepared, seconds, trainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    args = parser.parse_args()
    from datasets import Dataset, disable_progress_bars
    from transformers import AutoTokenizer

    disable_progress_bars()
    tiny = build_tiny_model(Path(tempfile.mkdtemp()) / "tiny")
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    template = training_template(tokenizer)
    tokenizer.chat_template = template  # both sides render with the same training template
    sessions = synthetic_sessions(args.sessions)
    tools_json = json.dumps(TOOLS)
    rows = [{"messages": clean_messages(s), "tools": tools_json} for s in sessions]
    messages = [r["messages"] for r in rows]

    prepared, trl_seconds, _ = trl_labels(rows, tokenizer, template, tiny)

    started = time.perf_counter()
    result = mask_sessions(messages, [tools_json] * len(rows), tokenizer, template)
    ours = Dataset.from_dict(
        {"input_ids": [e.input_ids for e in result.examples], "labels": [e.labels for e in result.examples]}
    )
    our_seconds = time.perf_counter() - started

    trl_rows = prepared.select_columns(["input_ids", "labels"]).to_list()
    identical = len(trl_rows) == len(ours) and all(
        t["input_ids"] == o["input_ids"] and t["labels"] == o["labels"]
        for t, o in zip(trl_rows, ours.to_list(), strict=True)
    )
    tokens = sum(len(e.input_ids) for e in result.examples)
    loss_tokens = sum(sum(1 for x in e.labels if x != IGNORE_INDEX) for e in result.examples)
    print(f"sessions: {len(rows)}  tokens: {tokens}  loss tokens: {loss_tokens} ({loss_tokens / tokens:.1%})")
    print(f"TRL assistant_only_loss preprocessing: {trl_seconds:.2f} s")
    print(f"qaflow mask_sessions:                  {our_seconds:.2f} s")
    print(f"identical labels: {identical}")
    print(f"ratio (TRL / ours): {trl_seconds / our_seconds:.2f}x  (target >= 1x)")
    if not identical:
        sys.exit(1)


if __name__ == "__main__":
    main()
