"""Rule repairs as pure functions on small verifier and task.toml texts, and the RuleRepairer on task copies."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode, Severity
from qaflow.repair import shell_fixes as sh
from qaflow.repair.base import Repairer
from qaflow.repair.image_rules import Image, fix_answers_into_tests, fix_grader_into_tests
from qaflow.repair.rule_files import NOT_TEXT, TaskChanges, TaskFiles
from qaflow.repair.rules import (
    RULES,
    RuleRepairer,
    fix_path_ahead,
    fix_pytest_isolation,
    fix_reward_tail,
    read_rule_files,
    set_default_timeouts,
)
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


# --- findings proven by exploits: shared ---------------------------------------------------------


def shim(*files: str) -> AuditFinding:
    exploits = [{"exploit": "script-shim", "files": list(files), "plants": []}]
    return AuditFinding(code=FindingCode.REWARD_TAMPER, message="shim", evidence={"exploits": exploits})


def plant(*files: str) -> AuditFinding:
    exploits = [{"exploit": "python-plant", "files": list(files), "plants": []}]
    return AuditFinding(code=FindingCode.REWARD_TAMPER, message="plant", evidence={"exploits": exploits})


def leak(answer: str, output: str = "/app/out.txt") -> AuditFinding:
    evidence = {"copies": [{"answer": answer, "output": output}], "exploits": [{"exploit": "answer-copy"}]}
    return AuditFinding(code=FindingCode.LEAK, message="leak", evidence=evidence)


def fixture_files(name: str) -> TaskFiles:
    return read_rule_files(TASKS_REPO / name, whole_task=True)


def apply(files: TaskFiles, changes: TaskChanges) -> TaskFiles:
    out = dict(files)
    for rel, text in changes.items():
        if text is None:
            del out[rel]
        else:
            out[rel] = text
    return out


def verifier(test_sh: str, dockerfile: str, **context: str) -> TaskFiles:
    """A small task's rule files: tests/test.sh, environment/Dockerfile and other context files."""
    files = {"task.toml": "[verifier]\ntimeout_sec = 60.0\n", "tests/test.sh": test_sh}
    files["environment/Dockerfile"] = dockerfile
    files.update({f"environment/{rel}": text for rel, text in context.items()})
    return files


RUN_GRADER = "#!/bin/bash\nif python3 /opt/grader/check.py /app/out.txt; then echo 1 > r; else echo 0 > r; fi\n"


# --- grader_into_tests ---------------------------------------------------------------------------


def test_the_shimmed_grader_moves_into_tests_with_its_folder():
    files = fixture_files("tally-survey-answers")
    changes = fix_grader_into_tests(files, [shim("/app/grader/check_tally.py")])
    grader = (TASKS_REPO / "tally-survey-answers" / "environment" / "grader" / "check_tally.py").read_text()
    test_sh = files["tests/test.sh"]
    assert changes == {
        "tests/grader/check_tally.py": grader,
        "tests/test.sh": test_sh.replace(
            "if python3 /app/grader/check_tally.py", "if python3 /tests/grader/check_tally.py"
        ),  # the comment naming /app/grader is left as it was
        "environment/grader/check_tally.py": None,  # out of the image: a copy there would be a leak
        "environment/Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\nCOPY answers.csv /app/answers.csv\n",
    }
    assert "under /app/grader" in changes["tests/test.sh"]
    assert fix_grader_into_tests(apply(files, changes), [shim("/app/grader/check_tally.py")]) == {}  # idempotent


