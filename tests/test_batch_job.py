"""The README's batch job end to end (bundled config) on a covering fifth of tasks_repo, then both notebooks
against its pool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import nbformat
import pytest
import yaml
from nbclient import NotebookClient
from typer.testing import CliRunner

from qaflow.cli import app
from tests.conftest import REPO, TASKS_REPO, require_backend

pytestmark = [pytest.mark.bwrap]

LABELS = json.loads((REPO / "tasks_repo" / "labels.json").read_text())
BATCH_TASKS = sorted(
    [
        *("meeting-times-utc", "menu-prices", "spellcheck-notes"),  # invalid: leave at the source with a reason
        *("reconcile-bank-statement", "score-quiz", "word-length-histogram"),  # rule-repaired, then hardened
        *("average-ratings", "format-money-cli"),  # unresolved, flaky
        *("csv-sum", "fix-calc", "timesheet-regular-file", "word-counts-staged"),  # controls
    ]
)
"""A covering fifth of tasks_repo: every stage has work of each kind (the whole pool is audited, on both
backends, by test_audit_labels)."""


@pytest.fixture(scope="module")
def batch_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_backend("bwrap")
    root = tmp_path_factory.mktemp("batch")
    for name in BATCH_TASKS:
        shutil.copytree(REPO / "tasks_repo" / name, root / "tasks_repo" / name)
    config = yaml.safe_load((REPO / "pipelines" / "tasks_repo.yaml").read_text())
    config["output_dir"] = str(root / "out")
    config["sources"][0]["path"] = str(root / "tasks_repo")
    config["audit"]["backend"] = "bwrap"
    path = root / "tasks_repo.yaml"
    path.write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(app, ["pipeline", "run", str(path), "--json"])
    assert result.exit_code == 0, result.output
    (root / "report.json").write_text(result.stdout[result.stdout.index("{") :])
    return root / "out"


def test_batch_job_writes_datasets_that_load_back(batch_out: Path) -> None:
    report = json.loads((batch_out / "report.json").read_text())
    stages = {s["stage"]: s for s in report["stages"]}
    labels = {name: LABELS[name] for name in BATCH_TASKS}
    # the audit runs on bwrap, which cannot install system packages: the apt-get control is infra_error there
    clean = sorted(name for name, label in labels.items() if not label["codes"] and "offline_codes" not in label)
    invalid = [name for name, label in labels.items() if "invalid_task" in label["codes"]]
    assert stages["source"]["rows_in"] == len(labels)
    assert stages["source"]["rows_out"] == len(labels) - len(invalid)  # unloadable tasks leave with a reason
    assert stages["audit"]["info"]["verdicts"]["accepted"] >= len(clean)
    assert stages["repair"]["info"]["outcomes"]["accepted"] >= 3  # the rule-repairable tasks
    assert stages["harden"]["info"]["hardened"] >= len(clean)
    # loaded the way TRL users load datasets: one folder, a DatasetDict with the mix's held-out tasks as test
    tasks_dict = datasets.load_dataset(str(batch_out / "datasets" / "tasks"), cache_dir=str(batch_out / "hf-cache"))
    # (a split whose every accepted version a proven harness hole reaches is left out: see below)
    assert "train" in tasks_dict and set(tasks_dict) <= {"train", "test"}
    held = {n.split("/")[-1] for n in stages["export"]["info"]["test_tasks"]}
    assert held
    if "test" in tasks_dict:
        assert not set(tasks_dict["train"]["name"]) & set(tasks_dict["test"]["name"])
        assert {n.split("/")[-1] for n in tasks_dict["test"]["name"]} <= held
    tasks = datasets.concatenate_datasets(list(tasks_dict.values()))
    names = {n.split("/")[-1] for n, s in zip(tasks["name"], tasks["status"], strict=True) if s == "accepted"}
    # an accepted version a proven harness hole reaches is a candidate (qaflow.harden.gate.is_clean), and
    # candidates are exported only with --include-candidates
    exposed = {n.split("/")[-1] for n in stages["export"]["info"]["harness_exposed"]}
    assert set(clean) <= names | exposed and not names & exposed
    assert set(tasks["status"]) == {"accepted"}
    assert stages["export"]["info"]["candidates_left_out"] >= len(clean)
    assert set(tasks["licence"]) == {"apache-2.0"}  # the config's Apache-2.0, as the Hub spells it
    assert set(tasks["source"]) == {"tasks_repo"} and set(stages["export"]["by_source"]) == {"tasks_repo"}
    accepted = [row for row in tasks if row["status"] == "accepted"]
    assert all(
        row["audit_verdict"] == "clean" and row["audit_run"] for row in accepted if row["parent_version"] is None
    )
    assert (batch_out / "funnel.png").is_file()
    if not accepted:  # every accepted version exposed: the RL dataset is skipped, with the reason
        assert stages["export"]["info"]["datasets"]["rl"].startswith("skipped: nothing to export")
        return
    rl = datasets.load_dataset(str(batch_out / "datasets" / "rl"), cache_dir=str(batch_out / "hf-cache"))
    assert sum(len(split) for split in rl.values()) == len(accepted)
    assert set(rl["train"]["task_status"]) == {"accepted"} and set(rl["train"]["licence"]) == {"apache-2.0"}
    card = (batch_out / "datasets" / "rl" / "README.md").read_text()
    assert "license: apache-2.0" in card and "`local`" not in card and "## Audit" in card and "## Splits" in card


@pytest.mark.parametrize("notebook", ["inspect_pool.ipynb", "rollouts.ipynb"])
def test_notebooks_execute_top_to_bottom_with_real_figures(
    batch_out: Path, notebook: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QAFLOW_POOL", str(batch_out / "pool"))
    monkeypatch.setenv("QAFLOW_BACKEND", "bwrap")
    before = _ledger_rows(batch_out / "pool")
    nb = nbformat.read(REPO / "notebooks" / notebook, as_version=4)
    NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(REPO / "notebooks")}}
    ).execute()
    assert _ledger_rows(batch_out / "pool") == before  # the notebooks never write to the pool they inspect
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3


def _ledger_rows(pool: Path) -> dict[str, int]:
    from qaflow.ledger.schema import TABLES
    from qaflow.pool import Pool

    with Pool.open(pool, create=False) as opened:
        return {table: opened.ledger.frame(table).height for table in TABLES}


def test_the_rollouts_notebook_on_an_unaudited_pool_says_why_it_has_nothing_to_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = tmp_path / "pool"
    shutil.copytree(TASKS_REPO / "csv-sum", pool / "csv-sum")
    monkeypatch.setenv("QAFLOW_POOL", str(pool))
    monkeypatch.setenv("QAFLOW_BACKEND", "bwrap")
    nb = nbformat.read(REPO / "notebooks" / "rollouts.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO / "notebooks")}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert not [o for o in outputs if "image/png" in o.get("data", {})]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert text.count("nothing to plot: no rollouts, and the replay runs only accepted tasks (0 here)") == 4, text
    assert "qaflow audit POOL" in text and not (pool / ".qaflow").exists()  # the pool itself is never written
