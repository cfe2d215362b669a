"""A local transformers model behind litellm: `qaflow-local/<model or checkpoint folder>`.

Registered as a litellm custom provider, so the agent harness talks to a local checkpoint exactly as
to a hosted model (same LLM wrapper, same tool calling). The prompt is the model's own chat template
with the tools; the reply is parsed the Qwen way: `<think>...</think>` is the reasoning, each
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` a tool call, the rest the text. A PEFT
checkpoint (adapter_config.json) is loaded on top of its base model.

Effort. litellm refuses `reasoning_effort` for a custom provider, and a local checkpoint has no such
knob anyway, so each effort maps to what a local model can honour, sent as provider-specific keys
(`LOCAL_EFFORTS`, installed for `qaflow-local/*` by `with_local_efforts` unless the harness config
maps that pattern itself):

| effort | `enable_thinking` | `thinking_budget` | what the model gets |
|---|---|---|---|
| off | false | 0 | the template's thinking switch off (Qwen3: empty `<think></think>` prefilled) |
| low | true | 256 | the turn starts inside `<think>`; `</think>` is forced at 256 thinking tokens |
| medium | true | 1024 | the same, forced at 1024 |
| xhigh | true | 4096 | the same, forced at 4096 |

Each row also sends `effort`, and the prompt is conditioned on it (`sft.conditioning.effort_conditioning`
on the model's own chat template: its `reasoning_effort` or `enable_thinking` switch, else the system line
`Reasoning effort: <effort>.`), so the policy knows which effort it runs at; the budget is the hard cap.

`<think>` itself is never generated (thinking opens in the prompt or not at all).
A turn may generate `max_tokens` (the answer: text and tool calls, default 256) plus the thinking budget;
the end-of-turn token is not allowed while thinking. Thinking tokens (those between the markers) are
reported as the turn's `reasoning_tokens`, so the harness counts them exactly. A `reasoning_effort` that
does reach the handler (sent with `allowed_openai_params`) maps to the same table (`none`/`minimal`: off,
`high`/`xhigh`: xhigh's budget); the explicit keys win.

Token in, token out. Each turn's prompt is token ids that continue the conversation's earlier tokens
(`sft.token_context`: the earlier turns are never rendered again), and with a `sample_log` parameter every
turn's context ids, generated ids (the end-of-turn token included when sampled), their log-probabilities from
the raw logits and which ids were forced are appended to that log (`sft.sampled`), for the RL update to train on.

Sampling. `temperature` > 0 samples from the full distribution (no top-k; `top_p` only when sent), and a
`seed` makes it replayable: each turn seeds torch with a hash of the seed and the conversation's length,
so the turns of one attempt draw different numbers and the same attempt replays exactly. The harness
sends a per-attempt seed (`HarnessConfig.seed`), so the attempts of a group differ. Greedy decoding only
at an explicit `temperature` of 0. The settings each attempt sent are recorded in the rollout's
`meta["sampling"]`.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from qaflow.model_source import model_source
from qaflow.models.rollout import Effort
from sft.conditioning import render_prompt
from sft.sampled import SAMPLE_LOG_PARAM, SampledTurn, append_turn, conversation_key
from sft.token_context import TokenContexts

if TYPE_CHECKING:
    from qaflow.agents.harness import HarnessConfig

PROVIDER = "qaflow-local"
PATTERN = f"{PROVIDER}/*"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
DEFAULT_ANSWER_TOKENS = 256
_TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_THINK_RE = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)

DEFAULT_BUDGETS: dict[Effort, int] = {Effort.OFF: 0, Effort.LOW: 256, Effort.MEDIUM: 1024, Effort.XHIGH: 4096}
"""Thinking-token budget per effort (off: thinking switched off)."""

_REASONING_EFFORT_TO_EFFORT = {
    "none": Effort.OFF,
    "minimal": Effort.OFF,
    "low": Effort.LOW,
    "medium": Effort.MEDIUM,
    "high": Effort.XHIGH,
    "xhigh": Effort.XHIGH,
}


def local_efforts(budgets: dict[Effort, int] | None = None) -> dict[Effort, dict[str, Any]]:
    """Effort -> the provider keys of that effort (`enable_thinking`, `thinking_budget`, `effort`: what the
    prompt is conditioned on); `budgets` overrides DEFAULT_BUDGETS per effort (a budget of 0 switches thinking
    off)."""
    table = {**DEFAULT_BUDGETS, **(budgets or {})}
    return {e: {"enable_thinking": table[e] > 0, "thinking_budget": table[e], "effort": e.value} for e in Effort}


LOCAL_EFFORTS = local_efforts()


def with_local_efforts(
    harness: HarnessConfig, budgets: dict[Effort, int] | None = None, provider: str = PROVIDER
) -> HarnessConfig:
    """`harness` with the local effort table for `<provider>/*` (`qaflow-local`, or `qaflow-endpoint`, which takes
    the same keys), unless it already maps a pattern that matches those models (the user's table wins)."""
    import fnmatch

    probe = f"{provider}/model"
    if any(fnmatch.fnmatchcase(probe, pattern) for pattern in harness.efforts.per_model):
        return harness
    efforts = harness.efforts.model_copy(
        update={"per_model": {f"{provider}/*": local_efforts(budgets), **harness.efforts.per_model}}
    )
    return harness.model_copy(update={"efforts": efforts})


class LocalSampling(BaseModel):
    """The decoding settings of one call, from litellm's optional params."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(0.0, ge=0, description="0 = greedy; otherwise sampled from the full distribution.")
    top_p: float | None = Field(None, gt=0, le=1)
    seed: int | None = None
    enable_thinking: bool = False
    thinking_budget: int = Field(0, ge=0)
    max_tokens: int = Field(DEFAULT_ANSWER_TOKENS, ge=1, description="Tokens for the answer after thinking.")
    effort: Effort | None = Field(None, description="The effort the prompt is conditioned on; None: none.")
    sample_log: str | None = Field(None, description="Where each sampled turn's tokens are appended (sft.sampled).")

    @classmethod
    def from_params(cls, optional: dict[str, Any]) -> LocalSampling:
        effort = _REASONING_EFFORT_TO_EFFORT.get(str(optional.get("reasoning_effort") or "").lower())
        if optional.get("effort") is not None:
            effort = Effort(optional["effort"])
        base = LOCAL_EFFORTS[effort] if effort is not None else {}
        thinking = optional.get("enable_thinking", base.get("enable_thinking", False))
        budget = optional.get("thinking_budget", base.get("thinking_budget", DEFAULT_BUDGETS[Effort.LOW]))
        return cls(
            temperature=float(optional.get("temperature") or 0.0),
            top_p=optional.get("top_p"),
            seed=optional.get("seed"),
            enable_thinking=bool(thinking),
            thinking_budget=int(budget) if thinking else 0,
            max_tokens=int(
                optional.get("max_tokens") or optional.get("max_completion_tokens") or DEFAULT_ANSWER_TOKENS
            ),
            effort=effort,
            sample_log=optional.get(SAMPLE_LOG_PARAM),
        )

    @property
    def max_new_tokens(self) -> int:
        return self.max_tokens + self.thinking_budget


def turn_seed(seed: int, turn: int) -> int:
    """The torch seed of one call: the attempt's seed mixed with the conversation length."""
    return (seed * 1_000_003 + turn * 7919) % (2**63 - 1)


class ThinkingBudget:
    """A logits processor (batch of one) that keeps a turn's thinking inside its budget: `<think>` is never
    generated (thinking opens in the prompt or not at all), `</think>` only while thinking and forced once
    `budget` thinking tokens are out, and the end of turn is not allowed while thinking."""

    def __init__(self, prompt_len: int, open_id: int, close_id: int, eos_id: int | None, thinking: bool, budget: int):
        self.prompt_len = prompt_len
        self.open_id, self.close_id, self.eos_id = open_id, close_id, eos_id
        self.thinking = thinking
        self.budget = budget
        self.used = 0
        self.forced = False
        self.forced_steps: list[int] = []
        """Steps (0 = the first generated token) whose token this processor forced."""

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if input_ids.shape[1] > self.prompt_len:
            last = int(input_ids[0, -1])
            if last == self.close_id:
                self.thinking = False
            elif self.thinking:
                self.used += 1
        scores = scores.clone()  # generate keeps the raw logits it passes here: they must stay raw
        scores[:, self.open_id] = float("-inf")
        if not self.thinking:
            scores[:, self.close_id] = float("-inf")
            return scores
        if self.used >= self.budget:
            self.forced = True
            self.forced_steps.append(int(input_ids.shape[1]) - self.prompt_len)
            forced = scores.new_full(scores.shape, float("-inf"))
            forced[:, self.close_id] = 0.0
            return forced
        if self.eos_id is not None:
            scores[:, self.eos_id] = float("-inf")
        return scores


def parse_reply(text: str) -> tuple[str, str | None, list[dict[str, Any]]]:
    """(content, reasoning, tool_calls) of a Qwen-style completion. A tool call whose JSON does not parse is
    kept with its raw text as arguments, so the harness answers it with an error the model can see. A
    `<think>` that never closes (the turn ran out of tokens) is all reasoning."""
    reasoning = None
    match = _THINK_RE.match(text)
    if match:
        reasoning = match.group(1).strip() or None
        text = text[match.end() :]
    elif text.lstrip().startswith(THINK_OPEN):
        return "", text.lstrip()[len(THINK_OPEN) :].strip() or None, []
    calls = []
    for i, block in enumerate(_TOOL_CALL_RE.findall(text)):
        try:
            data = json.loads(block)
            name, arguments = str(data.get("name", "")), data.get("arguments", {})
            arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        except (json.JSONDecodeError, AttributeError):
            name, arguments = "", block
        calls.append(
            {
                "id": f"call_{uuid.uuid4().hex[:8]}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        )
    content = _TOOL_CALL_RE.sub("", text).strip()
    return content, reasoning, calls


def same_reply(text: str, message: Any) -> bool:
    """Whether the assistant `message` is the reply `text` parsed (content, reasoning, number of tool calls; the
    call ids are made up at parsing)."""
    content, reasoning, calls = parse_reply(text)
    return (
        (content or None) == (message.get("content") or None)
        and (reasoning or None) == (message.get("reasoning_content") or None)
        and len(calls) == len(message.get("tool_calls") or [])
    )


def think_token_ids(tokenizer: Any) -> tuple[int, int] | None:
    """The ids of `<think>` and `</think>` when both are single tokens of `tokenizer`, else None."""
    ids = []
    for marker in (THINK_OPEN, THINK_CLOSE):
        encoded = tokenizer.encode(marker, add_special_tokens=False)
        if len(encoded) != 1:
            return None
        ids.append(int(encoded[0]))
    return ids[0], ids[1]


def check_local_efforts(
    path: str | Path, efforts: list[Effort], harness: HarnessConfig, provider: str = PROVIDER
) -> None:
    """Fail up front when a local model cannot honour one of `efforts`: the effort turns thinking on and the
    tokenizer has no single-token `<think>`/`</think>`.

    Raises:
        ValueError: naming the model folder, the efforts and why.
    """
    from transformers import AutoTokenizer

    model = f"{provider}/{path}"
    thinking = [e for e in efforts if harness.efforts.kwargs(model, e).get("enable_thinking")]
    if not thinking:
        return
    tokenizer = AutoTokenizer.from_pretrained(model_source(str(path)))
    if think_token_ids(tokenizer) is None:
        names = ", ".join(e.value for e in thinking)
        raise ValueError(
            f"{path}: efforts {names} need thinking, but the tokenizer has no single-token {THINK_OPEN}/{THINK_CLOSE}; "
            f"run these efforts with thinking off (budget 0) or use a model with thinking markers"
        )


class _Loaded:
    def __init__(self, path: str):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = Path(model_source(path))
        adapter = folder / "adapter_config.json"
        self.base: str = str(folder)
        self.adapter: str | None = None
        if adapter.is_file():
            from peft import PeftModel

            self.base = str(json.loads(adapter.read_text())["base_model_name_or_path"])
            self.adapter = str(folder)
            base = AutoModelForCausalLM.from_pretrained(self.base)
            model: Any = PeftModel.from_pretrained(base, str(folder))
        else:
            model = AutoModelForCausalLM.from_pretrained(str(folder))
        model.eval()
        self.model = model
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.think_ids = think_token_ids(self.tokenizer)
        self.lock = threading.Lock()
        self.torch = torch


class GeneratedTurn(BaseModel):
    """One sampled assistant turn: its text (as parsed into the message), usage, and tokens."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    thinking_tokens: int
    finish: Literal["stop", "length"]
    ids: list[int] = Field(description="The generated ids, the end-of-turn token included when sampled.")
    logprobs: list[float] = Field(description="Per generated id, its log-probability under the model (raw logits).")
    trained: list[bool] = Field(description="Per generated id: false where the thinking budget forced it.")


def prompt_text(tokenizer: Any, messages: list, tools: Any, sampling: LocalSampling) -> str:
    """The rendered prompt of one turn: the model's own chat template, conditioned on the effort."""
    return render_prompt(tokenizer, messages, sampling.effort, tools=tools, thinking=sampling.enable_thinking)


def generate_turn(
    loaded: _Loaded, prompt_ids: list[int], sampling: LocalSampling, *, messages: int, prefill: str = ""
) -> GeneratedTurn:
    """One assistant turn of a loaded model after `prompt_ids` under `sampling` (see the module docstring), for a
    conversation of `messages` messages (it seeds the turn); `prefill` is the `<think>` line the prompt ends with,
    if any (it opens the reply's text).

    Raises:
        ValueError: thinking asked of a tokenizer without single-token thinking markers.
    """
    from transformers import LogitsProcessorList

    tok = loaded.tokenizer
    if sampling.enable_thinking and loaded.think_ids is None:
        raise ValueError(f"thinking asked, but the tokenizer has no single-token {THINK_OPEN}/{THINK_CLOSE}")
    torch = loaded.torch
    ids = torch.tensor([prompt_ids])
    prompt_len = len(prompt_ids)
    processors = LogitsProcessorList()
    budget = None
    if loaded.think_ids is not None:
        budget = ThinkingBudget(
            prompt_len, *loaded.think_ids, tok.eos_token_id, sampling.enable_thinking, sampling.thinking_budget
        )
        processors.append(budget)
    decoding: dict[str, Any] = {"do_sample": False}
    if sampling.temperature > 0:
        decoding = {"do_sample": True, "temperature": sampling.temperature, "top_k": 0, "top_p": sampling.top_p or 1.0}
    with loaded.lock, torch.no_grad():
        if sampling.seed is not None:
            torch.manual_seed(turn_seed(sampling.seed, messages))
        out = loaded.model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=sampling.max_new_tokens,
            logits_processor=processors,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
            return_dict_in_generate=True,
            output_logits=True,
            **decoding,
        )
    generated = out.sequences[0, prompt_len:].tolist()
    finish: Literal["stop", "length"] = "length"
    if tok.eos_token_id in generated:
        generated = generated[: generated.index(tok.eos_token_id) + 1]
        finish = "stop"
    logprobs = [
        float(torch.log_softmax(out.logits[step][0].float(), dim=-1)[token]) for step, token in enumerate(generated)
    ]
    forced = set(budget.forced_steps) if budget is not None else set()
    answer = generated[:-1] if finish == "stop" else generated
    return GeneratedTurn(
        text=prefill + str(tok.decode(answer, skip_special_tokens=False)),
        prompt_tokens=prompt_len,
        completion_tokens=len(answer),
        thinking_tokens=budget.used if budget is not None else 0,
        finish=finish,
        ids=generated,
        logprobs=logprobs,
        trained=[step not in forced for step in range(len(generated))],
    )


def sample_turn(loaded: _Loaded, contexts: TokenContexts, messages: list, optional: dict[str, Any]) -> GeneratedTurn:
    """One turn of conversation `messages`: its prompt continued token for token (`sft.token_context`), sampled,
    and, when the call names a sample log, the turn appended to it (`sft.sampled`)."""
    sampling = LocalSampling.from_params(optional)
    key = conversation_key(messages, sampling.seed)
    tok = loaded.tokenizer
    prompt = contexts.prompt(tok, key, messages, optional.get("tools"), sampling.effort, sampling.enable_thinking)
    turn = generate_turn(loaded, prompt.ids, sampling, messages=len(messages), prefill=prompt.prefill)
    contexts.advance(key, prompt, turn.ids, turn.text, len(messages), ended=turn.finish == "stop")
    if sampling.sample_log:
        append_turn(
            sampling.sample_log,
            SampledTurn(
                conversation=key,
                turn=sum(1 for m in messages if m.get("role") == "assistant"),
                context_ids=prompt.context_ids,
                ids=turn.ids,
                logprobs=turn.logprobs,
                trained=turn.trained,
                finish=turn.finish,
                rerendered=prompt.rerendered,
                sampler=loaded.base,
                adapter=loaded.adapter,
                text=turn.text,
            ),
        )
    return turn


def response_of(model: str, turn: GeneratedTurn, *, created: int) -> Any:
    """A litellm ModelResponse of a sampled turn: the reply parsed (`parse_reply`), its usage and finish reason."""
    from litellm.types.utils import (
        ChatCompletionMessageToolCall,
        CompletionTokensDetailsWrapper,
        Function,
        Message,
        ModelResponse,
        Usage,
    )

    content, reasoning, calls = parse_reply(turn.text)
    message = Message(
        content=content or None,
        role="assistant",
        tool_calls=[
            ChatCompletionMessageToolCall(id=c["id"], type="function", function=Function(**c["function"]))
            for c in calls
        ]
        or None,
        reasoning_content=reasoning,
    )
    response = ModelResponse(model=model, created=created)
    response.choices[0].message = message
    response.choices[0].finish_reason = "tool_calls" if calls else turn.finish
    response.usage = Usage(  # type: ignore[attr-defined]
        prompt_tokens=turn.prompt_tokens,
        completion_tokens=turn.completion_tokens,
        total_tokens=turn.prompt_tokens + turn.completion_tokens,
        completion_tokens_details=CompletionTokensDetailsWrapper(reasoning_tokens=turn.thinking_tokens),
    )
    return response


def _handler_class() -> type:
    from litellm import CustomLLM

    class LocalTransformersLLM(CustomLLM):
        def __init__(self) -> None:
            super().__init__()
            self._models: dict[str, _Loaded] = {}
            self._lock = threading.Lock()
            self._contexts = TokenContexts(same_reply)

        def _load(self, path: str) -> _Loaded:
            with self._lock:
                if path not in self._models:
                    self._models[path] = _Loaded(path)
                return self._models[path]

        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            optional = kwargs.get("optional_params") or {}
            turn = sample_turn(self._load(model), self._contexts, messages, optional)
            return response_of(model, turn, created=int(time.time()))

    return LocalTransformersLLM


_REGISTERED = threading.Lock()


def register_local_provider() -> None:
    """Make `qaflow-local/<folder>` models callable through litellm (idempotent)."""
    register_litellm_provider(PROVIDER, lambda: _handler_class()())


def register_litellm_provider(provider: str, handler: Callable[[], Any]) -> None:
    """Add `provider` to litellm's custom providers with the handler `handler()` makes, once per process."""
    from qaflow.llm.client import import_litellm

    litellm = import_litellm()
    with _REGISTERED:
        if any(p.get("provider") == provider for p in litellm.custom_provider_map):
            return
        litellm.custom_provider_map = [  # type: ignore[attr-defined]  # litellm sets it up at import, unannotated
            *litellm.custom_provider_map,
            {"provider": provider, "custom_handler": handler()},
        ]
        from litellm.utils import custom_llm_setup

        custom_llm_setup()