def test_sibling_modules_and_data_come_along_and_the_copies_point_at_tests():
    files = verifier(
        RUN_GRADER + "# /opt/grader/check.py is ours\n",
        "FROM python:3.11-slim\nWORKDIR /opt\nCOPY grader \\\n    ./grader\nCOPY input.csv /app/\n",
        **{
            "grader/check.py": "import helpers\nDATA = '/opt/grader/data/expected.csv'\n",
            "grader/helpers.py": "X = 1\n",
            "grader/data/expected.csv": "a,b\n",
            "input.csv": "x\n",
        },
    )
    changes = fix_grader_into_tests(files, [shim("/opt/grader/check.py", "/opt/grader/helpers.py")])
    assert changes == {
        "tests/grader/check.py": "import helpers\nDATA = '/tests/grader/data/expected.csv'\n",
        "tests/grader/helpers.py": "X = 1\n",
        "tests/grader/data/expected.csv": "a,b\n",
        "tests/test.sh": RUN_GRADER.replace("/opt/grader/", "/tests/grader/") + "# /opt/grader/check.py is ours\n",
        "environment/grader/check.py": None,
        "environment/grader/helpers.py": None,
        "environment/grader/data/expected.csv": None,
        "environment/Dockerfile": "FROM python:3.11-slim\nWORKDIR /opt\nCOPY input.csv /app/\n",
    }


def test_a_single_copied_file_and_a_whole_context_copy():
    single = verifier(
        "#!/bin/bash\n/usr/local/bin/grade /app/out.txt && echo 1 > r\n",
        "FROM alpine\nCOPY tools/grade.sh /usr/local/bin/grade\nCOPY tools/other.sh /srv/tools/\n",
        **{"tools/grade.sh": '#!/bin/sh\ntest -s "$1"\n', "tools/other.sh": "exit 0\n"},
    )
    changes = fix_grader_into_tests(single, [shim("/usr/local/bin/grade")])
    assert changes == {
        "tests/grade": '#!/bin/sh\ntest -s "$1"\n',
        "tests/test.sh": "#!/bin/bash\n/tests/grade /app/out.txt && echo 1 > r\n",
        "environment/tools/grade.sh": None,
        "environment/Dockerfile": "FROM alpine\nCOPY tools/other.sh /srv/tools/\n",
    }
    whole = verifier(RUN_GRADER, "FROM alpine\nCOPY . /opt/\n", **{"grader/check.py": "pass\n", "input.csv": "x\n"})
    changes = fix_grader_into_tests(whole, [shim("/opt/grader/check.py")])
    assert changes == {
        "tests/grader/check.py": "pass\n",
        "tests/test.sh": RUN_GRADER.replace("/opt/", "/tests/"),
        "environment/grader/check.py": None,  # the COPY of the whole context stays
    }


@pytest.mark.parametrize(
    ("dockerfile", "context"),
    [
        ("FROM alpine\nRUN mkdir -p /opt/grader && echo pass > /opt/grader/check.py\n", {}),  # not from the context
        ("FROM alpine\nCOPY grader/ /opt/grader/\nRUN sed -i s/a/b/ /opt/grader/check.py\n", {}),  # changed later
        ("FROM alpine\nARG D=/opt\nCOPY grader/ $D/grader/\n", {}),  # a variable
        ("FROM alpine\nCOPY grader/ /opt/grader/\nCOPY --from=base /x /opt/\n", {}),  # cannot be followed
        ("FROM alpine\nCOPY grader ./grader\n", {}),  # relative to an unknown WORKDIR
        ("FROM alpine\nCOPY grader/ /opt/grader/\n", {"grader/model.bin": NOT_TEXT}),  # a binary sibling
        ("FROM alpine\nCOPY grader/ /opt/grader2/\n", {}),  # a look-alike path
        ("FROM alpine\nCOPY grader/ /opt/grader/\n", {".dockerignore": "grader/check.py\n"}),  # ignored
        ("FROM alpine\nCOPY grader/ /opt/grader/\nRUN chmod -R a+rx /opt/grader\n", {}),  # the build uses it
        ("FROM alpine\nCOPY grader/ /opt/grader/\nCOPY grader/check.py /usr/bin/check\n", {}),  # copied twice
        ("FROM alpine\nCOPY grader/ in.csv /opt/grader/\n", {"in.csv": "x\n"}),  # one of several sources
    ],
)
def test_grader_rule_gives_up_where_the_image_cannot_be_followed(dockerfile: str, context: dict[str, str]):
    files = verifier(RUN_GRADER, dockerfile, **{"grader/check.py": "pass\n", **context})
    assert fix_grader_into_tests(files, [shim("/opt/grader/check.py")]) == {}


