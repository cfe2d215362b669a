"""The grammar every `qaflow` command shares, applied once at the root: `--json` with an optional value
(`options.json_values`), and a usage error as one `error:` line with exit status 2 (never a boxed panel)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from rich.markup import escape
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # typer's own (vendored) click
from typer.core import TyperGroup
from typer.exceptions import Abort, Exit

from qaflow.cli.options import json_values
from qaflow.cli.output import USAGE_ERROR, console


def error_line(e: ClickException) -> str:
    """The one line a usage error prints: the command, the reason, where to read more."""
    reason = " ".join(e.format_message().replace("Value error, ", "").split())
    if isinstance(e, UsageError) and e.ctx is not None:
        path = e.ctx.command_path
        return f"{path}: {reason} (see `{path} --help`)"
    return reason


def _fail(e: ClickException) -> NoReturn:
    console(stderr=True).print(f"[red]error:[/red] {escape(error_line(e))}", markup=True, soft_wrap=True)
    sys.exit(e.exit_code if isinstance(e, UsageError) else USAGE_ERROR)


class RootGroup(TyperGroup):
    """The `qaflow` group: gives `--json` its optional value before parsing, and prints usage errors as one
    `error:` line."""

    def main(  # type: ignore[override]  # click's main, narrowed to what qaflow passes
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = json_values(sys.argv[1:] if args is None else args)
        try:
            result = super().main(
                args=argv, prog_name=prog_name, complete_var=complete_var, standalone_mode=False, **extra
            )
        except NoArgsIsHelpError as e:  # `qaflow pool`: the group's help, as a bare `--help` would
            sys.stdout.write(e.format_message() + "\n")
            result = 0
        except ClickException as e:
            _fail(e)
        except Abort:
            console(stderr=True).print("[red]error:[/red] aborted", markup=True)
            sys.exit(1)
        except Exit as e:  # raised outside a command's context (an eager option's callback)
            result = e.exit_code
        if not standalone_mode:
            return result
        sys.exit(result if isinstance(result, int) else 0)
