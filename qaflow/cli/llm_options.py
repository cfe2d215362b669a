"""Building an `LLM` from command-line options: `--model` (else env `QAFLOW_MODEL`), an optional
response cache, and a hidden scripted-replies file for offline runs and tests."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import TypeAdapter

from qaflow.cli.output import usage_error
from qaflow.errors import LLMError
from qaflow.llm import LLM, LLMConfig, ScriptedReply
from qaflow.llm.client import check_model

MODEL_ENV = "QAFLOW_MODEL"


def load_script(path: Path) -> list[ScriptedReply]:
    """Scripted replies from a JSON file holding a list of `ScriptedReply` objects.

    Raises:
        OSError: the file cannot be read.
        pydantic.ValidationError: the JSON is not a list of scripted replies.
    """
    return TypeAdapter(list[ScriptedReply]).validate_python(json.loads(Path(path).read_text(encoding="utf-8")))


def llm_from_cli(model: str | None, *, cache_dir: Path | None, script: Path | None = None) -> LLM | None:
    """The LLM for `--model` (or env QAFLOW_MODEL), None when neither names one; a model no call could
    reach (`check_model`) exits 2 with the reason.

    `script` (a JSON file of scripted replies) replaces the provider by litellm's mock path.
    """
    model = model or os.environ.get(MODEL_ENV) or None
    if model is None:
        return None
    replies = load_script(script) if script is not None else None
    config = LLMConfig(model=model, cache_dir=cache_dir, script=replies)
    try:
        check_model(config)  # before anything is spent or recorded
    except LLMError as e:
        usage_error(str(e))
    return LLM(config)