def test_grader_rule_needs_the_evidence_a_verifier_reference_and_a_shared_image():
    files = verifier(RUN_GRADER, "FROM alpine\nCOPY grader/ /opt/grader/\n", **{"grader/check.py": "pass\n"})
    assert fix_grader_into_tests(files, [PLANTED_REWARD, plant("/app/conftest.py")]) == {}
    relative = {**files, "tests/test.sh": RUN_GRADER.replace("python3 /opt/grader/", "cd /opt && python3 grader/")}
    assert fix_grader_into_tests(relative, [shim("/opt/grader/check.py")]) == {}  # nothing to point at /tests
    separate = {**files, "tests/Dockerfile": "FROM alpine\n"}
    assert fix_grader_into_tests(separate, [shim("/opt/grader/check.py")]) == {}
    for taken in ({"tests/grader/check.py": "something else\n"}, {"tests/grader/conf.py": "x\n"}, {"tests/grader": ""}):
        assert fix_grader_into_tests({**files, **taken}, [shim("/opt/grader/check.py")]) == {}
    for rel in ("instruction.md", "solution/solve.sh"):  # the task uses it in the image
        named = {**files, rel: "Check your work with /opt/grader/check.py.\n"}
        assert fix_grader_into_tests(named, [shim("/opt/grader/check.py")]) == {}
    control = fixture_files("tally-poll-votes")  # its grader already runs from /tests
    assert fix_grader_into_tests(control, [shim("/tests/check_tally.py")]) == {}


# --- pytest_isolation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "cd /app && python3 -m pytest -q tests/t.py",
            "cd /app && python3 -I -m pytest -p no:cacheprovider --noconftest -q tests/t.py",
        ),
        ("python -u -m pytest /tests -rA", "python -I -u -m pytest -p no:cacheprovider --noconftest /tests -rA"),
        (
            "/usr/bin/python3.11 -m pytest -p no:cacheprovider /tests",
            "/usr/bin/python3.11 -I -m pytest --noconftest -p no:cacheprovider /tests",
        ),
        (
            "pytest /tests/test_x.py | tee log",
            "PYTHONNOUSERSITE=1 PYTHONSAFEPATH=1 pytest -p no:cacheprovider --noconftest /tests/test_x.py | tee log",
        ),
        (
            "timeout 60 pytest /tests",
            "timeout 60 env PYTHONNOUSERSITE=1 PYTHONSAFEPATH=1 pytest -p no:cacheprovider --noconftest /tests",
        ),
        ("uv run pytest /tests", "uv run pytest -p no:cacheprovider --noconftest /tests"),
        (
            "if python3 -m pytest /tests; then  # grade",
            "if python3 -I -m pytest -p no:cacheprovider --noconftest /tests; then  # grade",
        ),
        (
            "python3 -m pytest \\\n  -p no:cacheprovider --noconftest /tests",
            "python3 -I -m pytest \\\n  -p no:cacheprovider --noconftest /tests",
        ),
    ],
)
def test_pytest_runs_cannot_load_agent_files(before: str, after: str):
    text = f"#!/bin/bash\n{before}\nrc=$?\n"
    assert sh.isolate_pytest(text, conftest=False) == f"#!/bin/bash\n{after}\nrc=$?\n"
    assert sh.isolate_pytest(f"#!/bin/bash\n{after}\nrc=$?\n", conftest=False) is None  # idempotent


