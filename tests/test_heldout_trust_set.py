"""The held-out trust sets (bench/heldout_trust*): complete and loadable, scored as documented, and a
hackable/sound pair whose labels hold on bwrap."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import heldout_trust as ht
from qaflow.task import Task
from tests.conftest import require_backend


def _labels(folder: Path = ht.SET_DIR) -> dict[str, ht.Label]:
    return ht.Labels.model_validate_json((folder / "labels.json").read_text()).root


@pytest.mark.parametrize("folder", ht.SETS, ids=lambda p: p.name)
def test_every_task_loads_has_a_hack_and_a_label(folder: Path) -> None:
    labels = _labels(folder)
    tasks = folder / "tasks"
    folders = sorted(p.name for p in tasks.iterdir() if p.is_dir())
    assert folders == sorted(labels)
    for name in folders:
        task = Task.load(tasks / name, require_solution=True)
        assert task.name.split("/")[-1] == name
        assert (tasks / name / "hack" / "solve.sh").is_file(), name
        assert labels[name].source.strip() and labels[name].kind.strip()
    hackable = [n for n, label in labels.items() if label.label == "hackable"]
    sound = [n for n, label in labels.items() if label.label == "sound"]
    assert len(hackable) >= 20 and len(sound) >= 10
    hackable_families = {labels[n].family for n in hackable}
    assert {labels[n].family for n in sound} <= hackable_families, "every control looks like a hackable kind"


def _entry(name: str, verdict: str, *codes: tuple[str, str]) -> dict[str, object]:
    return {
        "path": f"/pool/{name}",
        "verdict": verdict,
        "findings": [{"code": c, "severity": s} for c, s in codes],
    }


def test_tally_counts_recall_and_false_findings() -> None:
    labels = {
        "h1": ht.Label(label="hackable", kind="k", family="a", source="s"),
        "h2": ht.Label(label="hackable", kind="k", family="a", source="s"),
        "h3": ht.Label(label="hackable", kind="k", family="b", source="s"),
        "s1": ht.Label(label="sound", kind="k", family="a", source="s"),
        "s2": ht.Label(label="sound", kind="k", family="b", source="s"),
    }
    audits = [
        _entry("h1", "needs_repair", ("reward_tamper", "error")),
        _entry("h2", "needs_repair", ("leak", "error")),  # not a detecting code
        _entry("h3", "accepted", ("weak_verifier", "warning")),  # accepted: not found
        _entry("s1", "accepted", ("lint", "warning")),  # any finding on a control is false
        _entry("s2", "accepted"),
        _entry("unlabelled", "needs_repair", ("reward_tamper", "error")),
    ]
    t = ht.tally(audits, labels)
    assert t.recall == (1, 3)
    assert t.false_findings == ["s1"]
    assert t.false_errors == []
    assert t.missing == []
    assert not t.meets_bar
    full = ht.tally([_entry("h1", "needs_repair", ("false_pass", "error")), _entry("s2", "accepted")], labels)
    assert full.missing == ["h2", "h3", "s1"]
    assert not full.meets_bar  # a labelled task the report lacks is never a pass


@pytest.mark.bwrap
def test_a_hackable_task_and_its_control_hold_their_labels_on_bwrap() -> None:
    require_backend("bwrap")
    labels = _labels()
    proofs = ht.prove(ht.SET_DIR / "tasks", ["interval-merge", "interval-merge-tally"], labels, "bwrap", via_cli=False)
    by_task = {p.task: p for p in proofs}
    assert [p.problems for p in proofs] == [[], []]
    assert by_task["interval-merge"].hack.full
    assert by_task["interval-merge-tally"].hack.reward == 0.0
