"""Telling "the sandbox withheld something" apart from "the task is wrong", from evidence only.

A failed run is an infrastructure failure (`infra_error`) only when its logs show one of:

- `network`: the network was withheld: a name that does not resolve, an unreachable network, a
  refused or timed-out connection to an outside host, a TLS failure reaching an outside host.
  Connections to the sandbox itself (localhost, 127.0.0.0/8, ::1) or to private addresses (a
  task's own services) are the task's business and never count;
- `install_failed`: an install step failed (apt, pip, uv, npm, a `curl | sh` installer): the
  failed install is the evidence, and a later `X: command not found` is only its consequence;
- `sandbox`: the sandbox itself failed: the trial's error is of kind `sandbox` or `unsupported`
  (`qaflow.models.trial.ErrorKind`), the sandbox died under a command (OOM-killed whole, say), or the
  backend could not keep what the agent left running for the verifier (`verifier_note`).

A `command not found` on its own is no evidence: a solution that calls a tool its image never
installs is a broken solution, a verifier that does is a false rejection.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import BaseModel

InfraKind = Literal["network", "install_failed", "sandbox", "stand_in"]

SANDBOX_ERROR_KINDS = frozenset({"sandbox", "unsupported"})
"""`ErrorInfo.kind` values that mean the sandbox, not the task, failed."""

# Lines that show the network was withheld whatever host they name: nothing on the sandbox's own
# loopback fails to resolve or is unreachable.
_NETWORK = [
    (r"Could not resolve host(?:name)?", "a host name did not resolve"),
    (r"Temporary failure (?:in name resolution|resolving)", "a host name did not resolve"),
    (r"Name or service not known|No address associated with hostname", "a host name did not resolve"),
    (r"getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|\b(?:ENOTFOUND|EAI_AGAIN)\b", "a host name did not resolve"),
    (r"unable to resolve host address", "a host name did not resolve"),
    (r"dns error|failed to lookup address information", "a host name did not resolve"),
    (r"UnknownHostException", "a host name did not resolve"),
    (r"Network is unreachable|\bENETUNREACH\b", "the network is unreachable"),
    (r"No route to host|\bEHOSTUNREACH\b", "no route to the host"),
]
# Lines that show it only when they name an outside host: a refused connection or a bad
# certificate on localhost is a task's own server.
_CONNECT = re.compile(
    r"Connection refused|\bECONNREFUSED\b|Couldn't connect to server|Failed to connect to|Could not connect to"
    r"|Connection timed out|\bETIMEDOUT\b",
    re.IGNORECASE,
)
_TLS = re.compile(
    r"CERTIFICATE_VERIFY_FAILED|SSL certificate problem|certificate verify failed"
    r"|x509: certificate signed by unknown authority|SSLError|unable to get local issuer certificate",
    re.IGNORECASE,
)
_INSTALL = [
    (r"E: Unable to locate package \S+", "apt could not find a package"),
    (r"E: Package '[^']+' has no installation candidate", "apt could not find a package"),
    (r"E: Failed to fetch \S+", "apt could not download a package"),
    (r"E: Unable to fetch some archives", "apt could not download a package"),
    (r"No matching distribution found for \S+", "pip could not find a package"),
    (r"Could not find a version that satisfies the requirement", "pip could not find a package"),
    (r"Could not fetch URL \S+", "pip could not reach its index"),
    (r"error: Failed to (?:fetch|download)\b", "uv could not download a package"),
    (r"npm (?:ERR!|error) (?:code E|network)", "npm could not download a package"),
]
_DIED = re.compile(r"\[qaflow\] the sandbox died during this command[^\n]*")
_MISSING_COMMAND = re.compile(r"(?m)^(?:.*: )?(?:line \d+: |\d+: )?[\w.+-]+: (?:command )?not found$")

_NO_SUCH_HOST = re.compile(r"lookup ([\w.-]+)(?: on \S+)?: no such host")
_NETWORK_RES = [(re.compile(p, re.IGNORECASE), why) for p, why in _NETWORK]
_INSTALL_RES = [(re.compile(p), why) for p, why in _INSTALL]
_NAME = r"(\[[0-9a-fA-F:]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)"
_HOST = re.compile(
    r"(?:(?<=://)|(?<=host=')|(?<=connect to )|(?<=Connecting to )|(?<=resolving ')|(?<=\blookup ))" + _NAME
)
"""Where tools name the host they reach: a URL, `host='...'`, curl's and apt's wording."""
_LOOSE_HOST = re.compile(r"(?<=\bto )" + _NAME)
_IPV4 = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w.])")
_FILE_SUFFIXES = frozenset(
    {"py", "sh", "js", "ts", "rs", "go", "rb", "pl", "json", "txt", "csv", "md", "log", "cfg", "ini", "toml", "yaml"}
    | {"yml", "lock", "whl", "so", "html", "xml"}
)
"""Last labels that, outside a URL, name a file (`server.py:12`) more likely than a host."""
_LOCAL_NAMES = ("localhost", ".localhost", ".local", ".internal", ".localdomain")
_SOURCE_LINE = re.compile(r"    |\s*File \"")
"""A Python traceback's frame or source line: code, not a host the run reached (`self.sock`)."""
_TLS_LOOKBACK = 30
"""Lines searched back from a TLS error for the host it was reaching: Python's and curl's errors do not
name it, a log line before them (`fetching https://...`, `* Connected to ...`) may."""


