"""Rule repairs as pure functions on small verifier and task.toml texts, and the RuleRepairer on task copies."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode, Severity
from qaflow.repair import shell_fixes as sh
from qaflow.repair.base import Repairer
from qaflow.repair.rules import RULES, RuleRepairer, read_rule_files, set_default_timeouts
from qaflow.task import Task, TaskConfig, tree_hash
from tests.conftest import TASKS_REPO

MISSING_REWARD = AuditFinding(
    code=FindingCode.REWARD_TAMPER,
    message="the verifier exits without writing any reward on a failing run",
    evidence={"runs": [{"probe": "nop", "error": "the verifier wrote no /logs/verifier/reward.json or reward.txt"}]},
)
PLANTED_REWARD = AuditFinding(
    code=FindingCode.REWARD_TAMPER, message="a full reward planted by the agent survived", evidence={"tamper": {}}
)
FALSE_PASS = AuditFinding(code=FindingCode.FALSE_PASS, message="nop passes")
SOUND = """#!/bin/bash
# Runs the checks and writes 1 (all pass) or 0 to the reward file.
mkdir -p /logs/verifier
if python3 /tests/check.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


# --- no reward on failure ----------------------------------------------------------------------

STRICT = """#!/bin/bash
set -euo pipefail
mkdir -p /logs/verifier
python3 /tests/check.py
echo 1 > /logs/verifier/reward.txt
"""


def test_set_e_before_the_reward_write_gets_a_failing_reward_first():
    fixed = sh.write_failing_reward_first(STRICT, "reward.txt")
    assert fixed is not None
    lines = fixed.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert lines.index("echo 0 > /logs/verifier/reward.txt") < lines.index("python3 /tests/check.py")
    assert fixed.endswith(STRICT.split("\n", 1)[1])  # the rest is kept as it was
    assert sh.write_failing_reward_first(fixed, "reward.txt") is None  # idempotent


def test_reward_json_verifier_gets_a_failing_reward_json():
    entry = "#!/bin/bash\nmkdir -p /logs/verifier\npython3 /tests/check.py\n"
    helper = 'import json\nwith open("/logs/verifier/reward.json", "w") as fh:\n    json.dump({"a": 1}, fh)\n'
    assert sh.reward_file_written(entry, [helper]) == "reward.json"
    assert sh.write_failing_reward_first(entry, "reward.json") is None  # no static defect, no evidence
    fixed = sh.write_failing_reward_first(entry, "reward.json", evidence=True)
    assert fixed is not None and "echo '{\"reward\": 0}' > /logs/verifier/reward.json" in fixed


@pytest.mark.parametrize(
    "text",
    [
        SOUND,
        STRICT.replace("set -euo pipefail\n", "set -euo pipefail\ntrap 'echo 0 > /logs/verifier/reward.txt' ERR\n"),
        STRICT.replace("python3 /tests/check.py", "python3 /tests/check.py || { echo 0 > /logs/verifier/reward.txt; }"),
        STRICT.replace("set -euo pipefail\n", "set -euo pipefail\necho 0 > /logs/verifier/reward.txt\n"),
        "#!/bin/bash\nset -e\nif python3 /tests/check.py; then echo 1 > /logs/verifier/reward.txt; "
        "else echo 0 > /logs/verifier/reward.txt; fi\n",
    ],
)
def test_reward_rule_leaves_verifiers_that_always_write_a_reward(text: str):
    assert sh.write_failing_reward_first(text, "reward.txt") is None


def test_reward_rule_needs_missing_reward_evidence_or_the_static_pattern():
    files = {
        "tests/test.sh": "#!/bin/bash\npython3 /tests/check.py\n",
        "tests/check.py": "open('/logs/verifier/reward.txt', 'w').write('1')",
    }
    rule = next(r for r in RULES if r.name == "reward_on_failure")
    assert rule.fix(files, [PLANTED_REWARD]) == {}
    changed = rule.fix(files, [MISSING_REWARD])
    assert "echo 0 > /logs/verifier/reward.txt" in changed["tests/test.sh"]


# --- swallowed exit status ---------------------------------------------------------------------


