"""The `qaflow` typer app: one sub-command per step. Each area lives in its own module."""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from qaflow.cli import audit as audit_cli
from qaflow.cli import check as check_cli
from qaflow.cli import harden as harden_cli
from qaflow.cli import images as images_cli
from qaflow.cli import importer as import_cli
from qaflow.cli import pool as pool_cli
from qaflow.cli import repair as repair_cli
from qaflow.cli import review as review_cli
from qaflow.cli import rollout as rollout_cli
from qaflow.cli import run as run_cli
from qaflow.cli import sandbox as sandbox_cli
from qaflow.cli.grammar import RootGroup
from qaflow.cli.help_text import hide_flag_types, reflow_app

app = typer.Typer(name="qaflow", no_args_is_help=True, add_completion=False, cls=RootGroup)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("qaflow")
        except PackageNotFoundError:
            from qaflow import __version__ as number
        typer.echo(f"qaflow {number}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit")
    ] = False,
) -> None:
    """Task-pool manager for agentic-coding training data: audit, repair, harden, roll out, curate, export, and train on it (SFT, RL).

    Every command takes --help (with an example); `--json [FILE|-]` writes JSON for machines (stdout without a value); a usage error is one `error:` line and exit status 2.

    Example: qaflow audit tasks_repo --json audit.json --html audit.html
    """  # noqa: E501  (one line per paragraph: typer keeps a docstring's line breaks)


app.add_typer(pool_cli.app, name="pool")
app.add_typer(sandbox_cli.app, name="sandbox")
app.add_typer(images_cli.app, name="images")
app.add_typer(import_cli.app, name="import")
run_cli.register(app)
check_cli.register(app)
audit_cli.register(app)
repair_cli.register(app)
review_cli.register(app)
rollout_cli.register(app)
harden_cli.register(app)
# nouns group verbs: `import attempts` is `attempts import` (kept) under the `import` noun
import_cli.app.command("attempts")(harden_cli.attempts_import)

# The later stages (curation, sft, rl) import qaflow, never the reverse; the CLI is the one place
# that composes them, by module name, so `qaflow` stays importable without them.
STAGE_CLIS = ("curation.cli", "sft.cli", "rl.cli")
for _module in STAGE_CLIS:
    importlib.import_module(_module).register(app)
reflow_app(app)
hide_flag_types()


def main() -> None:
    """Run the CLI. Storage failures that reach here (a full or read-only disk under the ledger, a
    vanished file) end with one `error:` line naming the file and exit status 2, not a traceback;
    the ledger's transactions leave it consistent for the rerun."""
    import sqlite3

    from qaflow.cli.output import USAGE_ERROR, console
    from qaflow.errors import QaflowError

    try:
        app()
    except (QaflowError, sqlite3.OperationalError, sqlite3.DatabaseError, OSError) as e:
        console(stderr=True).print(
            f"[red]error:[/red] {type(e).__name__}: {e}", markup=True, highlight=False, soft_wrap=True
        )
        raise SystemExit(USAGE_ERROR) from None
