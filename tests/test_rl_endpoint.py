"""RL collection through an inference server, end to end: a real HTTP server process (`sft.completions_server`,
the tiny coin policy behind vLLM's token-level API subset, loopback only) samples; the round trains on what it
sampled; the adapter of the update is loaded into the server; the next round samples with it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import polars as pl
import pytest
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM

from rl.round import SAMPLE_LOG_FILE, RoundConfig, run_round
from sft.sampled import SampleLog
from tests.test_rl_round import INSTRUCTION, SYSTEM, coin_policy, one_thread  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.bwrap]


@pytest.fixture
def server(coin_policy: Path) -> Iterator[str]:  # noqa: F811 (the imported fixture)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sft.completions_server", str(coin_policy), "--name", "policy", "--host", "127.0.0.1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), line
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def round_config(policy: Path, tmp_path: Path, url: str, round_: int, adapter: Path | None) -> RoundConfig:
    return RoundConfig.model_validate(
        {
            "policy": str(policy),
            "adapter": str(adapter) if adapter else None,
            "output_dir": str(tmp_path / "out"),
            "pool": str(tmp_path / "pool"),
            "efforts": ["low", "xhigh"],
            "attempts": 4,
            "backend": "bwrap",
            "max_new_tokens": 64,
            "thinking_budgets": {"low": 4, "xhigh": 8},
            "harness": {"max_turns": 2, "system_prompt": SYSTEM},
            "round": round_,
            "endpoint": {"url": url, "model": "policy", "concurrency": 4},
            "update": {"learning_rate": 3e-2, "epochs": 2, "batch_size": 4, "lora": {"r": 8, "alpha": 16}},
        }
    )


def test_rounds_collect_through_the_server_and_the_next_round_samples_with_the_new_adapter(
    coin_policy: Path,  # noqa: F811 (the imported fixture)
    server: str,
    tmp_path: Path,
) -> None:
    from qaflow.ledger.status import StatusWriter
    from qaflow.models.records import VersionStatus
    from qaflow.pool import Pool
    from tests.conftest import require_backend
    from tests.taskfactory import write_task

    require_backend("bwrap")
    write_task(tmp_path / "pool", "a", instruction=INSTRUCTION)
    with Pool.open(tmp_path / "pool") as pool:
        pool.scan()
        version = next(r for r in pool.list() if r.name == "test/a").version
        pool.ledger.set_status(version, VersionStatus.ACCEPTED, by=StatusWriter.AUDIT, reason="test")

    first = run_round(round_config(coin_policy, tmp_path, server, 0, None))
    assert first.updated, first.reason
    assert first.collected == 8 and first.retokenized == {} and first.update.retokenized_turns == 0
    assert first.update.sampled_turns > 0 and first.update.samplers == [f"{server} policy (no adapter)"]
    assert first.update.ratio_mean == pytest.approx(1.0, abs=1e-3) and first.update.ratio_max < 1.01

    second = run_round(round_config(coin_policy, tmp_path, server, 1, first.checkpoint))
    models = httpx.get(f"{server}/v1/models").json()["data"]
    loaded = [m for m in models if m["parent"] == "policy"]
    assert [m["root"] for m in loaded] == [str(Path(first.checkpoint).resolve())]
    name = loaded[0]["id"]
    # every rollout of the second round is joined to its sampled turns (whether or not its rewards vary)
    assert second.collected == 8 and second.retokenized == {} and second.update.retokenized_turns == 0
    # the server sampled with the new adapter: the trainer's model (base + that adapter) gives the sampled tokens
    # the sampled log-probabilities, while the base model alone gives them others
    log = SampleLog.read([Path(second.round_dir) / SAMPLE_LOG_FILE])
    assert {t.adapter for t in log.turns.values()} == {name}
    assert {t.sampler for t in log.turns.values()} == {f"{server} policy"}
    turn = next(iter(log.turns.values()))
    ids = torch.tensor([turn.context_ids + turn.ids])
    base = AutoModelForCausalLM.from_pretrained(coin_policy).eval()
    tuned = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(coin_policy), str(first.checkpoint)).eval()
    with torch.no_grad():
        start = len(turn.context_ids)
        under = {
            label: torch.log_softmax(m(input_ids=ids).logits[0, start - 1 : -1], -1)
            .gather(-1, torch.tensor(turn.ids).unsqueeze(-1))
            .squeeze(-1)
            for label, m in (("base", base), ("tuned", tuned))
        }
    sampled = torch.tensor(turn.logprobs)
    trained = torch.tensor(turn.trained)
    assert torch.allclose(sampled[trained], under["tuned"][trained], atol=1e-4)
    assert (sampled[trained] - under["base"][trained]).abs().max() > 1e-3
    scored = pl.read_parquet(Path(second.round_dir) / "scored_rollouts.parquet")
    assert all(json.loads(m)["sampling"]["adapter"] == name for m in scored["meta_json"])