class InfraEvidence(BaseModel):
    kind: InfraKind
    """`network`, `install_failed`, `sandbox`, or `stand_in` (the userland of a stand-in image, `stand_in_sign`)."""
    match: str
    """The line that shows it."""
    why: str
    """What the line shows, in words ("a host name did not resolve", "apt could not find a package")."""
    then: str | None = None
    """For `install_failed`: the first `command not found` after the install line, its consequence."""


def classify(
    output: str, *, error_kind: str | None = None, error: str = "", verifier_note: str | None = None
) -> InfraEvidence | None:
    """The evidence in a failed run's `output` (and its trial error, and the trial's note that the
    verifier could not reach what the agent left running) that the sandbox, not the task, made it
    fail; None when there is none. Sandbox failures come first, then the network, then a failed
    install step."""
    if error_kind in SANDBOX_ERROR_KINDS:
        line = next((ln.strip() for ln in error.splitlines() if ln.strip()), error_kind)
        why = f"the harness raised an error of kind `{error_kind}`"
        return InfraEvidence(kind="sandbox", match=_short(line), why=why)
    if verifier_note:
        why = "the backend could not keep what the agent left running for the verifier"
        return InfraEvidence(kind="sandbox", match=_short(verifier_note), why=why)
    text = f"{output}\n{error}" if error else output
    died = _DIED.search(text)
    if died:
        return InfraEvidence(kind="sandbox", match=died.group(0).strip()[:300], why="the sandbox died under a command")
    lines = text.splitlines()
    for i, line in enumerate(lines):
        for pattern, why in _NETWORK_RES:
            if pattern.search(line) and not _names_only_local(line):
                return InfraEvidence(kind="network", match=_short(line), why=why)
        lookup = _NO_SUCH_HOST.search(line)
        if lookup and _outside_host(f"lookup {lookup.group(1)}"):
            return InfraEvidence(kind="network", match=_short(line), why="a host name did not resolve")
        if _CONNECT.search(line):
            host = _outside_host(line)
            if host:
                return InfraEvidence(kind="network", match=_short(line), why=f"a connection to {host} failed")
        if _TLS.search(line):
            host = _nearest_host(lines[max(0, i - _TLS_LOOKBACK) : i + 1])
            if host and not _is_local(host):
                return InfraEvidence(kind="network", match=_short(line), why=f"TLS failed reaching {host}")
    for i, line in enumerate(lines):
        for pattern, why in _INSTALL_RES:
            if pattern.search(line):
                after = _MISSING_COMMAND.search("\n".join(lines[i + 1 :]))
                then = _short(after.group(0)) if after else None
                return InfraEvidence(kind="install_failed", match=_short(line), why=why, then=then)
    return None


