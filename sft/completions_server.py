"""A local transformers model behind the token-level subset of vLLM's OpenAI-compatible API (CPU, one request
at a time): what the RL endpoint path needs, served without vLLM.

    python -m sft.completions_server MODEL [--host 127.0.0.1] [--port 0]

prints `listening on http://HOST:PORT` once it accepts requests. Routes (vLLM's names and fields):

- `POST /v1/completions`: `model` (the served name, or a loaded adapter's `lora_name`), `prompt` (a list of
  token ids), `max_tokens`, `temperature` (0: greedy), `top_p`, `seed`, `logprobs`, `stop_token_ids`,
  `logit_bias` (token id -> bias added to the logits), `return_token_ids`. Each choice has `text`, `token_ids`
  (the generated ids, a stop or end-of-turn token included), `prompt_token_ids`, `logprobs` (`tokens` as
  `token_id:N`, `token_logprobs` from the raw logits, as vLLM's default `raw_logprobs`), `finish_reason`
  (`stop` | `length`) and `stop_reason` (the stop token id, or null).
- `POST /v1/load_lora_adapter`: `lora_name`, `lora_path` (a PEFT adapter of the served model): later requests
  naming `lora_name` sample with it (vLLM's dynamic LoRA loading).
- `GET /v1/models`: the served name and the loaded adapters.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class CompletionRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str
    prompt: list[int] = Field(min_length=1)
    max_tokens: int = Field(16, ge=1)
    temperature: float = Field(1.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = None
    logprobs: int | None = None
    stop_token_ids: list[int] = Field(default_factory=list)
    logit_bias: dict[int, float] = Field(default_factory=dict)


class LoadAdapter(BaseModel):
    model_config = ConfigDict(extra="ignore")

    lora_name: str = Field(min_length=1)
    lora_path: str = Field(min_length=1)


class _Bias:
    """A logits processor adding fixed biases (a copy: generate keeps the raw logits it passes here)."""

    def __init__(self, bias: dict[int, float]):
        self.bias = bias

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if not self.bias:
            return scores
        scores = scores.clone()
        for token, value in self.bias.items():
            scores[:, token] += value
        return scores


class Engine:
    """The served model and its loaded adapters; generation is serialised."""

    def __init__(self, model_dir: Path, name: str):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = name
        self.model_dir = model_dir
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.models: dict[str, Any] = {name: AutoModelForCausalLM.from_pretrained(model_dir).eval()}
        self.adapters: dict[str, str] = {}
        self.lock = threading.Lock()

    def load_adapter(self, request: LoadAdapter) -> None:
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        if request.lora_name in self.models:
            raise ValueError(f"The lora adapter '{request.lora_name}' has already been loaded.")
        base = AutoModelForCausalLM.from_pretrained(self.model_dir)
        model = PeftModel.from_pretrained(base, request.lora_path).eval()
        with self.lock:
            self.models[request.lora_name] = model
            self.adapters[request.lora_name] = request.lora_path

    def complete(self, request: CompletionRequest) -> dict[str, Any]:
        import torch
        from transformers import LogitsProcessorList

        model = self.models.get(request.model)
        if model is None:
            raise LookupError(f"The model `{request.model}` does not exist.")
        ids = torch.tensor([request.prompt])
        eos = self.tokenizer.eos_token_id
        stops = [eos, *request.stop_token_ids]
        decoding: dict[str, Any] = {"do_sample": False}
        if request.temperature > 0:
            decoding = {"do_sample": True, "temperature": request.temperature, "top_k": 0, "top_p": request.top_p}
        with self.lock, torch.no_grad():
            if request.seed is not None:
                torch.manual_seed(request.seed)
            out = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=request.max_tokens,
                logits_processor=LogitsProcessorList([_Bias(request.logit_bias)]),
                eos_token_id=stops,
                pad_token_id=self.tokenizer.pad_token_id,
                return_dict_in_generate=True,
                output_logits=True,
                **decoding,
            )
        generated = out.sequences[0, len(request.prompt) :].tolist()
        stop_at = next((i for i, t in enumerate(generated) if t in stops), None)
        if stop_at is not None:
            generated = generated[: stop_at + 1]
        logprobs = [
            float(torch.log_softmax(out.logits[step][0].float(), -1)[token]) for step, token in enumerate(generated)
        ]
        stopped = stop_at is not None
        text_ids = generated[:-1] if stopped else generated
        return {
            "id": "cmpl-local",
            "object": "text_completion",
            "model": request.model,
            "choices": [
                {
                    "index": 0,
                    "text": self.tokenizer.decode(text_ids, skip_special_tokens=False),
                    "token_ids": generated,
                    "prompt_token_ids": request.prompt,
                    "logprobs": {"tokens": [f"token_id:{t}" for t in generated], "token_logprobs": logprobs}
                    if request.logprobs is not None
                    else None,
                    "finish_reason": "stop" if stopped else "length",
                    "stop_reason": generated[-1] if stopped and generated[-1] != eos else None,
                }
            ],
            "usage": {"prompt_tokens": len(request.prompt), "completion_tokens": len(generated)},
        }


def handler_for(engine: Engine) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"object": "error", "message": message, "code": status})

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                return self._error(404, f"no route {self.path}")
            models = [{"id": engine.name, "object": "model", "root": str(engine.model_dir), "parent": None}]
            models += [
                {"id": name, "object": "model", "root": path, "parent": engine.name}
                for name, path in engine.adapters.items()
            ]
            self._send(200, {"object": "list", "data": models})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") == "/v1/completions":
                    return self._send(200, engine.complete(CompletionRequest.model_validate(body)))
                if self.path.rstrip("/") == "/v1/load_lora_adapter":
                    request = LoadAdapter.model_validate(body)
                    engine.load_adapter(request)
                    return self._send(200, {"message": f"Success: LoRA adapter '{request.lora_name}' added."})
                return self._error(404, f"no route {self.path}")
            except (json.JSONDecodeError, ValidationError, ValueError) as e:
                return self._error(400, str(e).splitlines()[0])
            except LookupError as e:
                return self._error(404, str(e))

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("model", type=Path, help="Model folder (from_pretrained)")
    parser.add_argument("--name", default=None, help="Served model name (default: the folder path)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    args = parser.parse_args(argv)
    engine = Engine(args.model, args.name or str(args.model))
    server = ThreadingHTTPServer((args.host, args.port), handler_for(engine))
    host, port = args.host, server.server_address[1]
    print(f"listening on http://{host}:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
