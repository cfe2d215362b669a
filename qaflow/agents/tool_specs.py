"""The harness's four tools as OpenAI-style function definitions: read, write, edit, bash.

These JSON schemas are also what the rollout filters validate tool-call arguments against.
"""

from __future__ import annotations

from typing import Any

READ = {
    "type": "function",
    "function": {
        "name": "read",
        "description": "Read a text file. Returns its lines numbered from 1; use offset/limit for long files.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path (absolute, or relative to the workdir)."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines."},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    },
}
WRITE = {
    "type": "function",
    "function": {
        "name": "write",
        "description": "Create or overwrite a file with the given content; parent folders are created.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path (absolute, or relative to the workdir)."},
                "content": {"type": "string", "description": "The whole new content of the file."},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
    },
}
EDIT = {
    "type": "function",
    "function": {
        "name": "edit",
        "description": (
            "Replace old_string by new_string in a file. old_string must occur exactly once unless replace_all is true."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path (absolute, or relative to the workdir)."},
                "old_string": {"type": "string", "description": "Exact text to replace."},
                "new_string": {"type": "string", "description": "Replacement text."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."},
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": False,
        },
    },
}
BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command in the workdir. Returns exit code, stdout and stderr (truncated if long).",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line."},
                "timeout": {"type": "integer", "minimum": 1, "description": "Seconds before it is killed."},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    },
}

TOOLS: list[dict[str, Any]] = [READ, WRITE, EDIT, BASH]
"""Exactly the harness's tools, in the order they are offered."""

TOOL_NAMES = tuple(t["function"]["name"] for t in TOOLS)