@pytest.mark.parametrize("swallow", ["|| true", "|| :", "; true"])
def test_swallowed_status_before_a_status_test_is_removed(swallow: str):
    text = f"#!/bin/bash\npytest -q /tests/test_outputs.py {swallow}\nif [ $? -eq 0 ]; then\n  echo 1 > r\nfi\n"
    fixed = sh.remove_swallowed_status(text)
    assert fixed == "#!/bin/bash\npytest -q /tests/test_outputs.py\nif [ $? -eq 0 ]; then\n  echo 1 > r\nfi\n"


def test_swallowed_status_inside_an_if_is_removed_and_comments_kept():
    text = "if python3 /tests/check.py || true; then  # grade\n  echo 1\nfi\n"
    assert sh.remove_swallowed_status(text) == "if python3 /tests/check.py; then  # grade\n  echo 1\nfi\n"


@pytest.mark.parametrize(
    "text",
    [
        "python3 /tests/check.py > /tmp/out || true\nif grep -q PASS /tmp/out; then echo 1 > r; fi\n",  # not $?
        "rm -f /app/cache || true\nif [ $? -eq 0 ]; then echo 1; fi\n",  # not the checks
        "python3 /tests/check.py > r.json || echo '{\"a\": 0}' > r.json\n",
        SOUND,
    ],
)
def test_swallowed_status_rule_ignores_other_uses(text: str):
    assert sh.remove_swallowed_status(text) is None


# --- pytest exit code 5 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("if [ $rc -eq 0 ] || [ $rc -eq 5 ]; then", "if [ $rc -eq 0 ]; then"),
        ('if [ "$rc" -eq 5 ] || [ "$rc" -eq 0 ]; then', 'if [ "$rc" -eq 0 ]; then'),
        ("if [[ $? -eq 0 || $? -eq 5 ]]; then", "if [[ $? -eq 0 ]]; then"),
        ("if [ $status -eq 0 -o $status -eq 5 ]; then", "if [ $status -eq 0 ]; then"),
        ("if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then", "if [ $rc -ne 0 ]; then"),
        ("  0|5) echo 1 > /logs/verifier/reward.txt ;;", "  0) echo 1 > /logs/verifier/reward.txt ;;"),
        ("sys.exit(0 if rc in (0, 5) else 1)", "sys.exit(0 if rc == 0 else 1)"),
        ("ok = code not in [5, 0]", "ok = code != 0"),
        ("passed = r.returncode == 0 or r.returncode == 5", "passed = r.returncode == 0"),
        ("ok = rc in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)", "ok = rc == pytest.ExitCode.OK"),
    ],
)
def test_exit_code_5_is_no_longer_success(before: str, after: str):
    text = f"python3 -m pytest -q /tests\nrc=$?\n{before}\n"
    assert sh.exit5_is_failure(text) == f"python3 -m pytest -q /tests\nrc=$?\n{after}\n"


def test_exit_code_5_rule_only_touches_pytest_verifiers_and_other_numbers():
    assert sh.exit5_is_failure("./run_checks\nif [ $rc -eq 0 ] || [ $rc -eq 5 ]; then\n") is None
    assert sh.exit5_is_failure("pytest\nif [ $rc -eq 0 ] || [ $rc -eq 50 ]; then\n") is None
    assert sh.exit5_is_failure("pytest\nif [ $a -eq 0 ] || [ $b -eq 5 ]; then\n") is None


# --- always-true status tests ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("if [ $? ]; then", "if [ $? -eq 0 ]; then"),
        ('if [ "$?" ]; then', 'if [ "$?" -eq 0 ]; then'),
        ("[[ $? ]] && echo 1 > r", "[[ $? -eq 0 ]] && echo 1 > r"),
        ("test $? && echo 1 > r", "test $? -eq 0 && echo 1 > r"),
        ('if [ -n "$?" ]; then', 'if [ "$?" -eq 0 ]; then'),
    ],
)
def test_always_true_status_tests_compare_with_zero(before: str, after: str):
    assert sh.fix_always_true_status(f"python3 /tests/check.py\n{before}\n") == f"python3 /tests/check.py\n{after}\n"


