"""On-disk response cache: one JSON file per request, keyed by the sha256 of the canonical request.

Layout: `<cache_dir>/<key[:2]>/<key>.json`. Writes are atomic (temporary file in the same folder,
then `os.replace`), so concurrent writers and interrupted runs never leave a partial entry.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from qaflow.llm.reply import LLMReply

log = logging.getLogger(__name__)

KEY_FIELDS = ("model", "messages", "tools", "tool_choice", "temperature", "max_tokens", "reasoning_effort", "extra")


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept: equal requests give equal strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of the request's KEY_FIELDS (missing fields count as None)."""
    return hashlib.sha256(canonical_json({f: request.get(f) for f in KEY_FIELDS}).encode()).hexdigest()


class ResponseCache:
    """Replies by request key. A corrupt entry is logged and treated as a miss (it is overwritten on the next put)."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> LLMReply | None:
        path = self.path(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return LLMReply.model_validate_json(text)
        except ValidationError as e:
            log.warning("ignoring corrupt cache entry %s: %s", path, e)
            return None

    def put(self, key: str, reply: LLMReply) -> None:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(reply.model_copy(update={"cached": False}).model_dump_json(indent=1))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
