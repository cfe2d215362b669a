"""Every repair rule is dispatched from the findings that name its defect, and from no other: each rule's fixture
(files it changes, evidence it needs) goes through the RuleRepairer once per finding code."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from qaflow.audit.exploits.inprocess import EXIT_AT_IMPORT
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode, Severity
from qaflow.repair.rules import RULES, RuleRepairer, read_rule_files
from qaflow.task import Task
from tests.conftest import TASKS_REPO
from tests.taskfactory import write_task

C = FindingCode


def _exploit(name: str, *files: str) -> dict[str, object]:
    return {"exploits": [{"exploit": name, "files": list(files), "plants": []}]}


@dataclass(frozen=True)
class Case:
    """A rule's fixture (keyed `RULE` or `RULE:variant`): the files that show its defect (over a small task, or
    a bundled task's), the evidence the rule needs, and the finding codes the audit reports that defect under."""

    files: dict[str, str]
    evidence: dict[str, object]
    codes: frozenset[FindingCode]
    base: str | None = None
    severity: Severity = Severity.ERROR


PASSING = frozenset({C.FALSE_PASS, C.WEAK_VERIFIER})
TAMPER = frozenset({C.REWARD_TAMPER})
CHECK = "python3 /tests/check.py"
REWARD = "/logs/verifier/reward.txt"


def verifier(body: str) -> dict[str, str]:
    return {"tests/test.sh": "#!/bin/bash\n" + body}


CASES: dict[str, Case] = {
    "swallowed_status": Case(
        verifier(f"{CHECK} || true\nif [ $? -eq 0 ]; then echo 1; else echo 0; fi > {REWARD}\n"),
        {}, PASSING,
    ),
    "always_true_status": Case(
        verifier(f"{CHECK}\nif [ $? ]; then echo 1; else echo 0; fi > {REWARD}\n"),
        {}, PASSING,
    ),
    "pytest_exit5": Case(
        verifier(f"pytest -q /tests\nrc=$?\nif [ $rc -eq 0 ] || [ $rc -eq 5 ]; then echo 1; fi > {REWARD}\n"),
        {}, PASSING,
    ),
    "reward_tail": Case(
        verifier(f"mkdir -p /logs/verifier\n{CHECK} || true\necho 1 > {REWARD}\n"),
        {}, PASSING,
    ),
    "reward_on_failure": Case(
        verifier(f"set -euo pipefail\nmkdir -p /logs/verifier\n{CHECK}\necho 1 > {REWARD}\n"),
        {"runs": [{"probe": "nop", "error": "the verifier wrote no /logs/verifier/reward.json or reward.txt"}]},
        TAMPER,
    ),
    "grader_into_tests": Case(
        {}, _exploit("script-shim", "/app/grader/check_tally.py"), TAMPER, base="tally-survey-answers"
    ),
    "pytest_isolation": Case(
        {}, _exploit("python-plant", "/app/conftest.py", "/app/tests/conftest.py", "/app/pytest.py"), TAMPER,
        base="word-length-histogram",
    ),
    "path_ahead": Case(
        {"tests/test.sh": "#!/bin/bash\nmkdir -p /logs/verifier\ncommand -v python3 > /logs/verifier/which\n"},
        _exploit("path-shim", "/app/tools/python3", "/app/tools/pytest"), TAMPER,
    ),
    "sterile_verifier": Case(
        {"tests/test.sh": "#!/bin/bash\npytest /tests/test_outputs.py\n", "tests/test_outputs.py": "x = 1\n"},
        _exploit(EXIT_AT_IMPORT, "/app/solution.py"), TAMPER,
    ),
    "startup_shell": Case(
        {"tests/test.sh": "#!/bin/bash\nif bash -lc 'python3 -m pytest /tests'; then echo 1; fi\n"},
        _exploit("shell-startup", "/root/.bash_profile", "/root/.qaflow-shims/python3"), TAMPER,
    ),
    "answers_into_tests": Case(
        {},
        {"copies": [{"answer": "/var/lib/invites/guest_list.expected", "output": "/app/guest_list.txt"}],
         "exploits": [{"exploit": "answer-copy"}]},
        frozenset({C.LEAK}), base="sort-guest-list",
    ),
    "answers_into_tests:rewrite": Case(
        {}, _exploit("expected-rewrite", "/srv/qa/contacts.sorted"), TAMPER, base="dedupe-contacts"
    ),
    "missing_timeouts": Case(
        {"task.toml": 'schema_version = "1.4"\n\n[task]\nname = "test/t"\n'},
        {"file": "task.toml", "field": "verifier.timeout_sec"}, frozenset({C.LINT}), severity=Severity.WARNING,
    ),
}  # fmt: skip


def test_every_rule_has_a_dispatch_case():
    assert sorted({case.partition(":")[0] for case in CASES}) == sorted(r.name for r in RULES)


def _work(case: Case, where: Path) -> Path:
    if case.base is not None:
        work = where / case.base
        shutil.copytree(TASKS_REPO / case.base, work)
    else:
        work = write_task(where, "t")
    for rel, text in case.files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    return work


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_rule_runs_for_exactly_the_codes_of_its_defect(name: str, tmp_path: Path):
    case, rule = CASES[name], name.partition(":")[0]
    for code in FindingCode:
        work = _work(case, tmp_path / code.value)
        before = read_rule_files(work, whole_task=True)
        finding = AuditFinding(code=code, severity=case.severity, message=name, evidence=case.evidence)
        outcome = RuleRepairer().repair(Task.load(work), work, [finding], 1)
        applied = [a["rule"] for a in outcome.outputs["rules"]]
        if code in case.codes:
            assert rule in applied, (code, outcome.summary)
            assert read_rule_files(work, whole_task=True) != before
        else:
            assert rule not in applied, (code, applied)
