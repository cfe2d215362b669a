"""The LLM layer, offline: every scripted reply goes through the real `litellm.completion` mock path
(`mock_response`, `mock_tool_calls`), so litellm builds the responses and our code parses them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from qaflow.errors import LLMError, ToolCallError
from qaflow.llm import LLM, LLMConfig, ScriptedReply, UsageAccount, extract_json, parse_tool_calls
from qaflow.llm.client import import_litellm

MODEL = "openai/gpt-4o-mini"  # priced in litellm's bundled cost map
UNPRICED = "openai/scripted"

READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file of the task copy.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}
USER = [{"role": "user", "content": "hello"}]


class Verdict(BaseModel):
    accept: bool
    reasons: list[str] = Field(min_length=1)


def scripted(*replies: ScriptedReply | dict, model: str = MODEL, **config) -> tuple[LLM, list[float]]:
    """An LLM over a script, with a sleep that records backoff delays instead of waiting."""
    sleeps: list[float] = []
    script = [r if isinstance(r, ScriptedReply) else ScriptedReply(**r) for r in replies]
    llm = LLM(LLMConfig(model=model, script=script, backoff_s=0.5, **config), sleep=sleeps.append)
    return llm, sleeps


def test_plain_completion_records_usage_and_cost():
    llm, _ = scripted({"content": "hi there"})
    reply = llm.complete(USER)
    assert reply.message == {"role": "assistant", "content": "hi there"}
    assert (reply.content, reply.cached, reply.model, reply.finish_reason) == ("hi there", False, MODEL, "stop")
    # litellm's mock path reports 10 prompt and 20 completion tokens; the price comes from its local map
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (10, 20)
    assert reply.usage.cost_usd > 0 and not reply.usage.unpriced
    totals = llm.account.totals(MODEL)
    assert (totals.calls, totals.prompt_tokens, totals.completion_tokens) == (1, 10, 20)
    assert totals.cost_usd == pytest.approx(reply.usage.cost_usd)


def test_unknown_price_is_flagged_not_zero_cost_silently(capsys: pytest.CaptureFixture[str]):
    llm, _ = scripted({"content": "x"}, model=UNPRICED)
    reply = llm.complete(USER)
    assert reply.usage.unpriced and reply.usage.cost_usd == 0
    summary = llm.account.summary()
    assert summary["models"][UNPRICED]["unpriced"] and summary["total"]["unpriced"]
    assert "Provider List" not in capsys.readouterr().out  # litellm's banner would corrupt CLI output


def test_reasoning_is_returned_and_counted():
    llm, _ = scripted({"content": "42", "reasoning": "six times seven"})
    reply = llm.complete(USER)
    assert reply.reasoning == "six times seven" and reply.content == "42"
    assert reply.usage.reasoning_tokens == 3
    assert llm.account.totals(MODEL).reasoning_tokens == 3


def test_tool_calls_are_parsed_into_names_and_argument_dicts():
    llm, _ = scripted(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "tests/test.sh"}, "id": "call_a"}]},
        {
            "content": "thinking aloud",
            "reasoning": "r",
            "tool_calls": [{"name": "read_file", "arguments": {"path": "x"}}],
        },
    )
    reply = llm.complete(USER, tools=[READ_TOOL], tool_choice="auto")
    raw = reply.message["tool_calls"]
    assert raw == [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "tests/test.sh"}'},
        }
    ]
    [call] = parse_tool_calls(reply.message, [READ_TOOL])
    assert (call.id, call.name, call.arguments) == ("call_a", "read_file", {"path": "tests/test.sh"})
    # the dict path (reasoning) carries tool calls too
    second = llm.complete(USER, tools=[READ_TOOL])
    assert [c.arguments for c in parse_tool_calls(second.message, [READ_TOOL])] == [{"path": "x"}]
    assert second.content == "thinking aloud" and second.reasoning == "r"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ({"name": "delete_everything", "arguments": {}}, "unknown tool 'delete_everything'"),
        ({"name": "read_file", "arguments": '{"path": '}, "not valid JSON"),
        ({"name": "read_file", "arguments": '["a"]'}, "must be a JSON object"),
        ({"name": "read_file", "arguments": {"file": "a"}}, "missing required argument(s): path"),
    ],
)
def test_malformed_tool_calls_raise_a_message_for_the_model(call: dict, expected: str):
    llm, _ = scripted({"tool_calls": [call]})
    reply = llm.complete(USER, tools=[READ_TOOL])
    with pytest.raises(ToolCallError) as info:
        parse_tool_calls(reply.message, [READ_TOOL])
    assert expected in str(info.value)
    assert info.value.call_id == "call_0" and info.value.name == call["name"]
    if "unknown" in expected:
        assert "read_file" in str(info.value)  # tells the model what it may call


def test_structured_output_plain_and_fenced():
    good = {"accept": True, "reasons": ["tests check the output file"]}
    llm, _ = scripted({"content": json.dumps(good)}, {"content": f"Here it is:\n```json\n{json.dumps(good)}\n```\n"})
    assert llm.structured(USER, Verdict) == Verdict(**good)
    assert llm.structured([{"role": "system", "content": "You audit."}, *USER], Verdict) == Verdict(**good)
    assert llm.script_left() == 0


def test_structured_output_reasks_with_the_error(monkeypatch: pytest.MonkeyPatch):
    litellm = import_litellm()
    seen: list[list[dict]] = []
    real = litellm.completion

    def recording(**kwargs):
        seen.append(kwargs["messages"])
        return real(**kwargs)

    monkeypatch.setattr(litellm, "completion", recording)
    llm, _ = scripted({"content": "{accept: yes"}, {"content": '{"accept": false, "reasons": ["check deleted"]}'})
    assert llm.structured(USER, Verdict) == Verdict(accept=False, reasons=["check deleted"])
    assert len(seen) == 2
    assert "JSON schema" in seen[0][0]["content"] and '"reasons"' in seen[0][0]["content"]
    assert seen[1][-2] == {"role": "assistant", "content": "{accept: yes"}
    assert seen[1][-1]["role"] == "user" and "not valid JSON" in seen[1][-1]["content"]
    assert llm.account.totals(MODEL).calls == 2


def test_structured_output_invalid_three_times_is_an_error():
    bad = {"content": '{"accept": "maybe", "reasons": []}'}
    llm, _ = scripted(bad, bad, bad, bad)
    with pytest.raises(LLMError) as info:
        llm.structured(USER, Verdict, max_reasks=2)
    assert "no valid Verdict after 3 replies" in str(info.value) and "accept" in str(info.value)
    assert info.value.model == MODEL
    assert llm.script_left() == 1


def test_extract_json_tolerates_prose_and_fences():
    assert extract_json('```\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('Sure! {"a": {"b": [1, 2]}} Hope that helps.') == {"a": {"b": [1, 2]}}


def test_rate_limit_is_retried_with_backoff():
    llm, sleeps = scripted({"error": "rate_limit"}, {"content": "done"})
    reply = llm.complete(USER)
    assert reply.content == "done"
    assert len(sleeps) == 1 and 0.25 <= sleeps[0] <= 0.5  # backoff_s 0.5 with jitter in [0.5, 1]
    totals = llm.account.totals(MODEL)
    assert (totals.calls, totals.failed_calls) == (2, 1)


def test_every_retryable_error_kind_is_retried_and_backoff_grows():
    llm, sleeps = scripted(
        {"error": "timeout"}, {"error": "connection"}, {"error": "server"}, {"content": "ok"}, max_retries=3
    )
    assert llm.complete(USER).content == "ok"
    assert len(sleeps) == 3
    assert sleeps[2] >= 4 * 0.5 * 0.5  # third retry: 0.5 * 2**2, at least half of it after jitter


def test_backoff_is_capped():
    llm, sleeps = scripted(*[{"error": "timeout"}] * 5, {"content": "ok"}, backoff_max_s=0.6)
    assert llm.complete(USER).content == "ok"
    assert len(sleeps) == 5 and max(sleeps) <= 0.6  # uncapped, the last would be 0.5 * 2**4 * jitter


def test_timeouts_exhaust_retries_into_llm_error():
    llm, sleeps = scripted(*[{"error": "timeout"}] * 3, {"content": "never reached"}, max_retries=2)
    with pytest.raises(LLMError) as info:
        llm.complete(USER)
    assert "Timeout after 3 attempt(s)" in str(info.value)
    assert len(sleeps) == 2 and llm.script_left() == 1
    assert llm.account.totals(MODEL).failed_calls == 3


def test_non_retryable_error_is_raised_at_once():
    llm, sleeps = scripted({"error": "bad_request"}, {"content": "never reached"})
    with pytest.raises(LLMError, match="BadRequestError"):
        llm.complete(USER)
    assert sleeps == [] and llm.script_left() == 1


def test_script_exhausted():
    llm, _ = scripted({"content": "only one"})
    llm.complete(USER)
    with pytest.raises(LLMError, match="script exhausted"):
        llm.complete(USER)


def test_missing_api_key_env_is_an_error(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("QAFLOW_TEST_NO_SUCH_KEY", raising=False)
    llm = LLM(LLMConfig(model=MODEL, api_key_env="QAFLOW_TEST_NO_SUCH_KEY"))
    with pytest.raises(LLMError, match="QAFLOW_TEST_NO_SUCH_KEY"):
        llm.complete(USER)


def test_a_missing_provider_key_fails_before_any_request(monkeypatch: pytest.MonkeyPatch):
    """No key in the environment: one clear error at once, not a connection error retried with backoff."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    sleeps: list[float] = []
    calls: list[dict] = []
    litellm = import_litellm()
    monkeypatch.setattr(litellm, "completion", lambda **kw: calls.append(kw))
    llm = LLM(LLMConfig(model="anthropic/claude-3-5-haiku-20241022", max_retries=5), sleep=sleeps.append)
    t0 = time.perf_counter()
    with pytest.raises(LLMError, match="missing API key: set ANTHROPIC_API_KEY"):
        llm.complete(USER)
    assert (sleeps, calls) == ([], []) and time.perf_counter() - t0 < 5
    served = LLM(LLMConfig(model="anthropic/claude-3-5-haiku-20241022", api_base="http://127.0.0.1:9"))
    assert "api_base" in served._litellm_kwargs({"messages": [], "tools": None, "tool_choice": None})


