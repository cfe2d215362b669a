"""CLI commands of the curation stage (`qaflow filter`, `qaflow export`), registered by `qaflow.cli`."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from curation.cli import curate as curate_cli
    from curation.cli import export as export_cli
    from curation.cli import filter as filter_cli
    from curation.cli import pipeline as pipeline_cli

    filter_cli.register(app)
    export_cli.register(app)
    curate_cli.register(app)
    pipeline_cli.register(app)
