"""The policy served by an inference engine, token in and token out: `qaflow-endpoint/<served model>`.

A litellm custom provider, like `qaflow-local`, but the model runs behind an OpenAI-compatible server (vLLM,
or `sft.completions_server` on a CPU). The chat template is applied here, never on the server: each turn's
prompt is token ids that continue the conversation (`sft.token_context`, the tokenizer named by the call's
`tokenizer` parameter, default the policy folder), sent to `POST {api_base}/v1/completions` as a token-id
`prompt` with these request fields (vLLM's names):

| field | value |
|---|---|
| `prompt` | the turn's token ids |
| `max_tokens` | the thinking budget (thinking phase), the answer tokens (answer phase) |
| `temperature`, `top_p`, `seed` | the call's sampling settings; the seed mixed with the turn and phase |
| `logprobs` | 0: the sampled token's log-probability (vLLM's default `--logprobs-mode raw_logprobs`) |
| `return_token_ids` | true: the choice's `token_ids` (and `prompt_token_ids`) |
| `return_tokens_as_token_ids` | true: `logprobs.tokens` as `token_id:N` (servers without `token_ids`) |
| `stop_token_ids` | `[</think>]` in the thinking phase |
| `logit_bias` | -100 on `<think>` always, on the end of turn while thinking, on `</think>` after it |
| `skip_special_tokens` | false |

Efforts are those of `sft.local_llm` (same table, same keys): a thinking turn is two requests, the thinking
phase (stopped at `</think>`, or at the budget, where `</think>` is appended as forced: no loss, log-probability
0) then the answer phase from where it ended. Every turn goes to the sample log like the local provider's,
with `sampler` the server's URL and model and `adapter` the served adapter name, if the model is one.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Literal

from sft.local_llm import (
    GeneratedTurn,
    LocalSampling,
    register_litellm_provider,
    response_of,
    think_token_ids,
    turn_seed,
)
from sft.sampled import SampledTurn, append_turn, conversation_key
from sft.token_context import TokenContexts

PROVIDER = "qaflow-endpoint"
PATTERN = f"{PROVIDER}/*"
TOKENIZER_PARAM = "tokenizer"
BAN = -100.0
TIMEOUT_S = 600.0


class EndpointError(RuntimeError):
    """The server refused a request or answered without token ids and log-probabilities."""


def post(url: str, body: dict[str, Any], timeout: float = TIMEOUT_S) -> dict[str, Any]:
    """POST `body` as JSON; the JSON answer.

    Raises:
        EndpointError: a transport error or a non-2xx status, with the server's message.
    """
    import httpx

    try:
        response = httpx.post(url, json=body, timeout=timeout)
    except httpx.HTTPError as e:
        raise EndpointError(f"{url}: {type(e).__name__}: {e}") from e
    if response.status_code >= 300:
        raise EndpointError(f"{url}: HTTP {response.status_code}: {response.text[:300]}")
    data: dict[str, Any] = response.json()
    return data


def load_adapter(api_base: str, name: str, path: Path) -> bool:
    """Load the LoRA adapter at `path` into the server as `name` (vLLM: `POST /v1/load_lora_adapter`, the server
    started with `--enable-lora` and `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`); False when it already has it.

    Raises:
        EndpointError: the server refused it for another reason.
    """
    try:
        post(f"{api_base.rstrip('/')}/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path)})
    except EndpointError as e:
        if "already" in str(e):
            return False
        raise
    return True


def _choice_tokens(choice: dict[str, Any]) -> tuple[list[int], list[float]]:
    """The generated ids and their log-probabilities of a completion choice."""
    logprobs = choice.get("logprobs") or {}
    values = logprobs.get("token_logprobs")
    ids = choice.get("token_ids")
    if ids is None and logprobs.get("tokens") is not None:
        ids = [int(str(t).removeprefix("token_id:")) for t in logprobs["tokens"]]
    if ids is None or values is None or len(ids) != len(values):
        raise EndpointError(
            "the server's completion has no token ids with log-probabilities (send return_token_ids / "
            "return_tokens_as_token_ids and logprobs; vLLM >= 0.10 has them)"
        )
    return [int(i) for i in ids], [float(v) for v in values]


class _Served:
    def __init__(self, api_base: str, model: str, tokenizer_path: str):
        from transformers import AutoTokenizer

        self.api_base = api_base.rstrip("/")
        self.model = model
        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
        self.think_ids = think_token_ids(self.tokenizer)


def _request(
    served: _Served, prompt: list[int], sampling: LocalSampling, max_tokens: int, seed: int | None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": served.model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p or 1.0,
        "logprobs": 0,
        "return_token_ids": True,
        "return_tokens_as_token_ids": True,
        "skip_special_tokens": False,
        **extra,
    }
    if seed is not None:
        body["seed"] = seed
    data = post(f"{served.api_base}/v1/completions", body)
    return dict(data["choices"][0])


def generate_remote(
    served: _Served, prompt_ids: list[int], sampling: LocalSampling, *, messages: int, prefill: str
) -> GeneratedTurn:
    """One assistant turn sampled by the server (see the module docstring).

    Raises:
        ValueError: thinking asked of a tokenizer without single-token thinking markers.
        EndpointError: the server failed or returned no token ids.
    """
    tok = served.tokenizer
    eos = tok.eos_token_id
    if sampling.enable_thinking and served.think_ids is None:
        raise ValueError("thinking asked, but the tokenizer has no single-token <think>/</think>")
    open_id, close_id = served.think_ids or (None, None)
    seed = None if sampling.seed is None else turn_seed(sampling.seed, messages)
    ids: list[int] = []
    logprobs: list[float] = []
    trained: list[bool] = []
    thinking = 0
    if sampling.enable_thinking and close_id is not None:
        choice = _request(
            served,
            prompt_ids,
            sampling,
            sampling.thinking_budget,
            seed,
            stop_token_ids=[close_id],
            logit_bias={str(open_id): BAN, str(eos): BAN},
        )
        got, lps = _choice_tokens(choice)
        ids += got
        logprobs += lps
        trained += [True] * len(got)
        if ids and ids[-1] == close_id:
            thinking = len(ids) - 1
        else:
            thinking = len(ids)
            ids.append(close_id)
            logprobs.append(0.0)
            trained.append(False)
    bias = {str(i): BAN for i in (open_id, close_id) if i is not None}
    choice = _request(
        served, [*prompt_ids, *ids], sampling, sampling.max_tokens, None if seed is None else seed + 1, logit_bias=bias
    )
    got, lps = _choice_tokens(choice)
    answer_start = len(ids)
    ids += got
    logprobs += lps
    trained += [True] * len(got)
    finish: Literal["stop", "length"] = "stop" if ids and ids[-1] == eos else "length"
    answer = ids[answer_start:-1] if finish == "stop" else ids[answer_start:]
    text_ids = ids[:answer_start] + answer
    return GeneratedTurn(
        text=prefill + str(tok.decode(text_ids, skip_special_tokens=False)),
        prompt_tokens=len(prompt_ids),
        completion_tokens=len(text_ids),
        thinking_tokens=thinking,
        finish=finish,
        ids=ids,
        logprobs=logprobs,
        trained=trained,
    )


def _handler_class() -> type:
    from litellm import CustomLLM

    class EndpointLLM(CustomLLM):
        def __init__(self) -> None:
            super().__init__()
            self._served: dict[tuple[str, str, str], _Served] = {}
            self._lock = threading.Lock()
            from sft.local_llm import same_reply

            self._contexts = TokenContexts(same_reply)

        def _get(self, api_base: str, model: str, tokenizer: str) -> _Served:
            with self._lock:
                key = (api_base, model, tokenizer)
                if key not in self._served:
                    self._served[key] = _Served(api_base, model, tokenizer)
                return self._served[key]

        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            optional = kwargs.get("optional_params") or {}
            api_base = kwargs.get("api_base") or optional.get("api_base")
            tokenizer = optional.get(TOKENIZER_PARAM)
            if not api_base or not tokenizer:
                raise EndpointError(f"{PROVIDER}/{model}: needs api_base (the server) and a `tokenizer` folder")
            served = self._get(str(api_base), model, str(tokenizer))
            sampling = LocalSampling.from_params(optional)
            key = conversation_key(messages, sampling.seed)
            prompt = self._contexts.prompt(
                served.tokenizer, key, messages, optional.get("tools"), sampling.effort, sampling.enable_thinking
            )
            turn = generate_remote(served, prompt.ids, sampling, messages=len(messages), prefill=prompt.prefill)
            self._contexts.advance(key, prompt, turn.ids, turn.text, len(messages), ended=turn.finish == "stop")
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
                        sampler=f"{served.api_base} {optional.get('served_base') or model}",
                        adapter=optional.get("adapter"),
                        text=turn.text,
                    ),
                )
            return response_of(model, turn, created=int(time.time()))

    return EndpointLLM


def register_endpoint_provider() -> None:
    """Make `qaflow-endpoint/<served model>` callable through litellm (idempotent)."""
    register_litellm_provider(PROVIDER, lambda: _handler_class()())
