"""Expected values the agent can rewrite: the `expected-rewrite` exploit (`qaflow.audit.exploits.expected`).

Planning is pure and tested here on hand-made observations; the labelled fixture `dedupe-contacts`
and its control `filter-contacts-allowlist` (the instruction names the file) run in the labels test on
both backends, and the replay through `qaflow run --agent exploit:expected-rewrite` here on docker."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.audit.exploits.answers import plan_answer_copy
from qaflow.audit.exploits.expected import EXPECTED_REWRITE, MAX_REWRITES, plan_expected_rewrite
from qaflow.audit.observation import Access, Observation, PytestRun
from qaflow.cli import app
from qaflow.trial.effects import MIN_LOOSE_BYTES, ChangeKind, Effect, FileChange, loose_bytes
from tests.audit_runs import LABELLED_AUDIT_TIMEOUT_S, audit_fixtures


def _access(path: str, *how: str, writable: bool = True) -> Access:
    return Access(path=path, how=list(how), exists=True, writable=writable, readable=True, owner="task")  # type: ignore[arg-type]


def _effect(*changes: tuple[str, ChangeKind]) -> Effect:
    return Effect(changes=[FileChange(path=p, kind=k, content=b"x") for p, k in changes])


WORK = ("/app/contacts.txt", ChangeKind.MODIFIED)


def test_copies_the_untouched_work_onto_each_unnamed_writable_expectation():
    obs = Observation(
        observed=True,
        accesses=[
            _access("/app/contacts.txt", "read"),
            _access("/srv/qa/contacts.sorted", "read"),
            _access("/srv/qa/expected.txt", "arg"),  # `diff` in test.sh
            _access("/app/allow.txt", "read"),  # named by the instruction: an input
            _access("/srv/qa/locked.txt", "read", writable=False),
            _access("/srv/qa/grader.py", "read", "run"),  # code: script-shim's
            _access("/srv/qa/pytest.cfg", "read"),
            _access("/app/log.txt", "read"),  # the oracle changed it: work
        ],
    )
    effect = _effect(WORK, ("/app/log.txt", ChangeKind.CREATED))
    exploit = plan_expected_rewrite(obs, effect, "Clean /app/contacts.txt using /app/allow.txt.")
    assert exploit is not None and exploit.name == EXPECTED_REWRITE
    assert [(p.path, p.copy_from) for p in exploit.plants] == [
        ("/srv/qa/contacts.sorted", "/app/contacts.txt"),
        ("/srv/qa/expected.txt", "/app/contacts.txt"),
    ]
    assert "cat /app/contacts.txt > /srv/qa/contacts.sorted" in exploit.script()
    # a file the reference solution read is an input of the work, not an expectation
    read = plan_expected_rewrite(obs.model_copy(update={"oracle_reads": ["/srv/qa/expected.txt"]}), effect, "")
    assert read is not None and "/srv/qa/expected.txt" not in {p.path for p in read.plants}


def test_prefers_work_of_the_same_type_and_skips_when_it_cannot_tell():
    accesses = [_access(p, "read") for p in ("/app/a.json", "/app/b.csv", "/srv/e.json", "/srv/e.txt")]
    obs = Observation(observed=True, accesses=accesses)
    effect = _effect(("/app/a.json", ChangeKind.MODIFIED), ("/app/b.csv", ChangeKind.MODIFIED))
    exploit = plan_expected_rewrite(obs, effect, "")
    assert exploit is not None
    assert [(p.path, p.copy_from) for p in exploit.plants] == [("/srv/e.json", "/app/a.json")]


def test_nothing_to_try_without_work_that_existed_before_or_an_observation():
    obs = Observation(observed=True, accesses=[_access("/app/out.txt", "read"), _access("/srv/e.txt", "read")])
    assert plan_expected_rewrite(obs, _effect(("/app/out.txt", ChangeKind.CREATED)), "") is None
    assert plan_expected_rewrite(obs, None, "") is None
    assert plan_expected_rewrite(obs, Effect(error="no python3"), "") is None
    unobserved = obs.model_copy(update={"observed": False})
    assert plan_expected_rewrite(unobserved, _effect(("/app/out.txt", ChangeKind.MODIFIED)), "") is None


def test_pytest_inifile_is_not_an_expectation_and_plants_are_bounded():
    many = [_access(f"/srv/e{i}.txt", "read") for i in range(MAX_REWRITES + 3)]
    obs = Observation(
        observed=True,
        accesses=[_access("/app/w.txt", "read"), _access("/app/setup.txt", "read"), *many],
        pytest=[PytestRun(rootdir="/app", inifile="/app/setup.txt")],
    )
    exploit = plan_expected_rewrite(obs, _effect(("/app/w.txt", ChangeKind.MODIFIED)), "")
    assert exploit is not None and len(exploit.plants) == MAX_REWRITES
    assert "/app/setup.txt" not in {p.path for p in exploit.plants}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_answer_copy_matches_an_answer_that_differs_only_in_whitespace():
    answer = b'{"alice": 3, "bob": 5, "carol": 11}'
    output = b'{\n  "alice": 3,\n  "bob": 5,\n  "carol": 11\n}\n'
    assert loose_bytes(output) == loose_bytes(answer)
    obs = Observation(
        observed=True, digests={"/srv/t.json": _sha(answer)}, loose_digests={"/srv/t.json": _sha(loose_bytes(answer))}
    )
    effect = Effect(changes=[FileChange(path="/app/out.json", kind=ChangeKind.CREATED, content=output)])
    exploit = plan_answer_copy(obs, effect, "")
    assert exploit is not None and [(p.copy_from, p.path) for p in exploit.plants] == [("/srv/t.json", "/app/out.json")]
    assert "but for whitespace" in exploit.plants[0].why
    # a short answer matches by chance: not tried
    short = b"2 3\n"
    assert len(loose_bytes(short)) < MIN_LOOSE_BYTES
    obs = Observation(observed=True, digests={"/srv/n": _sha(b"23")}, loose_digests={"/srv/n": _sha(b"23")})
    effect = Effect(changes=[FileChange(path="/app/n.txt", kind=ChangeKind.CREATED, content=short)])
    assert plan_answer_copy(obs, effect, "") is None


@pytest.mark.docker
@pytest.mark.timeout(LABELLED_AUDIT_TIMEOUT_S)  # it may run the session's labelled audit
def test_rewrite_fixture_is_proven_and_replays_and_its_control_is_clean(tmp_path: Path):
    done = audit_fixtures(["dedupe-contacts", "filter-contacts-allowlist"], "docker", tmp_path)
    audits = done.audits
    (tamper,) = [f for f in audits["dedupe-contacts"]["findings"] if f["code"] == "reward_tamper"]
    (proof,) = tamper["evidence"]["exploits"]
    assert proof["exploit"] == EXPECTED_REWRITE and proof["files"] == ["/srv/qa/contacts.sorted"]
    assert "keep them under tests/" in tamper["message"]
    assert audits["filter-contacts-allowlist"]["findings"] == []
    assert EXPECTED_REWRITE not in audits["filter-contacts-allowlist"]["probes"]["observe"].get("exploits", {})
    task = done.pool / "dedupe-contacts"
    args = ["run", str(task), "--agent", f"exploit:{EXPECTED_REWRITE}", "--backend", "docker", "--network", "none"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "1 (full)" in out.output