def test_always_true_status_through_a_variable():
    text = "python3 /tests/check.py\nrc=$?\nif [ $rc ]; then echo 1; fi\nif [ $other ]; then :; fi\n"
    fixed = sh.fix_always_true_status(text)
    assert fixed == "python3 /tests/check.py\nrc=$?\nif [ $rc -eq 0 ]; then echo 1; fi\nif [ $other ]; then :; fi\n"
    assert sh.fix_always_true_status(SOUND) is None
    assert sh.fix_always_true_status("if [ $? -eq 0 ]; then\n") is None


# --- task.toml timeouts ------------------------------------------------------------------------

TOML = """schema_version = "1.4"
# a comment that must stay

[task]
name = "acme/thing"
future_field = "kept"

[verifier]
env = { MODE = "strict" }

[environment]
cpus = 1
"""


def test_missing_timeouts_get_defaults_and_everything_else_survives():
    fixed = set_default_timeouts(TOML, ["verifier", "agent"])
    assert fixed is not None
    assert "# a comment that must stay" in fixed and fixed.startswith(TOML.split("[verifier]")[0])
    data = tomllib.loads(fixed)
    assert data["verifier"] == {"timeout_sec": 600.0, "env": {"MODE": "strict"}}
    assert data["agent"] == {"timeout_sec": 600.0}
    assert data["task"]["future_field"] == "kept"
    config = TaskConfig.from_toml(fixed)
    assert config.verifier.timeout_sec == 600.0 and config.agent.timeout_sec == 600.0
    assert config.task is not None and config.task.model_extra == {"future_field": "kept"}
    assert set_default_timeouts(fixed, ["verifier", "agent"]) is None


def test_timeouts_already_set_or_unparsable_toml_change_nothing():
    text = "[verifier]\ntimeout_sec = 30\n\n[agent]\ntimeout_sec = 60\n"
    assert set_default_timeouts(text, ["verifier", "agent"]) is None
    assert set_default_timeouts("[verifier\n", ["verifier"]) is None
    # a dotted key defines the table; a new [verifier] header would be invalid, so nothing is written
    assert set_default_timeouts('verifier.env = { A = "1" }\n', ["verifier"]) is None


# --- the RuleRepairer on task copies -----------------------------------------------------------


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(TASKS_REPO / name, dst)
    return dst


def test_rule_repairer_is_a_repairer_and_fixes_only_what_the_findings_name(tmp_path: Path):
    repairer = RuleRepairer()
    assert isinstance(repairer, Repairer)
    work = _copy("rotate-backups", tmp_path)
    before = tree_hash(work)
    outcome = repairer.repair(Task.load(work), work, [PLANTED_REWARD], 1)  # no rule for this one
    assert outcome.gave_up and outcome.changed_files == [] and tree_hash(work) == before
    outcome = repairer.repair(Task.load(work), work, [FALSE_PASS], 1)
    assert not outcome.gave_up and outcome.changed_files == ["tests/test.sh"]
    assert [a["rule"] for a in outcome.outputs["rules"]] == ["always_true_status"]
    assert "if [ $? -eq 0 ]; then" in (work / "tests" / "test.sh").read_text()


def test_rule_repairer_gives_up_where_no_rule_applies(tmp_path: Path):
    work = _copy("average-ratings", tmp_path)
    before = tree_hash(work)
    finding = AuditFinding(code=FindingCode.FALSE_REJECTION, message="oracle rejected")
    outcome = RuleRepairer().repair(Task.load(work), work, [finding], 1)
    assert outcome.gave_up and "false_rejection" in outcome.summary and tree_hash(work) == before


def test_rule_repairer_sets_timeouts_from_lint_findings(tmp_path: Path):
    work = _copy("csv-sum", tmp_path)
    toml = work / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 60.0\n", "", 1))
    lint = AuditFinding(
        code=FindingCode.LINT,
        severity=Severity.WARNING,
        message="task.toml does not set [verifier] timeout_sec",
        evidence={"file": "task.toml", "field": "verifier.timeout_sec"},
    )
    outcome = RuleRepairer().repair(Task.load(work), work, [lint], 1)
    assert outcome.changed_files == ["task.toml"]
    assert Task.load(work).config.verifier.timeout_sec == 600.0


def test_rule_files_are_the_verifier_and_task_toml(tmp_path: Path):
    files = read_rule_files(_copy("score-quiz", tmp_path))
    assert set(files) == {"task.toml", "tests/test.sh", "tests/check.py"}
