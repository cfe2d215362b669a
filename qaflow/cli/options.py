"""Options shared by several commands, declared once: the same flag means the same thing everywhere."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import typer
from typer.core import TyperGroup

from qaflow.errors import SandboxError
from qaflow.sandbox import with_runtime
from qaflow.sandbox.spec import NETWORK_ENV, OFFLINE_ENV, RuntimeNetwork

BackendName = Literal["auto", "docker", "bwrap"]
"""`--backend`: where sandboxes run (`auto` picks per task among those that work here)."""
ExecutorName = Literal["local", "ray"]
"""`--executor`: where trials run."""


BackendOpt = Annotated[BackendName, typer.Option("--backend", "-b", help="Where sandboxes run: auto, docker or bwrap")]
RuntimeOpt = Annotated[
    str | None,
    typer.Option("--runtime", help="runsc: run the docker containers under gVisor (see `qaflow sandbox doctor`)"),
]
OfflineOpt = Annotated[
    bool,
    typer.Option(
        "--offline",
        envvar=OFFLINE_ENV,
        help="Build without network (builds have it by default); a build that fails for want of it is infra_error",
    ),
]
NetworkOpt = Annotated[
    RuntimeNetwork,
    typer.Option(
        "--network",
        envvar=NETWORK_ENV,
        help="Runtime network: task (as each task declares: on unless no-network) or none (off for every sandbox)",
    ),
]
ExecutorOpt = Annotated[
    ExecutorName,
    typer.Option("--executor", help="Where trials run: local (threads here) or ray (Ray tasks on a cluster)"),
]
AddressOpt = Annotated[
    str | None, typer.Option("--address", help="Ray cluster: auto or ray://host:port (with --executor ray)")
]
JSON_OPTION = "--json"
STDOUT = "-"
JsonOpt = Annotated[
    str | None,
    typer.Option(
        JSON_OPTION,
        metavar="[FILE|-]",
        help="JSON for machines: on stdout (no value, or -), or into FILE (a name ending in .json or .jsonl, "
        "or any path as --json=PATH)",
    ),
]
"""The one `--json` of every command: None (not asked), `-` (stdout) or a file path (`json_values`)."""
JsonFlag = JsonOpt  # the older name, kept for the stage CLIs that import it


def json_values(args: Sequence[str]) -> list[str]:
    """`args` with every `--json` given its value in one token, so that the value is optional: `--json` alone
    (at the end, or before another option) is `--json=-`; `--json X` takes X when it is `-` or names a JSON
    file (`.json`, `.jsonl`), and leaves any other X to the command (`qaflow check --json POOL` still means
    stdout). Arguments after `--` are left alone."""
    out: list[str] = []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            return [*out, arg, *rest]
        if arg != JSON_OPTION:
            out.append(arg)
            continue
        value = rest[0] if rest else None
        if value is not None and (value == STDOUT or value.lower().endswith((".json", ".jsonl"))):
            rest.pop(0)
        else:
            value = STDOUT
        out.append(f"{JSON_OPTION}={value}")
    return out


PushOpt = Annotated[
    str | None,
    typer.Option(
        "--push", metavar="REPO", help="Also push to this hub dataset repo (needs HF_TOKEN or `hf auth login`)."
    ),
]
PrivateOpt = Annotated[bool, typer.Option("--private", help="Create the hub repo as private (with --push).")]


def backend_with_runtime(backend: str, runtime: str | None) -> str:
    """`--backend` with `--runtime` applied (`docker:runsc`); a bad pair is a usage error on `--runtime`."""
    try:
        return with_runtime(backend, runtime)
    except SandboxError as e:
        raise typer.BadParameter(str(e), param_hint="--runtime") from e


class DefaultCommandGroup(TyperGroup):
    """A noun whose verbs are sub-commands, where a first argument that names no verb means the default
    verb: `qaflow rollout POOL` is `qaflow rollout run POOL` (the spelling of the last release kept)."""

    default_command = "run"

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's own (vendored) click Context
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)