def test_cache_replays_without_consuming_the_script(tmp_path: Path):
    account = UsageAccount()
    config = LLMConfig(
        model=MODEL, cache_dir=tmp_path, script=[ScriptedReply(content="first"), ScriptedReply(content="second")]
    )
    llm = LLM(config, account)
    first = llm.complete(USER, tools=[READ_TOOL])
    again = llm.complete(USER, tools=[READ_TOOL])
    assert (first.cached, again.cached) == (False, True)
    assert again.content == "first" and again.message == first.message
    assert llm.script_left() == 1
    totals = account.totals(MODEL)
    assert (totals.calls, totals.cached_calls) == (1, 1)
    assert totals.cost_usd == pytest.approx(first.usage.cost_usd)  # the hit cost nothing
    # a different request (no tools) is a miss and takes the next reply
    assert llm.complete(USER).content == "second"
    # a new LLM on the same folder (a rerun) replays with an empty script
    rerun = LLM(config.model_copy(update={"script": []}))
    assert rerun.complete(USER, tools=[READ_TOOL]).content == "first"
    assert rerun.complete(USER).content == "second"
    entries = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert len(entries) == 2 and all(name.endswith(".json") for name in entries)  # no temp files left


def test_cache_key_covers_sampling_settings(tmp_path: Path):
    hot = LLM(LLMConfig(model=MODEL, cache_dir=tmp_path, temperature=0.7, script=[ScriptedReply(content="hot")]))
    cold = LLM(LLMConfig(model=MODEL, cache_dir=tmp_path, script=[ScriptedReply(content="cold")]))
    assert hot.complete(USER).content == "hot"
    assert cold.complete(USER).content == "cold"