def test_a_verifier_conftest_keeps_loading_and_pythonpath_keeps_working():
    text = "cd /tests && python3 -m pytest test_a.py\n"
    assert sh.isolate_pytest(text, conftest=True) == (
        "cd /tests && python3 -I -m pytest -p no:cacheprovider --confcutdir=/tests test_a.py\n"
    )
    assert sh.isolate_pytest(text, conftest=False, isolate=False) == (
        "cd /tests && python3 -m pytest -p no:cacheprovider --noconftest test_a.py\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "pip install pytest==8.0\n",
        'echo "python3 -m pytest failed"\n',
        "# python3 -m pytest /tests\n",
        "python3 - <<'EOF'\nimport pytest\npytest.main(['/tests'])\nEOF\n",
        "python3 -I -m pytest -p no:cacheprovider --noconftest /tests\n",
        "python3 /tests/check.py\n",
    ],
)
def test_pytest_isolation_leaves_other_mentions(text: str):
    assert sh.isolate_pytest(text, conftest=False) is None


def test_pytest_runs_the_tests_copy_of_a_test_file_the_script_copied_out():
    text = (
        "cp /tests/test_out.py /app/test_out.py 2>/dev/null || true\n"
        "cd /app && pytest -q test_out.py::test_a ./sub/test_out.py other_test.py 'test_out.py'\n"
        "python3 -m pytest /app/test_out.py && echo 1 > /logs/verifier/reward.txt\n"
        "python3 /app/test_out.py\n"
    )
    assert sh.pytest_from_tests(text) == (
        "cp /tests/test_out.py /app/test_out.py 2>/dev/null || true\n"
        "cd /app && pytest -q /tests/test_out.py::test_a /tests/test_out.py other_test.py 'test_out.py'\n"
        "python3 -m pytest /tests/test_out.py && echo 1 > /logs/verifier/reward.txt\n"
        "python3 /app/test_out.py\n"  # not a pytest run
    )
    assert sh.pytest_from_tests("cd /app && pytest -q test_out.py\n") is None  # nothing copied out of /tests
    assert sh.pytest_from_tests("cp /tests/t.py /app/\npytest /tests/t.py\n") is None


def test_pytest_isolation_rule_on_the_fixture_and_its_conditions():
    files = fixture_files("word-length-histogram")
    finding = plant("/app/conftest.py", "/app/tests/conftest.py", "/app/pytest.py")
    changes = fix_pytest_isolation(files, [finding])
    assert changes == {
        "tests/test.sh": files["tests/test.sh"].replace(
            "cd /app && python3 -m pytest -q -p no:cacheprovider tests/test_histogram.py",
            "cd /app && python3 -I -m pytest --noconftest -q -p no:cacheprovider /tests/test_histogram.py",
        )
    }
    assert fix_pytest_isolation(files, [shim("/app/grader.py"), FALSE_PASS]) == {}  # no python-plant evidence
    with_path = {**files, "environment/Dockerfile": files["environment/Dockerfile"] + "ENV PYTHONPATH=/app/src\n"}
    assert "python3 -m pytest --noconftest -q" in fix_pytest_isolation(with_path, [finding])["tests/test.sh"]
    with_conftest = {**files, "tests/conftest.py": "import pytest\n"}
    assert "--confcutdir=/tests -q" in fix_pytest_isolation(with_conftest, [finding])["tests/test.sh"]


# --- answers_into_tests --------------------------------------------------------------------------


def test_the_leaked_answer_moves_out_of_the_image_into_tests():
    files = fixture_files("sort-guest-list")
    answer = files["environment/guest_list.expected"]
    changes = fix_answers_into_tests(files, [leak("/var/lib/invites/guest_list.expected", "/app/guest_list.txt")])
    assert changes == {
        "tests/guest_list.expected": answer,
        "tests/test.sh": files["tests/test.sh"].replace(
            "/var/lib/invites/guest_list.expected", "/tests/guest_list.expected"
        ),
        "environment/guest_list.expected": None,
        "environment/Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\nCOPY guests.txt /app/guests.txt\n",
    }


