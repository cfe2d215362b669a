"""A local transformers model behind litellm: `qaflow-local/<model or checkpoint folder>`.

Registered as a litellm custom provider, so the agent harness talks to a local checkpoint exactly as
to a hosted model (same LLM wrapper, same tool calling). The prompt is the model's own chat template
with the tools; the reply is decoded greedily and parsed the Qwen way: `<think>...</think>` is the
reasoning, each `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` a tool call, the rest the
text. A PEFT checkpoint (adapter_config.json) is loaded on top of its base model.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from sft.model_source import model_source

PROVIDER = "qaflow-local"
_TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_THINK_RE = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)


def parse_reply(text: str) -> tuple[str, str | None, list[dict[str, Any]]]:
    """(content, reasoning, tool_calls) of a Qwen-style completion. A tool call whose JSON does not parse is
    kept with its raw text as arguments, so the harness answers it with an error the model can see."""
    reasoning = None
    match = _THINK_RE.match(text)
    if match:
        reasoning = match.group(1).strip() or None
        text = text[match.end() :]
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


class _Loaded:
    def __init__(self, path: str):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = Path(model_source(path))
        adapter = folder / "adapter_config.json"
        if adapter.is_file():
            from peft import PeftModel

            base = json.loads(adapter.read_text())["base_model_name_or_path"]
            model = AutoModelForCausalLM.from_pretrained(base)
            model = PeftModel.from_pretrained(model, str(folder))
        else:
            model = AutoModelForCausalLM.from_pretrained(str(folder))
        model.eval()
        self.model = model
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.lock = threading.Lock()
        self.torch = torch


def _handler_class() -> type:
    from litellm import CustomLLM
    from litellm.types.utils import ChatCompletionMessageToolCall, Function, Message, ModelResponse, Usage

    class LocalTransformersLLM(CustomLLM):
        def __init__(self) -> None:
            super().__init__()
            self._models: dict[str, _Loaded] = {}
            self._lock = threading.Lock()

        def _load(self, path: str) -> _Loaded:
            with self._lock:
                if path not in self._models:
                    self._models[path] = _Loaded(path)
                return self._models[path]

        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
            optional = kwargs.get("optional_params") or {}
            loaded = self._load(model)
            tok = loaded.tokenizer
            prompt = tok.apply_chat_template(
                messages, tools=optional.get("tools"), add_generation_prompt=True, tokenize=False
            )
            ids = tok(prompt, add_special_tokens=False, return_tensors="pt")
            with loaded.lock, loaded.torch.no_grad():
                out = loaded.model.generate(
                    **ids,
                    max_new_tokens=int(optional.get("max_tokens") or optional.get("max_completion_tokens") or 256),
                    do_sample=False,
                    eos_token_id=tok.eos_token_id,
                    pad_token_id=tok.pad_token_id,
                )
            generated = out[0, ids["input_ids"].shape[1] :].tolist()
            finish = "length"
            if tok.eos_token_id in generated:
                generated = generated[: generated.index(tok.eos_token_id)]
                finish = "stop"
            content, reasoning, calls = parse_reply(tok.decode(generated, skip_special_tokens=False))
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
            response = ModelResponse(model=model, created=int(time.time()))
            response.choices[0].message = message  # type: ignore[union-attr]
            response.choices[0].finish_reason = "tool_calls" if calls else finish
            response.usage = Usage(  # type: ignore[attr-defined]
                prompt_tokens=int(ids["input_ids"].shape[1]),
                completion_tokens=len(generated),
                total_tokens=int(ids["input_ids"].shape[1]) + len(generated),
            )
            return response

    return LocalTransformersLLM


_REGISTERED = threading.Lock()


def register_local_provider() -> None:
    """Make `qaflow-local/<folder>` models callable through litellm (idempotent)."""
    from qaflow.llm.client import import_litellm

    litellm = import_litellm()
    with _REGISTERED:
        if any(p.get("provider") == PROVIDER for p in litellm.custom_provider_map):
            return
        litellm.custom_provider_map = [
            *litellm.custom_provider_map,
            {"provider": PROVIDER, "custom_handler": _handler_class()()},
        ]
        from litellm.utils import custom_llm_setup

        custom_llm_setup()
