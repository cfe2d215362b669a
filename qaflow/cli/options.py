"""Options shared by several commands, declared once: the same flag means the same thing everywhere."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from qaflow.errors import SandboxError
from qaflow.sandbox import with_runtime
from qaflow.sandbox.spec import NETWORK_ENV, OFFLINE_ENV, RuntimeNetwork

BackendOpt = Annotated[str, typer.Option("--backend", "-b", help="auto, docker or bwrap")]
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
    str, typer.Option("--executor", help="Where trials run: local (threads here) or ray (Ray tasks on a cluster)")
]
AddressOpt = Annotated[
    str | None, typer.Option("--address", help="Ray cluster: auto or ray://host:port (with --executor ray)")
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for machines instead of tables")]
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