def test_concurrency_is_limited_per_model_across_instances(monkeypatch: pytest.MonkeyPatch):
    litellm = import_litellm()
    real = litellm.completion
    lock = threading.Lock()
    in_flight = 0
    peak = 0

    def counting(**kwargs):
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        try:
            return real(**kwargs)  # the scripted delay is spent inside litellm (mock_delay)
        finally:
            with lock:
                in_flight -= 1

    monkeypatch.setattr(litellm, "completion", counting)
    model = "openai/scripted-concurrency"
    replies = [ScriptedReply(content=f"r{i}", delay_s=0.05) for i in range(4)]
    llms = [LLM(LLMConfig(model=model, concurrency=2, script=replies)) for _ in range(2)]
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda llm=llm: results.append(llm.complete(USER).content or ""))
        for llm in llms
        for _ in range(4)
    ]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted([f"r{i}" for i in range(4)] * 2)
    assert peak == 2
    assert time.monotonic() - start >= 4 * 0.05  # 8 calls of 50 ms, two at a time


def test_account_frame_has_one_row_per_model():
    account = UsageAccount()
    for model in (MODEL, UNPRICED):
        LLM(LLMConfig(model=model, script=[ScriptedReply(content="x")]), account).complete(USER)
    frame = account.to_frame()
    assert frame["model"].to_list() == [MODEL, UNPRICED]
    assert frame["calls"].to_list() == [1, 1] and frame["unpriced"].to_list() == [False, True]
    assert account.summary()["total"]["calls"] == 2


def test_importing_qaflow_does_not_import_litellm():
    code = (
        "import sys, qaflow, qaflow.llm, qaflow.errors; "
        "from qaflow.llm import LLM, LLMConfig; "
        "LLM(LLMConfig(model='openai/x')); "
        "print('litellm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_live_model_roundtrip():
    model = os.environ.get("QAFLOW_TEST_MODEL")
    if not model:
        pytest.skip("QAFLOW_TEST_MODEL not set: live model test skipped")
    config = LLMConfig(
        model=model,
        api_base=os.environ.get("QAFLOW_TEST_API_BASE"),
        api_key_env=os.environ.get("QAFLOW_TEST_API_KEY_ENV"),
        max_tokens=512,
        max_retries=2,
    )
    llm = LLM(config)
    reply = llm.complete([{"role": "user", "content": "Reply with the single word: pong"}])
    assert "pong" in (reply.content or "").lower()
    verdict = llm.structured(
        [{"role": "user", "content": "Should a verifier that never fails be accepted? Give one reason."}], Verdict
    )
    assert verdict.reasons
    assert llm.account.totals(model).calls >= 2