def test_an_expectation_the_agent_could_rewrite_moves_into_tests():
    files = fixture_files("dedupe-contacts")
    rewrite = AuditFinding(
        code=FindingCode.REWARD_TAMPER,
        message="exploit expected-rewrite got full reward",
        evidence={"exploits": [{"exploit": "expected-rewrite", "files": ["/srv/qa/contacts.sorted"]}]},
    )
    changes = fix_answers_into_tests(files, [rewrite])
    assert changes == {
        "tests/contacts.sorted": files["environment/contacts.sorted"],
        "tests/check_contacts.py": files["tests/check_contacts.py"].replace(
            "/srv/qa/contacts.sorted", "/tests/contacts.sorted"
        ),
        "environment/contacts.sorted": None,
        "environment/Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\nCOPY contacts.txt /app/contacts.txt\n",
    }
    assert "answers_into_tests" in [r.name for r in RULES if FindingCode.REWARD_TAMPER in r.codes]


def test_an_answer_read_by_python_and_a_copy_over_several_lines():
    files = verifier(
        "#!/bin/bash\npython3 /tests/check.py && echo 1 > r\n",
        "FROM python:3.11-slim\nCOPY orders.csv /app/\n# the key\nCOPY --chmod=644 \\\n  totals.json \\\n"
        "  /srv/grading/totals.json\nRUN echo ok\n",
        **{"orders.csv": "a\n", "totals.json": "{}\n"},
    )
    files["tests/check.py"] = 'import json\nexpected = json.load(open("/srv/grading/totals.json"))\n'
    changes = fix_answers_into_tests(files, [leak("/srv/grading/totals.json")])
    assert changes == {
        "tests/totals.json": "{}\n",
        "tests/check.py": 'import json\nexpected = json.load(open("/tests/totals.json"))\n',
        "environment/totals.json": None,
        "environment/Dockerfile": "FROM python:3.11-slim\nCOPY orders.csv /app/\n# the key\nRUN echo ok\n",
    }


def test_an_answer_copied_with_a_folder_is_deleted_from_the_context():
    test_sh = "#!/bin/bash\ncmp -s /app/out.txt /srv/key/expected.txt && echo 1 > r\n"
    files = verifier(
        test_sh,
        "FROM alpine\nCOPY key/ /srv/key/\n",
        **{"key/expected.txt": "42\n", "key/README": "inputs\n"},
    )
    assert fix_answers_into_tests(files, [leak("/srv/key/expected.txt")]) == {
        "tests/expected.txt": "42\n",
        "tests/test.sh": test_sh.replace("/srv/key/expected.txt", "/tests/expected.txt"),
        "environment/key/expected.txt": None,
    }


@pytest.mark.parametrize(
    ("dockerfile", "context", "tests"),
    [
        ("FROM alpine\nCOPY key/ /srv/key/\n", {}, {}),  # the folder would be left empty
        ("FROM alpine\nCOPY key/expected.txt notes.txt /srv/key/\n", {"notes.txt": "n\n"}, {}),  # several sources
        ("FROM alpine\nCOPY key/expected.txt /srv/key/expected.txt\nCOPY . /app/\n", {}, {}),  # copied twice
        ("FROM alpine\nRUN mkdir -p /srv/key && echo 42 > /srv/key/expected.txt\n", {}, {}),  # built, not copied
        ("FROM alpine\nCOPY key/ /srv/key/\n", {"key/expected.txt": NOT_TEXT, "key/b": "b\n"}, {}),  # binary
        ("FROM alpine\nCOPY key/expected.txt /srv/key/expected.txt\n", {}, {"tests/expected.txt": "41\n"}),  # taken
    ],
)
def test_answer_rule_gives_up_where_the_move_is_not_clean(
    dockerfile: str, context: dict[str, str], tests: dict[str, str]
):
    test_sh = "#!/bin/bash\ncmp -s /app/out.txt /srv/key/expected.txt && echo 1 > r\n"
    files = {**verifier(test_sh, dockerfile, **{"key/expected.txt": "42\n", **context}), **tests}
    assert fix_answers_into_tests(files, [leak("/srv/key/expected.txt")]) == {}


