"""Answers baked into the image, proven by copying them: the `answer-copy` exploit (`qaflow.audit.exploits.answers`).

The planning and judging are pure; the audit of two labelled fixtures (an expected list the verifier
compares with, shipped in the image; expected totals the reference solution copies out of the
image) and a look-alike control (the instruction names the file to copy) runs under docker and
bwrap, and the proven copy replays with `qaflow run --agent exploit:answer-copy`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.exploits.answers import ANSWER_COPY, READ_BY_REFERENCE, judge_answer_copy, named_in, plan_answer_copy
from qaflow.audit.observation import Observation
from qaflow.audit.probe_run import ProbeRun
from qaflow.cli import app
from qaflow.trial.effects import ChangeKind, Effect, FileChange
from tests.audit_runs import LABELLED_AUDIT_TIMEOUT_S, audit_fixtures, only_a_failed_sink

ANSWER = b"Ahmed Khan\nBen Ode\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _effect(*changes: tuple[str, ChangeKind, bytes | None]) -> Effect:
    return Effect(changes=[FileChange(path=p, kind=k, content=c) for p, k, c in changes])


def test_named_in_takes_the_path_or_a_bare_file_name_not_another_paths_tail():
    text = "Write `/app/totals.json` from totals.csv; keep `notes.txt`."
    assert named_in("/app/totals.json", text)
    assert named_in("/data/totals.csv", text) and named_in("/x/notes.txt", text)
    assert not named_in("/srv/grading/totals.json", text)  # the output's name, at another place
    assert not named_in("/srv/notes.txt.bak", text)


def test_plans_a_copy_only_for_unnamed_unchanged_files_equal_to_an_output():
    obs = Observation(
        observed=True,
        digests={
            "/var/lib/expected.txt": _sha(ANSWER),
            "/app/input.txt": _sha(ANSWER),  # named by the instruction: an input
            "/app/guests.txt": _sha(b"other"),
        },
    )
    effect = _effect(("/app/out.txt", ChangeKind.CREATED, ANSWER), ("/app/log.txt", ChangeKind.CREATED, b""))
    text = "Read /app/input.txt and write /app/out.txt."
    exploit = plan_answer_copy(obs, effect, text)
    assert exploit is not None and exploit.name == ANSWER_COPY
    assert [(p.copy_from, p.path) for p in exploit.plants] == [("/var/lib/expected.txt", "/app/out.txt")]
    assert "cat /var/lib/expected.txt > /app/out.txt" in exploit.script()
    # an answer file the oracle itself rewrote is its output; no equal output or no effect: nothing to try
    rewritten = _effect(
        ("/app/out.txt", ChangeKind.CREATED, ANSWER), ("/var/lib/expected.txt", ChangeKind.MODIFIED, ANSWER)
    )
    assert plan_answer_copy(obs, rewritten, text) is None
    assert plan_answer_copy(obs, _effect(("/app/out.txt", ChangeKind.CREATED, b"x")), "") is None
    assert plan_answer_copy(obs, None, "") is None
    assert plan_answer_copy(obs, Effect(error="no python3"), "") is None


def test_judged_leak_only_when_the_copy_passes_and_the_nop_does_not():
    exploit = Exploit(name=ANSWER_COPY, plants=[Plant(path="/app/o", content="", copy_from="/srv/e", why="w")])
    run = ProbeRun(probe="exploit:answer-copy", reward=1.0, full=True)
    nop = [ProbeRun(probe="nop", reward=0.0, full=False)] * 2
    (finding,) = judge_answer_copy(nop, run, exploit, "pool/t")
    assert finding.code.value == "leak" and "/srv/e -> /app/o" in finding.message
    assert "reference solution" not in finding.message
    read = exploit.model_copy(
        update={"plants": [p.model_copy(update={"why": "w" + READ_BY_REFERENCE}) for p in exploit.plants]}
    )
    (finding,) = judge_answer_copy(nop, run, read, "pool/t")
    assert "the reference solution reads the verifier's expected answer (/srv/e)" in finding.message
    (entry,) = finding.evidence["exploits"]
    assert entry["exploit"] == ANSWER_COPY and entry["plants"][0]["copy_from"] == "/srv/e"
    assert entry["reproduce"].startswith("qaflow run pool/t --agent exploit:answer-copy")
    assert judge_answer_copy(nop, run.model_copy(update={"full": False, "reward": 0.0}), exploit, "t") == []
    assert judge_answer_copy([ProbeRun(probe="nop", reward=1.0, full=True)], run, exploit, "t") == []


FIXTURES = {
    "sort-guest-list": ("/var/lib/invites/guest_list.expected", "/app/guest_list.txt"),
    "total-orders-by-customer": ("/srv/grading/totals.json", "/app/totals.json"),
    "restore-notes-backup": None,
}


@pytest.mark.timeout(LABELLED_AUDIT_TIMEOUT_S)  # it may run the session's labelled audit
def test_audit_proves_answers_in_the_image_and_replays_the_copy(backend: str, tmp_path: Path):
    done = audit_fixtures(FIXTURES, backend, tmp_path)
    audits, pool = done.audits, done.pool
    for name, copy in FIXTURES.items():
        errors = [f for f in audits[name]["findings"] if f["severity"] == "error"]
        if copy is None:
            assert errors == [] and only_a_failed_sink(audits[name]["probes"]["observe"]), errors
            continue
        (finding,) = errors
        assert finding["code"] == "leak" and finding["evidence"]["copies"] == [{"answer": copy[0], "output": copy[1]}]
        # the oracle's reads are observed too: only total-orders-by-customer's solution reads the answer
        read_by_both = audits[name]["probes"]["observe"]["read_by_both"]
        copied_by_reference = name == "total-orders-by-customer"
        assert (copy[0] in read_by_both) is copied_by_reference, read_by_both
        assert ("the reference solution reads the verifier's expected answer" in finding["message"]) is (
            copied_by_reference
        )
    replay = ["run", str(pool / "sort-guest-list"), "--agent", "exploit:answer-copy", "--backend", backend, "--json"]
    out = CliRunner().invoke(app, [*replay, "--offline", "--network", "none"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["full_reward"] is True
