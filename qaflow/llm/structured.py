"""Structured output, provider-agnostic: the JSON schema goes into the system prompt, the reply is parsed
(code fences tolerated) and validated by pydantic; the re-ask text tells the model what was wrong."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from qaflow.errors import QaflowError

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n(.*?)```", re.DOTALL)


class StructuredOutputError(QaflowError, ValueError):
    """The reply holds no JSON object, or one that does not match the schema."""


def schema_instruction(schema: type[BaseModel]) -> str:
    return (
        f"Reply with a single JSON object that matches this JSON schema ({schema.__name__}), and nothing else:\n"
        f"{json.dumps(schema.model_json_schema(), indent=2)}"
    )


def with_schema_instruction(messages: Sequence[Mapping[str, Any]], schema: type[BaseModel]) -> list[dict[str, Any]]:
    """A copy of `messages` whose system prompt ends with the schema instruction (a system message is
    inserted first when there is none with text content)."""
    out = [dict(m) for m in messages]
    instruction = schema_instruction(schema)
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0]["content"] = f"{out[0]['content']}\n\n{instruction}"
    else:
        out.insert(0, {"role": "system", "content": instruction})
    return out


def extract_json(text: str) -> Any:
    """The JSON value in a reply: the whole text, else a fenced block, else the first `{...}` that decodes.

    Raises:
        StructuredOutputError: nothing in the text decodes as a JSON object.
    """
    candidates = [text, *_FENCE.findall(text)]
    first_error: json.JSONDecodeError | None = None
    for candidate in candidates:
        try:
            return json.loads(candidate.strip())
        except json.JSONDecodeError as e:
            first_error = first_error or e
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise StructuredOutputError(f"the reply is not valid JSON ({first_error})")


def parse_structured(text: str | None, schema: type[M]) -> M:
    """Validate a reply's text against `schema`.

    Raises:
        StructuredOutputError: no text, no JSON object, or the object fails validation (pydantic's errors included).
    """
    if not text or not text.strip():
        raise StructuredOutputError("the reply has no text")
    value = extract_json(text)
    if not isinstance(value, dict):
        raise StructuredOutputError(f"expected a JSON object, got {type(value).__name__}")
    try:
        return schema.model_validate(value)
    except ValidationError as e:
        raise StructuredOutputError(f"the JSON object does not match the schema {schema.__name__}: {e}") from e


def reask_message(error: StructuredOutputError) -> dict[str, str]:
    return {
        "role": "user",
        "content": (
            f"Your previous reply could not be used: {error}\n"
            "Reply again with only a JSON object that matches the schema."
        ),
    }