def test_answer_rule_needs_leak_evidence_with_copies():
    files = fixture_files("sort-guest-list")
    leftovers = AuditFinding(code=FindingCode.LEAK, message="pyc", evidence={"files": ["/app/x.pyc"]})
    assert fix_answers_into_tests(files, [leftovers, shim("/var/lib/invites/guest_list.expected")]) == {}


def test_image_follows_workdir_and_the_docker_copy_forms():
    files = verifier(
        "",
        'FROM alpine\nWORKDIR /srv\nWORKDIR app\nCOPY a.txt b/\nCOPY c.txt /etc/c\nCOPY ["d.txt", "/d/"]\n'
        "COPY *.cfg /cfg/\n",
        **{"a.txt": "", "c.txt": "", "d.txt": "", "x.cfg": "", "y.cfg": ""},
    )
    image = Image.of(files)
    assert image is not None
    found = {p: (image.locate(p).source if image.locate(p) else None) for p in [
        "/srv/app/b/a.txt", "/etc/c", "/etc/c/c.txt", "/d/d.txt", "/cfg/y.cfg", "/srv/app/a.txt", "/d"
    ]}  # fmt: skip
    assert found == {
        "/srv/app/b/a.txt": "a.txt",
        "/etc/c": "c.txt",
        "/etc/c/c.txt": "c.txt",  # `COPY f /dest` lands in /dest/f where /dest is a folder
        "/d/d.txt": "d.txt",
        "/cfg/y.cfg": "y.cfg",
        "/srv/app/a.txt": None,
        "/d": None,
    }
    assert Image.of({**files, "environment/Dockerfile": "# escape=`\nFROM alpine\n"}) is None
    assert Image.of({**files, "environment/Dockerfile": "FROM a AS b\nFROM c\nCOPY a.txt /a\n"}) is None


# --- reward_tail ---------------------------------------------------------------------------------

UNCONDITIONAL = "#!/bin/bash\nmkdir -p /logs/verifier\n{check}\necho 1 > /logs/verifier/reward.txt\n"
CONDITIONAL = (
    "#!/bin/bash\nmkdir -p /logs/verifier\nif {check}; then\n  echo 1 > /logs/verifier/reward.txt\nelse\n"
    "  echo 0 > /logs/verifier/reward.txt\nfi\n"
)


@pytest.mark.parametrize(
    ("check", "fixed"),
    [
        ("pytest /tests/test_outputs.py || true", "pytest /tests/test_outputs.py"),
        ("python3 /tests/check.py || :", "python3 /tests/check.py"),
        ("cd /app && python3 -m pytest -q /tests ; true", "cd /app && python3 -m pytest -q /tests"),
        ("bash /tests/run_checks.sh", "bash /tests/run_checks.sh"),
    ],
)
def test_an_unconditional_full_reward_after_the_checks_follows_their_status(check: str, fixed: str):
    assert sh.reward_only_on_success(UNCONDITIONAL.format(check=check)) == CONDITIONAL.format(check=fixed)
    assert sh.reward_only_on_success(CONDITIONAL.format(check=fixed)) is None


