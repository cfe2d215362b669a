"""Telling "the sandbox withheld something" apart from "the task is wrong".

Many public tasks install their test tools at verification time (apt-get, pip, curl, uv). Offline,
such a run fails for want of network, not because the verifier or solution is wrong; a missing
tool on the base image is the same kind of failure. The audit reports these as `infra_error`.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

_NETWORK = [
    r"Could not resolve host",
    r"Temporary failure in name resolution",
    r"Name or service not known",
    r"Network is unreachable",
    r"No route to host",
    r"Failed to establish a new connection",
    r"Could not fetch URL",
    r"Failed to fetch https?://",
    r"Could not connect to [\w.-]+",
    r"Connection refused.*(pypi|github|debian|ubuntu|npmjs|registry)",
    r"getaddrinfo (ENOTFOUND|EAI_AGAIN)",
    r"No matching distribution found for",
    r"Unable to locate package",
    r"curl: \(\d+\) (Could not resolve|Failed to connect)",
    r"wget: unable to resolve host",
    r"error sending request for url",
]
_MISSING_TOOL = [
    r"(?m)^(?:.*: )?(?:line \d+: )?([\w.+-]+): (?:command )?not found$",
    r"(?m)^(?:.*: )?\d+: ([\w.+-]+): not found$",
    r"No module named '?(pip|pytest|uv|venv)'?",
]
_NETWORK_RE = re.compile("|".join(f"(?:{p})" for p in _NETWORK), re.IGNORECASE)
_TOOL_RES = [re.compile(p) for p in _MISSING_TOOL]


class InfraEvidence(BaseModel):
    kind: str
    """`network` or `missing_tool`."""
    match: str
    """The line that shows it."""


def classify(output: str) -> InfraEvidence | None:
    """The first sign in `output` that a run failed for want of network or a tool, if any."""
    hit = _NETWORK_RE.search(output)
    if hit:
        return InfraEvidence(kind="network", match=_line_of(output, hit.start()))
    for pattern in _TOOL_RES:
        tool = pattern.search(output)
        if tool:
            return InfraEvidence(kind="missing_tool", match=_line_of(output, tool.start()))
    return None


def _line_of(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end != -1 else len(text)].strip()[:300]
