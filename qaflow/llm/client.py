"""`LLM`: the one wrapper over litellm that every LLM step uses.

A call goes: response cache -> concurrency slot -> litellm.completion (or the scripted model, which is
litellm's mock path) -> account -> cache. Rate limits, timeouts, connection and server errors are retried
with capped exponential backoff and jitter; the slot is released while waiting. litellm is imported on
the first call, never at import time, with the local price map (no download).
"""

from __future__ import annotations

import functools
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from qaflow.errors import LLMError
from qaflow.llm.account import UsageAccount
from qaflow.llm.cache import ResponseCache, request_key
from qaflow.llm.config import LLMConfig
from qaflow.llm.reply import LLMReply, Usage
from qaflow.llm.scripted import Script, ScriptExhausted, mock_kwargs
from qaflow.llm.structured import M, StructuredOutputError, parse_structured, reask_message, with_schema_instruction

log = logging.getLogger(__name__)

Message = Mapping[str, Any]


@functools.cache
def import_litellm() -> ModuleType:
    """Import litellm with its bundled price map (no network) and without its stdout banners."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # Otherwise litellm prints "Provider List: ..." to stdout whenever it cannot price a model
    # (every scripted or local model), which would corrupt machine-readable CLI output.
    litellm.suppress_debug_info = True
    return litellm


def _retryable(litellm: ModuleType) -> tuple[type[Exception], ...]:
    return (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
    )


def _require_keys(model: str) -> None:
    """Fail at once, before any request, when the provider's API key is not in the environment (litellm
    knows which variable each provider reads); a missing key would otherwise surface as a connection
    error and be retried. Only `*_KEY`/`*_TOKEN` variables count: a missing api base has a default.

    Raises:
        LLMError: naming the variables to set.
    """
    if model in _KEYS_FOUND:
        return
    litellm = import_litellm()
    try:
        check = litellm.validate_environment(model=model)
    except Exception:  # an unknown provider: litellm's own error comes with the request
        return
    missing = [k for k in check.get("missing_keys") or [] if k.endswith(("_KEY", "_TOKEN"))]
    if missing:
        raise LLMError(model, f"missing API key: set {' or '.join(missing)} (or api_key_env / api_base in the config)")
    _KEYS_FOUND.add(model)


def check_model(config: LLMConfig) -> None:
    """Fail before anything is spent or recorded when no call of `config` could succeed: litellm knows no
    provider for the model string, `api_key_env` names an unset variable, or the provider's API key is
    missing. Scripted configs and litellm's `mock_response` are not checked.

    Raises:
        LLMError: one line naming the model and what to set or fix.
    """
    if config.script is not None or "mock_response" in config.extra:
        return
    if config.api_key_env:
        _key_from_env(config)
    litellm = import_litellm()
    try:
        litellm.get_llm_provider(model=config.model, api_base=config.api_base)
    except Exception as e:  # litellm raises its BadRequestError (and others) for an unknown provider
        if not _custom_provider(litellm, config.model):
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise LLMError(
                config.model,
                "no provider serves this model string: write it as provider/model (openai/..., anthropic/..., "
                f"or openai/<name> with api_base for an OpenAI-compatible server) ({first[:160]})",
            ) from e
    if config.api_key_env or config.api_base or "api_key" in config.extra:
        return
    _require_keys(config.model)


def _key_from_env(config: LLMConfig) -> str:
    """The API key in the variable `api_key_env` names.

    Raises:
        LLMError: it is not set.
    """
    key = os.environ.get(config.api_key_env or "")
    if not key:
        raise LLMError(config.model, f"environment variable {config.api_key_env} (api_key_env) is not set")
    return key


def _custom_provider(litellm: ModuleType, model: str) -> bool:
    prefix = model.split("/", 1)[0]
    return any(p.get("provider") == prefix for p in getattr(litellm, "custom_provider_map", None) or [])


_KEYS_FOUND: set[str] = set()
"""Models whose keys were found once: not checked again in this process."""


_SLOTS: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_SLOTS_LOCK = threading.Lock()


def _slot(model: str, concurrency: int) -> threading.BoundedSemaphore:
    """The process-wide semaphore of a (model, concurrency) pair."""
    with _SLOTS_LOCK:
        return _SLOTS.setdefault((model, concurrency), threading.BoundedSemaphore(concurrency))


class LLM:
    """One model role. Thread-safe: many threads may call one instance.

    `sleep` waits between retries (tests pass a recorder); `account` collects usage, a fresh one when None.
    """

    def __init__(
        self,
        config: LLMConfig,
        account: UsageAccount | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ):
        self.config = config
        self.account = account if account is not None else UsageAccount()
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._slot = _slot(config.model, config.concurrency)
        self._cache = ResponseCache(config.cache_dir) if config.cache_dir is not None else None
        self._script = Script(config.script) if config.script is not None else None

    @property
    def model(self) -> str:
        return self.config.model

    @property
    def scripted(self) -> bool:
        return self._script is not None

    def script_left(self) -> int:
        """Scripted replies not consumed yet (0 for a real model)."""
        return len(self._script) if self._script is not None else 0

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
    ) -> LLMReply:
        """One assistant turn for `messages` (OpenAI chat format), with optional OpenAI-style `tools`.

        Raises:
            LLMError: retries exhausted, a non-retryable provider error, a missing API key, or the
                scripted model ran out of replies.
        """
        request = {
            "model": self.config.model,
            "messages": [dict(m) for m in messages],
            "tools": [dict(t) for t in tools] if tools else None,
            "tool_choice": tool_choice,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "reasoning_effort": self.config.reasoning_effort,
            "extra": self.config.extra,
        }
        if self._cache is None:
            return self._call_with_retries(self._litellm_kwargs(request))
        key = request_key(request)
        hit = self._cache.get(key)
        if hit is not None:
            self.account.record_cached(self.config.model)
            return hit.model_copy(update={"cached": True})
        reply = self._call_with_retries(self._litellm_kwargs(request))
        self._cache.put(key, reply)
        return reply

    def structured(self, messages: Sequence[Message], schema: type[M], *, max_reasks: int = 2) -> M:
        """A `schema` instance from the model: the JSON schema is put in the system prompt, the reply is parsed
        (code fences tolerated) and validated; a bad reply is answered with the error and asked again.

        Raises:
            LLMError: still no valid object after `max_reasks` re-asks (the last error is in the message),
                or `complete` failed.
        """
        conversation = with_schema_instruction(messages, schema)
        error: StructuredOutputError | None = None
        for _ in range(max_reasks + 1):
            reply = self.complete(conversation)
            try:
                return parse_structured(reply.content, schema)
            except StructuredOutputError as e:
                error = e
                log.info("%s: malformed %s reply, re-asking: %s", self.config.model, schema.__name__, e)
                conversation = [*conversation, {"role": "assistant", "content": reply.content or ""}, reask_message(e)]
        raise LLMError(self.config.model, f"no valid {schema.__name__} after {max_reasks + 1} replies: {error}")

    # -- one request ---------------------------------------------------------------------------

    def _litellm_kwargs(self, request: Mapping[str, Any]) -> dict[str, Any]:
        cfg = self.config
        kwargs: dict[str, Any] = {
            "model": cfg.model,
            "messages": request["messages"],
            "temperature": cfg.temperature,
            "timeout": cfg.timeout_s,
            # Retries are ours: no hidden retry inside litellm or the provider SDK.
            "num_retries": 0,
            "max_retries": 0,
        }
        optional = {
            "tools": request["tools"],
            "tool_choice": request["tool_choice"],
            "max_tokens": cfg.max_tokens,
            "reasoning_effort": cfg.reasoning_effort,
            "api_base": cfg.api_base,
        }
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        if cfg.api_key_env and self._script is None:
            kwargs["api_key"] = _key_from_env(cfg)
        kwargs.update(cfg.extra)
        return kwargs

    def _backoff(self, attempt: int) -> float:
        delay = min(self.config.backoff_max_s, self.config.backoff_s * 2**attempt)
        return delay * self._rng.uniform(0.5, 1.0)

    def _call_with_retries(self, kwargs: dict[str, Any]) -> LLMReply:
        import openai

        litellm = import_litellm()
        retryable = _retryable(litellm)
        model = self.config.model
        if self._script is None and not {"api_key", "api_base", "mock_response"} & kwargs.keys():
            _require_keys(model)
        attempt = 0
        while True:
            try:
                response = self._call_once(litellm, kwargs)
            except ScriptExhausted:
                raise LLMError(model, "script exhausted") from None
            except retryable as e:
                self.account.record_failure(model)
                if attempt >= self.config.max_retries:
                    raise LLMError(model, f"{type(e).__name__} after {attempt + 1} attempt(s): {e}") from e
                delay = self._backoff(attempt)
                log.warning("%s: %s (attempt %d), retrying in %.1fs", model, type(e).__name__, attempt + 1, delay)
                self._sleep(delay)
                attempt += 1
                continue
            except openai.OpenAIError as e:  # litellm maps every provider error onto these
                self.account.record_failure(model)
                raise LLMError(model, f"{type(e).__name__}: {e}") from e
            return self._reply(litellm, response)

    def _call_once(self, litellm: ModuleType, kwargs: dict[str, Any]) -> Any:
        with self._slot:
            if self._script is None:
                return litellm.completion(**kwargs)
            scripted, call_offset = self._script.pop()
            if scripted.error is not None and scripted.delay_s:
                time.sleep(scripted.delay_s)
            return litellm.completion(**kwargs, **mock_kwargs(litellm, scripted, self.config.model, call_offset))

    def _reply(self, litellm: ModuleType, response: Any) -> LLMReply:
        choice = response.choices[0]
        usage = self._usage(litellm, response)
        self.account.record_call(self.config.model, usage)
        return LLMReply(
            message=assistant_message(choice.message),
            usage=usage,
            model=self.config.model,
            finish_reason=choice.finish_reason,
        )

    def _usage(self, litellm: ModuleType, response: Any) -> Usage:
        raw = getattr(response, "usage", None)
        details = getattr(raw, "completion_tokens_details", None)
        try:
            cost, unpriced = (
                float(litellm.completion_cost(completion_response=response, model=self.config.model)),
                False,
            )
        except Exception as e:  # litellm raises bare Exception, ValueError or ModelNotMappedError for unknown prices
            log.debug("%s: no price in litellm's cost map: %s: %s", self.config.model, type(e).__name__, e)
            cost, unpriced = 0.0, True
        return Usage(
            prompt_tokens=getattr(raw, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(raw, "completion_tokens", 0) or 0,
            reasoning_tokens=getattr(details, "reasoning_tokens", 0) or 0,
            reasoning_reported=getattr(details, "reasoning_tokens", None) is not None,
            cost_usd=cost,
            unpriced=unpriced,
        )


def assistant_message(message: Any) -> dict[str, Any]:
    """litellm's Message as a plain OpenAI chat dict; tool_calls and reasoning only when present."""
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": call.type or "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in message.tool_calls
        ]
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning:
        out["reasoning_content"] = reasoning
    thinking_blocks = getattr(message, "thinking_blocks", None)
    if thinking_blocks:  # Anthropic extended thinking: must be sent back with tool results
        out["thinking_blocks"] = [dict(b) for b in thinking_blocks]
    return out