def test_reward_tail_on_one_line_in_json_and_indented():
    text = "pytest /tests || true; echo 1 > /logs/verifier/reward.txt\n"
    assert sh.reward_only_on_success(text) == (
        "if pytest /tests; then\n  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n"
    )
    text = (
        "set -e\nmain() {\n  python3 /tests/check.py || true\n\n  # all done\n"
        "  echo '{\"reward\": 1.0}' > /logs/verifier/reward.json  # full marks\n}\n"
    )
    assert sh.reward_only_on_success(text) == (
        "set -e\nmain() {\n\n  # all done\n  if python3 /tests/check.py; then  # full marks\n"
        "    echo '{\"reward\": 1.0}' > /logs/verifier/reward.json\n  else\n"
        "    echo '{\"reward\": 0}' > /logs/verifier/reward.json\n  fi\n}\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        UNCONDITIONAL.format(check="pytest /tests || true")
        + "grep -q FAILED /tmp/log && echo 0 > /logs/verifier/reward.txt\n",
        UNCONDITIONAL.format(check="cp /tests/data.csv /app/ || true"),  # a setup step, not the checks
        UNCONDITIONAL.format(check="pytest /tests || echo failed"),  # a compound
        UNCONDITIONAL.format(check="pytest /tests | tee /tmp/log"),  # a pipeline
        UNCONDITIONAL.format(check="python3 /tests/check.py && echo checked"),  # the status is echo's
        UNCONDITIONAL.format(check="python3 /tests/check.py || true").replace("echo 1 >", "echo 0.5 >"),
        UNCONDITIONAL.format(check="python3 /tests/a.py \\\n  --strict || true"),  # a continued command
        STRICT,  # set -e: a failing check stops it (reward_on_failure's business), the 1 is not unconditional
        SOUND,
    ],
)
def test_reward_tail_leaves_what_is_not_clearly_the_pattern(text: str):
    assert sh.reward_only_on_success(text) is None


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("if [ $? -ne 1 ]; then", "if [ $? -eq 0 ]; then"),
        ('rc=$?\nif [ "$rc" != 1 ]; then', 'rc=$?\nif [ "$rc" = 0 ]; then'),
        ("if (( $? != 1 )); then", "if (( $? == 0 )); then"),
        ('status=$?\n[[ ${status} != "1" ]] && echo 1 > r', 'status=$?\n[[ ${status} == "0" ]] && echo 1 > r'),
        ("rc=$?\n(( rc != 1 )) && echo 1 > r", "rc=$?\n(( rc == 0 )) && echo 1 > r"),
        ("test $? -ne 1 && echo 1 > r", "test $? -eq 0 && echo 1 > r"),
    ],
)
def test_a_status_test_that_only_fails_on_1_succeeds_on_exactly_0(before: str, after: str):
    assert sh.status_not_one_is_failure(f"pytest -q /tests\n{before}\n") == f"pytest -q /tests\n{after}\n"


@pytest.mark.parametrize(
    "text",
    [
        "grep -q ok /app/out.txt\nif [ $? -ne 1 ]; then echo 1 > r; fi\n",  # not the checks' status
        "pytest /tests\nif [ $? -ne 10 ]; then echo 1 > r; fi\n",
        "pytest /tests\nif [ $count -ne 1 ]; then echo 1 > r; fi\n",
        "pytest /tests\nif [ $? -eq 0 ]; then echo 1 > r; fi\n",
    ],
)
def test_status_rule_leaves_other_tests(text: str):
    assert sh.status_not_one_is_failure(text) is None


def test_reward_tail_rule_runs_both_fixes_on_verifier_scripts():
    text = "#!/bin/bash\npytest /tests\nrc=$?\n[ $rc -ne 1 ] && echo 1 > /logs/verifier/reward.txt\n"
    files = {
        "tests/test.sh": text,
        "tests/run": "#!/bin/sh\npytest /tests || true\necho 1 > /logs/verifier/reward.txt\n",
    }
    changes = fix_reward_tail({**files, "solution/solve.sh": files["tests/run"]}, [FALSE_PASS])
    assert changes == {
        "tests/test.sh": text.replace("$rc -ne 1", "$rc -eq 0"),
        "tests/run": "#!/bin/sh\nif pytest /tests; then\n  echo 1 > /logs/verifier/reward.txt\nelse\n"
        "  echo 0 > /logs/verifier/reward.txt\nfi\n",
    }


# --- the RuleRepairer with environment/ files and deletions --------------------------------------


