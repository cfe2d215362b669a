"""RL collection through a real vLLM server: token exactness, sampler/trainer agreement and throughput.

Start vLLM with dynamic LoRA loading, on a GPU machine (the model is any local Qwen3-style folder):

    VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve MODEL --served-model-name policy --enable-lora \\
        --max-lora-rank 16 --port 8000          # logprobs: vLLM's default --logprobs-mode raw_logprobs

then run, from the repository root:

    python bench/rl_endpoint_vllm.py --url http://127.0.0.1:8000 --model policy --tokenizer MODEL \\
        [--adapter runs/rl/round-0] [--conversations 64] [--turns 3] [--concurrency 32] [--check-logprobs]

It drives `qaflow-endpoint/<model>` (`sft/endpoint_llm.py`) the way a round does: `--conversations` multi-turn
conversations at effort low (a 256-token thinking budget, 256 answer tokens), each turn answered by a fixed
observation, `--concurrency` at once, every turn logged to a sample log. With `--adapter` the adapter is loaded
first (`POST /v1/load_lora_adapter`) and sampled with. It prints one JSON line: turns, seconds, turns and generated
tokens per second, how many conversations joined token for token (`rl.tokens.sequence_of`; must be all), and with
`--check-logprobs` the importance ratio trainer / sampler over the generated tokens (the trainer: the model, and
the adapter, loaded with transformers in float32 on the same machine): its mean and max, near 1 when the engine
samples what the trainer computes (bf16 engines: expect about 1e-2).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from qaflow.llm import LLM, LLMConfig  # noqa: E402
from qaflow.models.rollout import Effort  # noqa: E402
from rl.tokens import SampledSequence, sequence_of  # noqa: E402
from sft.endpoint_llm import PROVIDER, TOKENIZER_PARAM, load_adapter, register_endpoint_provider  # noqa: E402
from sft.local_llm import local_efforts  # noqa: E402
from sft.sampled import SAMPLE_LOG_PARAM, SampleLog  # noqa: E402

OBSERVATION = "exit code: 1\nstdout:\nFAILED tests/test_calc.py::test_mean - ZeroDivisionError\n"


def conversation(llm: LLM, index: int, turns: int) -> tuple[list[dict], int]:
    messages: list[dict] = [
        {"role": "system", "content": "You are a coding agent working in /app."},
        {"role": "user", "content": f"Task {index}: fix mean() in /app/calc.py so the tests pass."},
    ]
    tokens = 0
    for t in range(turns):
        reply = llm.complete(messages)
        tokens += reply.usage.completion_tokens
        messages.append(reply.message)
        if t < turns - 1:
            messages.append({"role": "user", "content": OBSERVATION})
    return messages, tokens


def trainer_ratio(model_dir: str, adapter: str | None, sequences: list[SampledSequence]) -> tuple[float, float]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    model = model.eval().to("cuda" if torch.cuda.is_available() else "cpu")
    ratios = []
    with torch.no_grad():
        for seq in sequences:
            ids = torch.tensor([seq.ids], device=model.device)
            logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1)
            own = logp.gather(-1, ids[0, 1:].unsqueeze(-1)).squeeze(-1).cpu()
            for p in range(1, len(seq.ids)):
                sampled = seq.logprobs[p]
                if seq.trained[p] and sampled is not None:
                    ratios.append(float(torch.exp(own[p - 1] - sampled)))
    return sum(ratios) / max(len(ratios), 1), max(ratios, default=float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True, help="The served name of the base model")
    parser.add_argument("--tokenizer", required=True, help="The model folder (its tokenizer and chat template)")
    parser.add_argument("--adapter", default=None, help="A LoRA adapter folder to load and sample with")
    parser.add_argument("--conversations", type=int, default=64)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--check-logprobs", action="store_true")
    args = parser.parse_args()

    register_endpoint_provider()
    served = args.model
    if args.adapter:
        served = "bench-adapter"
        load_adapter(args.url, served, Path(args.adapter).resolve())
    log = Path(tempfile.mkdtemp()) / "samples.jsonl"
    extra = {**local_efforts()[Effort.LOW], SAMPLE_LOG_PARAM: str(log), TOKENIZER_PARAM: args.tokenizer}
    llms = [
        LLM(
            LLMConfig(
                model=f"{PROVIDER}/{served}",
                api_base=args.url,
                max_tokens=256,
                temperature=1.0,
                concurrency=args.concurrency,
                extra={**extra, "seed": i},
            )
        )
        for i in range(args.conversations)
    ]
    started = time.monotonic()
    with ThreadPoolExecutor(args.concurrency) as pool:
        done = list(pool.map(lambda i: conversation(llms[i], i, args.turns), range(args.conversations)))
    seconds = time.monotonic() - started
    samples = SampleLog.read([log])
    joined = [
        sequence_of(m, {"sampling": {"seed": i, SAMPLE_LOG_PARAM: str(log)}}, samples) for i, (m, _) in enumerate(done)
    ]
    sequences = [s for s in joined if isinstance(s, SampledSequence)]
    tokens = sum(t for _, t in done)
    result = {
        "conversations": args.conversations,
        "turns": args.conversations * args.turns,
        "seconds": round(seconds, 2),
        "turns_per_s": round(args.conversations * args.turns / seconds, 2),
        "generated_tokens_per_s": round(tokens / seconds, 1),
        "token_exact": len(sequences),
        "not_joined": sorted({s for s in joined if isinstance(s, str)}),
    }
    if args.check_logprobs:
        result["ratio_mean"], result["ratio_max"] = trainer_ratio(args.tokenizer, args.adapter, sequences)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