def _hosts(line: str) -> list[tuple[str, bool]]:
    """The hosts `line` names, each with whether a tool's wording marks it as a host (else it may be
    a file name such as `server.py`)."""
    found = [(h, True) for h in _HOST.findall(line)] + [(h, False) for h in _LOOSE_HOST.findall(line)]
    named = [(h.strip("[]").rstrip("."), sure) for h, sure in found]
    named = [(h, sure) for h, sure in named if "." in h or ":" in h or h.lower() == "localhost"]
    return named + [(ip, True) for ip in _IPV4.findall(line)]


def _is_local(host: str) -> bool:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host.lower() == "localhost" or host.lower().endswith(_LOCAL_NAMES)
    return not ip.is_global


def _outside_host(line: str) -> str | None:
    """The first host `line` names that is outside the sandbox and the task: a dotted public name or
    a global address (a bare name like `db` is a task's own service)."""
    for host, sure in _hosts(line):
        if _is_local(host):
            continue
        try:
            ipaddress.ip_address(host)
        except ValueError:
            suffix = host.rsplit(".", 1)[-1]
            if "." not in host or not re.fullmatch(r"[A-Za-z]{2,}", suffix):
                continue
            if suffix.lower() in _FILE_SUFFIXES and not sure:
                continue
        return host
    return None


def _nearest_host(lines: list[str]) -> str | None:
    """The host named last in `lines`, local or not (a local one means the error is the task's own)."""
    for line in reversed(lines):
        if _SOURCE_LINE.match(line):
            continue
        local = [h for h, _ in _hosts(line) if _is_local(h)]
        outside = _outside_host(line)
        if outside or local:
            return outside or local[0]
    return None


def _names_only_local(line: str) -> bool:
    hosts = _hosts(line)
    return bool(hosts) and all(_is_local(h) for h, _ in hosts)


def _short(line: str) -> str:
    return line.strip()[:300]


_USERLAND = [
    (_MISSING_COMMAND, "a program the named image would provide is missing"),
    (
        re.compile(r"\b(?:ModuleNotFoundError|ImportError): .*"),
        "a Python module the named image would provide is missing",
    ),
    (
        re.compile(r"add-apt-repository|aptsources|softwareproperties|NoDistroTemplateException"),
        "a distribution-specific apt source failed",
    ),
    (
        re.compile(r"version `GLIBC_[\d.]+' not found|GLIBC_[\d.]+ not found"),
        "the C library differs from the named image's",
    ),
    (
        re.compile(r"requires a different Python|requires-python|Requires-Python"),
        "the Python version differs from the named image's",
    ),
]


def stand_in_sign(log: str) -> InfraEvidence | None:
    """On a build that ran on a stand-in image (an alias for a `FROM` image missing here): the log line
    showing the failure comes from the stand-in's userland, not from the task (a missing program or
    module, a failed install or apt source, another C library or Python); None when the failure is the
    task's own (a missing COPY source, a failing check of the task's own files)."""
    lines = log.splitlines()
    for patterns in (_INSTALL_RES, _USERLAND):
        for line in lines:
            for pattern, why in patterns:
                if pattern.search(line):
                    return InfraEvidence(kind="stand_in", match=_short(line), why=why)
    return None


def sandbox_failed(error_kind: str | None, error: str, outputs: str) -> bool:
    """Whether a run failed because its sandbox did (an error of kind `sandbox`/`unsupported`, or a command
    the sandbox died under): an infrastructure fault, which the next audit tries again instead of reusing."""
    evidence = classify(outputs, error_kind=error_kind, error=error)
    return evidence is not None and evidence.kind == "sandbox"