def test_rule_files_list_the_whole_task_only_when_asked(tmp_path: Path):
    work = _copy("sort-guest-list", tmp_path)
    (work / "environment" / "blob.bin").write_bytes(b"\x00\xff")
    assert set(read_rule_files(work)) == {"task.toml", "tests/test.sh"}
    files = read_rule_files(work, whole_task=True)
    assert set(files) - set(read_rule_files(work)) == {
        "instruction.md", "solution/solve.sh", "environment/Dockerfile", "environment/guests.txt",
        "environment/guest_list.expected", "environment/blob.bin",
    }  # fmt: skip
    assert files["environment/blob.bin"] == NOT_TEXT and files["environment/guests.txt"].startswith("Maria Lopez")


def test_rule_repairer_moves_the_answer_and_deletes_it_from_the_context(tmp_path: Path):
    work = _copy("sort-guest-list", tmp_path)
    outcome = RuleRepairer().repair(Task.load(work), work, [leak("/var/lib/invites/guest_list.expected")], 1)
    assert not outcome.gave_up and [a["rule"] for a in outcome.outputs["rules"]] == ["answers_into_tests"]
    assert outcome.changed_files == [
        "environment/Dockerfile", "environment/guest_list.expected", "tests/guest_list.expected", "tests/test.sh"
    ]  # fmt: skip
    assert not (work / "environment" / "guest_list.expected").exists()
    assert (work / "tests" / "guest_list.expected").read_text().startswith("Ahmed Khan\n")
    Task.load(work)  # still a valid task: no COPY names a missing source


@pytest.mark.parametrize("name", ["tally-poll-votes", "line-length-histogram", "restore-notes-backup"])
def test_controls_get_nothing_from_the_new_rules_without_their_evidence(name: str, tmp_path: Path):
    work = _copy(name, tmp_path)
    before = tree_hash(work)
    findings = [PLANTED_REWARD, FALSE_PASS, AuditFinding(code=FindingCode.LEAK, message="x", evidence={"files": []})]
    outcome = RuleRepairer().repair(Task.load(work), work, findings, 1)
    assert outcome.gave_up and tree_hash(work) == before


def test_path_ahead_drops_the_planted_folders_from_path_before_anything_runs(tmp_path: Path):
    won = AuditFinding(
        code=FindingCode.REWARD_TAMPER,
        message="exploit path-shim got full reward",
        evidence={"exploits": [{"exploit": "path-shim", "files": ["/app/tools/python3", "/app/tools/pytest"]}]},
    )
    script = "#!/bin/bash\nmkdir -p /logs/verifier\ncommand -v python3 > /logs/verifier/which\n"
    fixed = fix_path_ahead({"tests/test.sh": script, "tests/check.py": "print(1)\n"}, [won])
    assert set(fixed) == {"tests/test.sh"}
    assert fixed["tests/test.sh"].startswith("#!/bin/bash\nexport PATH=")
    assert fixed["tests/test.sh"].endswith(script.removeprefix("#!/bin/bash\n"))
    assert fix_path_ahead({"tests/test.sh": fixed["tests/test.sh"]}, [won]) == {}  # applied once
    assert fix_path_ahead({"tests/test.sh": script}, []) == {}  # no proof, no change
    # the pruned PATH, run by a real bash: the planted folder is gone, the rest is kept in order
    tools, bin_dir = tmp_path / "tools", tmp_path / "bin"
    for folder in (tools, bin_dir):
        folder.mkdir()
        (folder / "prog").write_text("#!/bin/sh\necho " + folder.name + "\n")
        (folder / "prog").chmod(0o755)
    text = fixed["tests/test.sh"].replace("/app/tools", str(tools)).split("\n", 2)[1] + "\nprog\necho $PATH\n"
    env = {"PATH": f"{tools}:{bin_dir}:/usr/bin:/bin"}
    done = subprocess.run(["bash", "-c", text], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.splitlines() == ["bin", f"{bin_dir}:/usr/bin:/bin"]
