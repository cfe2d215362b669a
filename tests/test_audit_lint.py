"""The lint probe: static checks, no sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qaflow.audit.lint import LintConfig, lint_task
from qaflow.audit.lint.similarity import heredocs, similarity
from qaflow.models.audit import AuditFinding, Verdict, verdict_for
from qaflow.models.records import FindingCode, Severity
from qaflow.task import Task, find_task_dirs
from tests.taskfactory import write_task

TASKS_REPO = Path(__file__).resolve().parent.parent / "tasks_repo"

EXPECTED_JSON = '{"total": 200, "by_status": {"200": 93, "404": 32}, "top_path": "/index.html"}\n'
TEST_PY = """import json
from pathlib import Path


def test_report_exists():
    assert Path("/app/report.json").is_file()


def test_report_values():
    report = json.loads(Path("/app/report.json").read_text())
    assert report["total"] == 200
    assert report["by_status"] == {"200": 93, "404": 32}
    assert report["top_path"] == "/index.html"
"""
CALC = """def mean(xs):
    if not xs:
        raise ValueError("empty")
    return sum(xs) / len(xs)


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2]
"""


def lint(task_dir: Path, config: LintConfig | None = None) -> list[AuditFinding]:
    return lint_task(Task.load(task_dir), config)


def codes(findings: list[AuditFinding]) -> list[tuple[str, str]]:
    return [(f.code.value, f.severity.value) for f in findings]


def only(findings: list[AuditFinding], code: FindingCode = FindingCode.LEAK) -> AuditFinding:
    matching = [f for f in findings if f.code is code]
    assert len(matching) == 1, findings
    return matching[0]


def test_clean_task_has_no_findings(tmp_path: Path) -> None:
    assert lint(write_task(tmp_path)) == []


def test_unset_timeouts_are_warnings(tmp_path: Path) -> None:
    task = write_task(tmp_path)
    (task / "task.toml").write_text('schema_version = "1.4"\n\n[task]\nname = "test/t"\n')
    findings = lint(task)
    assert codes(findings) == [("lint", "warning")] * 2
    assert [f.evidence["field"] for f in findings] == ["agent.timeout_sec", "verifier.timeout_sec"]
    assert all(f.evidence["file"] == "task.toml" for f in findings)


def test_verifier_timeout_default_does_not_count_as_set(tmp_path: Path) -> None:
    task = write_task(tmp_path)
    (task / "task.toml").write_text('schema_version = "1.4"\n\n[agent]\ntimeout_sec = 60.0\n')
    assert [f.evidence["field"] for f in lint(task)] == ["verifier.timeout_sec"]


def test_multi_step_timeouts_set_per_step(tmp_path: Path) -> None:
    task = write_task(tmp_path)
    steps = "".join(
        f'[[steps]]\nname = "{n}"\n[steps.agent]\ntimeout_sec = 30.0\n[steps.verifier]\ntimeout_sec = 30.0\n'
        for n in ("one", "two")
    )
    (task / "task.toml").write_text('schema_version = "1.4"\n\n' + steps)
    for name in ("one", "two"):
        (task / "steps" / name).mkdir(parents=True)
        (task / "steps" / name / "instruction.md").write_text("Write `done` to /app/out.txt.\n")
        (task / "steps" / name / "solution").mkdir()
        (task / "steps" / name / "solution" / "solve.sh").write_text("echo done > /app/out.txt\n")
    assert lint(task) == []


def test_verifier_without_reward_is_a_warning(tmp_path: Path) -> None:
    task = write_task(tmp_path, test_sh="#!/bin/bash\npytest /tests/test_outputs.py\n")
    finding = only(lint(task), FindingCode.LINT)
    assert finding.severity is Severity.WARNING
    assert finding.evidence["file"] == "tests/test.sh"
    assert "does not appear to write a reward" in finding.message


@pytest.mark.parametrize(
    "test_sh, helper",
    [
        ("#!/bin/bash\npython3 /tests/grade.py\n", 'open("/logs/verifier/reward.json", "w").write("{}")\n'),
        ('#!/bin/bash\nOUT=/logs/verifier\necho 1 > "$OUT/reward.txt"\n', None),
        ("#!/bin/bash\nsource /tests/lib.sh\nfinish\n", 'finish() { echo "$r" > /logs/verifier/reward.txt; }\n'),
    ],
)
def test_reward_written_by_helper_or_variable(tmp_path: Path, test_sh: str, helper: str | None) -> None:
    files = {"tests/grade.py" if "grade" in test_sh else "tests/lib.sh": helper} if helper else {}
    assert lint(write_task(tmp_path, test_sh=test_sh, files=files)) == []


def test_expected_output_copied_into_image(tmp_path: Path) -> None:
    task = write_task(
        tmp_path,
        dockerfile="FROM python:3.11-slim\nWORKDIR /app\nCOPY answers.json /app/\n",
        files={"environment/answers.json": EXPECTED_JSON, "tests/expected.json": EXPECTED_JSON},
    )
    finding = only(lint(task))
    assert finding.severity is Severity.ERROR
    assert finding.evidence["file"] == "environment/answers.json"
    assert finding.evidence["hidden_file"] == "tests/expected.json"
    assert finding.evidence["similarity"] == 1.0
    assert finding.evidence["copied_by"] == "COPY answers.json /app/"
    assert finding.message.startswith("environment/answers.json is identical to tests/expected.json")


def test_matching_file_left_out_of_the_image_is_only_a_warning(tmp_path: Path) -> None:
    task = write_task(tmp_path, files={"environment/answers.json": EXPECTED_JSON, "tests/expected.json": EXPECTED_JSON})
    finding = only(lint(task), FindingCode.LINT)
    assert finding.severity is Severity.WARNING
    assert finding.evidence["file"] == "environment/answers.json"


def test_dockerignore_keeps_a_file_out(tmp_path: Path) -> None:
    task = write_task(
        tmp_path,
        dockerfile="FROM python:3.11-slim\nCOPY . /app/\n",
        files={
            "environment/.dockerignore": "*.json\n",
            "environment/answers.json": EXPECTED_JSON,
            "tests/expected.json": EXPECTED_JSON,
        },
    )
    assert codes(lint(task)) == [("lint", "warning")]


def test_near_duplicate_test_file_in_image(tmp_path: Path) -> None:
    changed = TEST_PY.replace("    ", "\t").replace(" == 200", " == 200  # total").replace("\n\n\n", "\n\n")
    task = write_task(
        tmp_path,
        dockerfile="FROM python:3.11-slim\nCOPY . /app/\n",
        files={"environment/checks/test_report.py": changed, "tests/test_outputs.py": TEST_PY},
    )
    finding = only(lint(task))
    assert finding.evidence["file"] == "environment/checks/test_report.py"
    assert finding.evidence["hidden_file"] == "tests/test_outputs.py"
    assert 0.9 <= finding.evidence["similarity"] < 1.0
    assert finding.evidence["copied_by"] == "COPY . /app/"


def test_solution_copied_into_image(tmp_path: Path) -> None:
    solve = "#!/bin/bash\nset -euo pipefail\npython3 /app/report.py --input /app/access.log > /app/report.json\n"
    task = write_task(
        tmp_path,
        solve_sh=solve,
        dockerfile="FROM python:3.11-slim\nCOPY run.sh /app/run.sh\n",
        files={"environment/run.sh": "# helper\n" + solve.replace("  ", " ")},
    )
    finding = only(lint(task))
    assert finding.evidence["hidden_file"] == "solution/solve.sh"
    assert "reference solution" in finding.message


def test_solution_heredoc_body_in_image(tmp_path: Path) -> None:
    task = write_task(
        tmp_path,
        solve_sh=f"#!/bin/bash\ncat > /app/calc.py <<'PY'\n{CALC}PY\n",
        dockerfile="FROM python:3.11-slim\nCOPY calc.py /app/calc_ref.py\n",
        files={"environment/calc.py": CALC},
    )
    finding = only(lint(task))
    assert finding.evidence["hidden_file"] == "solution/solve.sh"
    assert finding.evidence["hidden_part"] == "heredoc at line 2"


TOTAL = "def total(xs):\n    t = 0\n    for x in xs:\n        t += x\n    return t\n\n\nprint(total([1, 2, 3]))\n"
BUGGY_LINE = "    s = s[1:]  # drop the header row\n"


@pytest.mark.parametrize(
    "original, fixed",
    [
        (CALC, CALC.replace("return s[len(s) // 2]", "return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2")),
        (CALC.replace("    s = sorted(xs)\n", "    s = sorted(xs)\n" + BUGGY_LINE), CALC),  # the fix deletes a line
        (TOTAL.replace("    return t", "        return t"), TOTAL),  # an indentation fix
    ],
)
def test_solution_fixing_an_input_file_is_not_a_leak(tmp_path: Path, original: str, fixed: str) -> None:
    task = write_task(
        tmp_path,
        solve_sh=f"#!/bin/bash\ncat > /app/calc.py <<'PY'\n{fixed}PY\n",
        dockerfile="FROM python:3.11-slim\nCOPY calc.py /app/calc.py\n",
        files={"environment/calc.py": original, "tests/reference_calc.py": fixed},
    )
    assert lint(task) == []


def test_unchanged_solution_files_are_not_leaks(tmp_path: Path) -> None:
    utils = "".join(f"def helper_{i}(x):\n    return x * {i}\n\n\n" for i in range(5))
    comments = "# " + "generated fixture; do not edit by hand " * 3 + "\n"
    task = write_task(
        tmp_path,
        dockerfile="FROM python:3.11-slim\nCOPY . /app/\n",
        files={
            "environment/pkg/utils.py": utils,  # the solution's fixed tree leaves it unchanged
            "solution/pkg/utils.py": utils,
            "environment/notes.sh": comments,  # nothing but comments on both sides
            "solution/notes.sh": comments.replace("#", "# "),
        },
    )
    assert lint(task) == []


def test_verifier_script_copied_with_a_tests_folder(tmp_path: Path) -> None:
    check = "import json, sys\n\ngot = json.load(open('/app/grades.json'))\nsys.exit(0 if got == {'ann': 'B'} else 1)\n"
    task = write_task(
        tmp_path,
        dockerfile="FROM python:3.11-slim\nCOPY tests/ /app/tests/\n",
        files={"environment/tests/check.py": check, "tests/check.py": check},
    )
    finding = only(lint(task))
    assert finding.evidence["file"] == "environment/tests/check.py"
    assert finding.evidence["hidden_file"] == "tests/check.py"
    assert finding.evidence["copied_by"] == "COPY tests/ /app/tests/"


def test_solution_script_in_image_even_under_its_own_name(tmp_path: Path) -> None:
    solve = "#!/bin/bash\nset -euo pipefail\npython3 /app/fix.py --in /app/data.csv --out /app/clean.csv\n"
    task = write_task(
        tmp_path,
        solve_sh=solve,
        dockerfile="FROM python:3.11-slim\nCOPY solve.sh /app/\n",
        files={"environment/solve.sh": solve},
    )
    findings = lint(task)
    assert sorted(codes(findings)) == [("leak", "error"), ("leak", "warning")]  # content, and the name


def test_step_workdir_holding_expected_output(tmp_path: Path) -> None:
    expected = "".join(f"greeting {i}: hello, harbor\n" for i in range(4))
    task = write_task(tmp_path)
    (task / "task.toml").write_text(
        'schema_version = "1.4"\n[agent]\ntimeout_sec = 30.0\n[verifier]\ntimeout_sec = 30.0\n[[steps]]\nname = "one"\n'
    )
    step = task / "steps" / "one"
    for rel, text in {
        "instruction.md": "Greet.\n",
        "solution/solve.sh": "echo hi\n",
        "workdir/greetings.txt": expected,
        "tests/expected_greetings.txt": expected,
    }.items():
        (step / rel).parent.mkdir(parents=True, exist_ok=True)
        (step / rel).write_text(text)
    finding = only(lint(task))
    assert finding.evidence["file"] == "steps/one/workdir/greetings.txt"
    assert finding.evidence["hidden_file"] == "steps/one/tests/expected_greetings.txt"


def test_expected_output_close_to_the_input_is_not_a_leak(tmp_path: Path) -> None:
    rows = [f"2024-05-{d:02d},north,{d * 13.5:.2f}" for d in range(1, 20)]
    messy = "".join(f"{r}   \r\n" for r in rows)
    task = write_task(
        tmp_path,
        dockerfile="FROM python:3.11-slim\nCOPY sales.csv /app/sales.csv\n",
        instruction="Strip trailing whitespace and CRLFs from /app/sales.csv.\n",
        files={
            "environment/sales.csv": messy,
            "tests/expected.csv": "".join(f"{r}\n" for r in rows),
            "tests/test_expected.csv": "".join(f"{r}\n" for r in rows[:-1]),  # test-named data is still data
        },
    )
    assert lint(task) == []


def test_pristine_copy_of_a_named_input_is_not_a_leak(tmp_path: Path) -> None:
    data = "".join(f"IMG_{i:04d}.jpg,2024-05-{i:02d}\n" for i in range(1, 9))
    dockerfile = "FROM python:3.11-slim\nCOPY . /app/\n"
    files = {"environment/manifest.csv": data, "tests/manifest.csv": data}
    instruction = "Rename the photos listed in `/app/manifest.csv`.\n"
    assert lint(write_task(tmp_path, instruction=instruction, dockerfile=dockerfile, files=files)) == []
    # named by the solution rather than the instruction
    solve = "#!/bin/bash\npython3 /app/rename.py /app/manifest.csv\n"
    assert lint(write_task(tmp_path, "b", solve_sh=solve, dockerfile=dockerfile, files=files)) == []
    # the verifier's copy of the module to fix, and dependency manifests
    files = {
        "environment/calc.py": CALC,
        "tests/calc.py": CALC,
        "environment/requirements.txt": "numpy==2.1.0\npandas==2.2.3\npytest==8.4.1\n",
        "tests/requirements.txt": "numpy==2.1.0\npandas==2.2.3\npytest==8.4.1\n",
    }
    instruction = "Fix `median` in /app/calc.py.\n"
    assert lint(write_task(tmp_path, "c", instruction=instruction, dockerfile=dockerfile, files=files)) == []


def test_verifier_copy_of_a_named_input_under_another_name_is_not_a_leak(tmp_path: Path) -> None:
    data = "".join(f"user{i}@example.org\n" for i in range(1, 9))
    dockerfile = "FROM python:3.11-slim\nCOPY contacts.txt /app/contacts.txt\n"
    instruction = "Keep only the allowed lines of `/app/contacts.txt`.\n"
    files = {"environment/contacts.txt": data, "tests/contacts.orig": data}
    assert lint(write_task(tmp_path, instruction=instruction, dockerfile=dockerfile, files=files)) == []
    # under an answer's name, or of an input the instruction does not name, it is still a leak
    files = {"environment/contacts.txt": data, "tests/expected_contacts.txt": data}
    findings = lint(write_task(tmp_path, "b", instruction=instruction, dockerfile=dockerfile, files=files))
    assert codes(findings) == [("leak", "error")]
    files = {"environment/contacts.txt": data, "tests/contacts.orig": data}
    findings = lint(write_task(tmp_path, "c", instruction="Clean the list.\n", dockerfile=dockerfile, files=files))
    assert codes(findings) == [("leak", "error")]


def test_same_bytes_under_an_answer_name_or_unnamed_are_a_leak(tmp_path: Path) -> None:
    data = "".join(f"IMG_{i:04d}.jpg,2024-05-{i:02d}\n" for i in range(1, 9))
    dockerfile = "FROM python:3.11-slim\nCOPY . /app/\n"
    instruction = "Rename the photos listed in `/app/expected_manifest.csv`.\n"
    files = {"environment/expected_manifest.csv": data, "tests/expected_manifest.csv": data}
    findings = lint(write_task(tmp_path, instruction=instruction, dockerfile=dockerfile, files=files))
    assert codes(findings) == [("leak", "error")]
    files = {"environment/fixtures.csv": data, "tests/fixtures.csv": data}
    assert codes(lint(write_task(tmp_path, "b", dockerfile=dockerfile, files=files))) == [("leak", "error")]


def test_the_verifier_copy_of_files_the_instruction_hands_over_by_folder_is_not_a_leak(tmp_path: Path) -> None:
    cases = "".join(f"{i} + {i}\n" for i in range(100, 130))
    sums = "".join(f"{2 * i}\n" for i in range(100, 130))
    test_py = "def test_sum():\n" + "".join(f"    assert calc({i}, {i}) == {2 * i}\n" for i in range(1, 8))
    dockerfile = "FROM python:3.11-slim\nWORKDIR /app\nCOPY examples/ /app/examples/\nCOPY repo/ /app/\n"
    files = {
        "environment/examples/basic.in": cases,
        "environment/examples/basic.out": sums,
        "environment/repo/tests/test_calc.py": test_py,
        "tests/cases/basic.in": cases,
        "tests/cases/basic.out": sums,
        "tests/test_calc.py": test_py,
    }
    handed = "Write /app/calc.py. The pairs in `/app/examples` are the acceptance cases; `/app/tests` has its tests.\n"
    assert lint(write_task(tmp_path, instruction=handed, dockerfile=dockerfile, files=files)) == []
    # unnamed, or named only through the workdir, they are the verifier's hidden cases in the image
    for name, instruction in [("b", "Write /app/calc.py.\n"), ("c", "Write the program in `/app`.\n")]:
        found = lint(write_task(tmp_path, name, instruction=instruction, dockerfile=dockerfile, files=files))
        assert {f.evidence["file"] for f in found if f.code is FindingCode.LEAK} == {
            "environment/examples/basic.in", "environment/examples/basic.out", "environment/repo/tests/test_calc.py"
        }  # fmt: skip
    # an answer's name in a folder the instruction names is still a leak
    answers = {"environment/examples/expected.txt": sums, "tests/expected.txt": sums}
    found = lint(write_task(tmp_path, "d", instruction=handed, dockerfile=dockerfile, files=answers))
    assert codes(found) == [("leak", "error")]


def test_tiny_and_binary_files_are_ignored(tmp_path: Path) -> None:
    binary = "\x00\x01PNG" + "x" * 100
    task = write_task(
        tmp_path,
        dockerfile="FROM python:3.11-slim\nCOPY . /app/\n",
        files={
            "environment/a.txt": "42\n",
            "tests/a.txt": "42\n",
            "environment/img.bin": binary,
            "tests/img.bin": binary,
        },
    )
    assert lint(task) == []


@pytest.mark.parametrize(
    "line",
    [
        "COPY tests/ /tests/",
        "COPY solution/solve.sh /tmp/",
        "ADD ./tests/test_outputs.py /app/",
        'COPY ["solution", "/opt/sol"]',
    ],
)
def test_dockerfile_copying_tests_or_solution(tmp_path: Path, line: str) -> None:
    task = write_task(tmp_path, dockerfile=f"FROM python:3.11-slim\nWORKDIR /app\n{line}\n")
    finding = only(lint(task))
    assert finding.severity is Severity.ERROR
    assert finding.evidence["file"] == "environment/Dockerfile"
    assert finding.evidence["line"] == line


def test_visible_tests_folder_of_the_context_is_judged_by_content(tmp_path: Path) -> None:
    visible = "from calc import mean\n\n\ndef test_mean():\n    assert mean([1, 2]) == 1.5\n"
    task = write_task(
        tmp_path,
        dockerfile="FROM python:3.11-slim\nCOPY tests/ /app/tests/\n",
        files={"environment/tests/test_visible.py": visible, "tests/test_outputs.py": TEST_PY},
    )
    assert lint(task) == []


@pytest.mark.parametrize(
    "instruction, flagged",
    [
        ("Write `done` to /app/out.txt, then run the tests.\n", []),
        ("Keep the unit tests in /app/tests/ passing; see https://example.com/tests/x.\n", []),
        ("Write `done` to /app/out.txt.\nThe checker is /tests/test_outputs.py.\n", ["/tests/test_outputs.py"]),
        ("Compare your work with `/solution/solve.sh` and /tests.\n", ["/solution/solve.sh", "/tests"]),
    ],
)
def test_instruction_naming_hidden_paths(tmp_path: Path, instruction: str, flagged: list[str]) -> None:
    findings = lint(write_task(tmp_path, instruction=instruction))
    if not flagged:
        assert findings == []
        return
    finding = only(findings, FindingCode.LINT)
    # a path in the text proves nothing: a warning; the audit's hidden-link exploit decides `leak`
    assert finding.code is FindingCode.LINT and finding.severity is Severity.WARNING
    assert finding.evidence["file"] == "instruction.md"
    assert [m["path"] for m in finding.evidence["mentions"]] == flagged


def test_expected_answer_quoted_in_instruction(tmp_path: Path) -> None:
    check = (
        'import sys\nEXPECTED = "3382.91"\nif open("/app/answer.txt").read().strip() != EXPECTED:\n    sys.exit(1)\n'
    )
    files = {"tests/check.py": check}
    leaked = "Sum the north sales from /app/sales.csv into /app/answer.txt; the total is 3382.91.\n"
    finding = only(lint(write_task(tmp_path, instruction=leaked, files=files)))
    assert finding.severity is Severity.WARNING
    assert finding.evidence == {"file": "instruction.md", "values": ["3382.91"]}
    # a format example, or a value present in an input file, is not flagged
    example = "Write the total with two decimals (for example 3382.91) to /app/answer.txt.\n"
    assert lint(write_task(tmp_path, "b", instruction=example, files=files)) == []
    files = {**files, "environment/notes.txt": "last year's total: 3382.91\n"}
    assert lint(write_task(tmp_path, "c", instruction=leaked, files=files)) == []


def test_format_strings_in_instruction_are_not_flagged(tmp_path: Path) -> None:
    check = (
        "import os, sys\n"
        'if open("/app/out.csv").readline().strip() != "date,region,total_amount":\n    sys.exit(1)\n'
        'if sorted(os.listdir("/app/parts")) != ["part-00000.csv", "part-00001.csv"]:\n    sys.exit(1)\n'
    )
    instruction = (
        "Split the rows into /app/parts/part-00000.csv and part-00001.csv, each with the header "
        "`date,region,total_amount`.\n"
    )
    assert lint(write_task(tmp_path, instruction=instruction, files={"tests/check.py": check})) == []


def test_canary_strings(tmp_path: Path) -> None:
    canary = "CANARY-7f3e9c2a-qaflow"
    config = LintConfig(canaries=[canary])
    clean = write_task(tmp_path, files={"tests/check.py": f"# {canary}\n", "solution/notes.md": canary})
    assert lint(clean, config) == []
    leaked = write_task(
        tmp_path,
        "b",
        instruction=f"Write `done` to /app/out.txt.\n<!-- {canary} -->\n",
        dockerfile="FROM python:3.11-slim\nCOPY data.txt /app/\n",
        files={"environment/data.txt": f"rows\n{canary}\n"},
    )
    findings = lint(leaked, config)
    assert codes(findings) == [("leak", "error")] * 2
    assert sorted(f.evidence["file"] for f in findings) == ["environment/data.txt", "instruction.md"]


def test_similarity_measure() -> None:
    text = "".join(f"line number {i} of the file\n" for i in range(20))
    assert similarity(text, text.replace(" of ", "   of ") + "\n\n") == 1.0
    assert 0.95 < similarity(text, text.replace("line number 7", "row 7")) < 1.0
    assert similarity(text, "something else entirely\n") < 0.3


def test_heredoc_bodies() -> None:
    script = "#!/bin/bash\ncat > /app/x.py <<'EOF'\nprint(1)\nEOF\npython3 - <<PY\nimport os\nPY\n"
    script += "cat <<-END > out\nhi\nEND\n"
    assert heredocs(script) == [(2, ".py", "print(1)\n"), (5, ".py", "import os\n"), (8, "", "hi\n")]


def test_tasks_repo_controls_have_no_findings() -> None:
    labels = json.loads((TASKS_REPO / "labels.json").read_text())
    controls = []
    for folder in find_task_dirs(TASKS_REPO):
        codes = labels[folder.name]["codes"]
        if "invalid_task" in codes:
            continue
        findings = lint_task(Task.load(folder))  # every loadable task lints without error
        if not codes:
            controls.append(folder.name)
            errors = [f for f in findings if f.severity is Severity.ERROR]
            warnings = sorted({f.code.value for f in findings if f.severity is Severity.WARNING})
            assert errors == [] and warnings == labels[folder.name].get("warnings", []), (folder.name, findings)
        elif "leak" not in codes:
            assert [f for f in findings if f.code.value == "leak"] == [], (folder.name, findings)
    assert len(controls) >= 5


# --- advisory checks of the verifier's logic (lint/verifier.py) ------------------------------

RUN_CHECK = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "if python3 /tests/check.py; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
)
RUN_PYTEST = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "if python3 -m pytest -q /tests/test_outputs.py; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
)
COUNT_TASK = "Write /app/count.py, which prints how many lines the file named by its argument has.\n"
STRICT_TEST = (
    "#!/bin/bash\nset -euo pipefail\nmkdir -p /logs/verifier\npython3 /tests/check.py\n"
    "echo 1 > /logs/verifier/reward.txt\n"
)
WEAK_TEST = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "if [ -e /app/out.txt ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
)
SAME_FILES = "import sys\nsys.exit(open('/app/out.txt').read() != open('/app/in.txt').read())\n"


def verifier_warnings(task_dir: Path) -> list[tuple[str, str, int]]:
    """(check, file, line) of the verifier lint warnings; each must be a warning naming its place."""
    found = []
    for finding in lint(task_dir):
        if "check" in finding.evidence:
            assert (finding.code, finding.severity) == (FindingCode.LINT, Severity.WARNING)
            where = f"{finding.evidence['file']}:{finding.evidence['line']}"
            assert finding.message.startswith(where), finding.message
            found.append((finding.evidence["check"], finding.evidence["file"], finding.evidence["line"]))
    return found


@pytest.mark.parametrize(
    "test_sh, files, line",
    [
        (  # a literal date
            RUN_CHECK,
            {
                "tests/check.py": "import sys\nfrom datetime import date\nif date.today() > date(2025, 6, 30):\n"
                "    sys.exit(1)\nsys.exit(open('/app/out.txt').read() != 'done\\n')\n"
            },
            3,
        ),
        (  # the agent's output against a time derived from now, through names
            RUN_PYTEST,
            {
                "tests/test_outputs.py": "import json\nfrom datetime import datetime, timedelta\n\n\n"
                "def test_recent_events():\n    events = json.load(open('/app/events.json'))\n"
                "    cutoff = datetime.now() - timedelta(days=45)\n    for event in events:\n"
                "        assert datetime.fromisoformat(event['time']) >= cutoff\n"
            },
            9,
        ),
        (  # a pytest fixture holding the agent's report
            RUN_PYTEST,
            {
                "tests/test_outputs.py": "import time\n\n\ndef test_stamp(report):\n"
                "    assert report['year'] == time.strftime('%Y')\n"
            },
            5,
        ),
    ],
)
def test_python_verifier_comparing_the_time_now(tmp_path: Path, test_sh: str, files: dict[str, str], line: int) -> None:
    file = next(iter(files))
    assert verifier_warnings(write_task(tmp_path, test_sh=test_sh, files=files)) == [("wall_clock", file, line)]


@pytest.mark.parametrize(
    "test_sh, line",
    [
        (
            '#!/bin/bash\nmkdir -p /logs/verifier\nif [ "$(cat /app/out.txt)" = "$(date +%F)" ]; '
            "then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
            3,
        ),
        (
            "#!/bin/bash\nmkdir -p /logs/verifier\ntoday=$(date +%Y-%m-%d)\n"
            'if grep -q "$today" /app/log.txt && [ "$(cat /app/out.txt)" = done ]; '
            "then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
            4,
        ),
        (
            '#!/bin/bash\nmkdir -p /logs/verifier\nok=1\n[ "$(cat /app/out.txt)" = done ] || ok=0\n'
            "(( EPOCHSECONDS < 1767225600 )) || ok=0\necho $ok > /logs/verifier/reward.txt\n",
            5,
        ),
        (  # a Python heredoc of test.sh
            "#!/bin/bash\nmkdir -p /logs/verifier\npython3 - <<'PY'\nimport time, sys\n"
            "sys.exit(time.time() > 1767225600 or open('/app/out.txt').read() != 'done\\n')\nPY\n"
            "if [ $? -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
            5,
        ),
    ],
)
def test_shell_verifier_comparing_the_time_now(tmp_path: Path, test_sh: str, line: int) -> None:
    assert verifier_warnings(write_task(tmp_path, test_sh=test_sh)) == [("wall_clock", "tests/test.sh", line)]


@pytest.mark.parametrize(
    "test_sh, files",
    [
        (  # a performance bound: the elapsed time of the agent's program
            RUN_CHECK,
            {
                "tests/check.py": "import subprocess, sys, time\nstart = time.time()\n"
                "out = subprocess.run(['python3', '/app/fast.py'], capture_output=True, text=True).stdout\n"
                "elapsed = time.time() - start\nprint(f'took {elapsed:.1f}s at {time.time()}')\n"
                "sys.exit(elapsed > 5 or out != open('/app/in.txt').read())\n"
            },
        ),
        (  # a timeout loop waiting for the agent's service
            RUN_CHECK,
            {
                "tests/check.py": "import os, sys, time\ndeadline = time.time() + 10\n"
                "while time.time() < deadline and not os.path.exists('/app/ready'):\n    time.sleep(0.2)\n"
                + SAME_FILES.split("\n", 1)[1]
            },
        ),
        (  # the time given to the agent's program as its input, and the expected value derived from it
            RUN_CHECK,
            {
                "tests/check.py": "import subprocess, sys, time\nfrom datetime import datetime\nts = int(time.time())\n"
                "want = datetime.fromtimestamp(ts).strftime('%Y-%m-%d')\n"
                "out = subprocess.run(['python3', '/app/day.py', str(ts)], capture_output=True, text=True)\n"
                "sys.exit(out.stdout.strip() != want)\n"
            },
        ),
        (  # shell: the time logged, a runtime bound, and a fixed date parsed with date -d
            '#!/bin/bash\nmkdir -p /logs/verifier\necho "started $(date)"\nstart=$(date +%s)\n'
            'got=$(cat /app/out.txt)\nelapsed=$(( $(date +%s) - start ))\n[ "$elapsed" -lt 60 ] || echo slow\n'
            'if [ "$got" = "$(date -d 2024-01-01 +%F)" ] && [ $SECONDS -lt 100 ]; then echo 1; else echo 0; fi'
            " > /logs/verifier/reward.txt\n",
            {},
        ),
    ],
)
def test_time_for_durations_timeouts_and_logs_is_not_flagged(
    tmp_path: Path, test_sh: str, files: dict[str, str]
) -> None:
    assert lint(write_task(tmp_path, test_sh=test_sh, files=files)) == []


@pytest.mark.parametrize(
    "test_sh, files, where",
    [
        (
            RUN_PYTEST,
            {
                "tests/test_outputs.py": "import os\nfrom pathlib import Path\n\n\ndef test_report():\n"
                "    assert Path('/app/report.json').exists()\n\n\ndef test_csv():\n"
                "    assert os.path.isfile('/app/out.csv')\n"
            },
            ("tests/test_outputs.py", 6),
        ),
        (
            "#!/bin/bash\nmkdir -p /logs/verifier\n# the report and the table\n"
            "if [ -f /app/report.json ] && [ -s /app/out.csv ]; then\n  echo 1 > /logs/verifier/reward.txt\n"
            "else\n  echo 0 > /logs/verifier/reward.txt\nfi\n",
            {},
            ("tests/test.sh", 4),
        ),
    ],
)
def test_verifier_checking_only_that_files_exist(
    tmp_path: Path, test_sh: str, files: dict[str, str], where: tuple[str, int]
) -> None:
    assert verifier_warnings(write_task(tmp_path, test_sh=test_sh, files=files)) == [("names_only", *where)]


@pytest.mark.parametrize(
    "test_sh, files",
    [
        (  # an existence check, then the content (the stock task of the factory)
            '#!/bin/bash\nmkdir -p /logs/verifier\nif [ -f /app/out.txt ] && [ "$(cat /app/out.txt)" = done ]; '
            "then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
            {},
        ),
        (
            RUN_PYTEST,
            {
                "tests/test_outputs.py": "from pathlib import Path\n\n\ndef test_out():\n"
                "    assert Path('/app/out.txt').is_file()\n\n\ndef test_content():\n"
                "    assert Path('/app/out.txt').read_text().strip() == 'done'\n"
            },
        ),
        (  # the agent's program runs
            "#!/bin/bash\nmkdir -p /logs/verifier\n"
            "if [ -x /app/run.sh ] && /app/run.sh && [ -f /app/out.txt ]; then echo 1; else echo 0; fi"
            " > /logs/verifier/reward.txt\n",
            {},
        ),
    ],
)
def test_existence_checks_with_content_or_a_run_are_not_names_only(
    tmp_path: Path, test_sh: str, files: dict[str, str]
) -> None:
    assert lint(write_task(tmp_path, test_sh=test_sh, files=files)) == []


@pytest.mark.parametrize(
    "test_sh, files, where",
    [
        (
            "#!/bin/bash\nmkdir -p /logs/verifier\nout=$(python3 /app/count.py /app/data.txt)\n"
            'if [ "$out" = "42" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
            {},
            ("tests/test.sh", 4),
        ),
        (
            "#!/bin/bash\nmkdir -p /logs/verifier\n"
            "if python3 /app/count.py /app/data.txt | grep -q '^42$'; then echo 1; else echo 0; fi"
            " > /logs/verifier/reward.txt\n",
            {},
            ("tests/test.sh", 3),
        ),
        (
            RUN_PYTEST,
            {
                "tests/test_outputs.py": "import subprocess\nimport sys\n\n\ndef count(path):\n"
                "    command = [sys.executable, '/app/count.py', path]\n"
                "    return subprocess.run(command, capture_output=True, text=True)\n\n\n"
                "def test_count():\n    proc = count('/app/data.txt')\n    assert proc.returncode == 0\n"
                "    assert proc.stdout.strip() == '42'\n"
            },
            ("tests/test_outputs.py", 13),
        ),
    ],
)
def test_program_output_checked_against_a_literal_only(
    tmp_path: Path, test_sh: str, files: dict[str, str], where: tuple[str, int]
) -> None:
    task = write_task(tmp_path, instruction=COUNT_TASK, test_sh=test_sh, files=files)
    assert verifier_warnings(task) == [("literal_only", *where)]
    finding = next(f for f in lint(task) if f.evidence.get("check") == "literal_only")
    assert finding.evidence["literals"] == ["'42'"]
    assert "an agent that prints them passes without doing the task" in finding.message


@pytest.mark.parametrize(
    "instruction, test_sh, files",
    [
        (  # a file the agent writes, with one fixed answer: the answer itself, not a shortcut
            "Write the total of /app/sales.csv to /app/answer.txt.\n",
            RUN_CHECK,
            {
                "tests/check.py": "import sys\nfrom pathlib import Path\n\nEXPECTED = '3382.91'\n"
                "sys.exit(Path('/app/answer.txt').read_text().strip() != EXPECTED)\n"
            },
        ),
        (  # the expected value derived from the input
            COUNT_TASK,
            RUN_CHECK,
            {
                "tests/check.py": "import subprocess, sys\nexpected = str(len(open('/app/data.txt').readlines()))\n"
                "out = subprocess.run(['python3', '/app/count.py', '/app/data.txt'], capture_output=True, text=True)\n"
                "sys.exit(out.stdout.strip() != expected)\n"
            },
        ),
        (  # more than three cases
            COUNT_TASK,
            '#!/bin/bash\nmkdir -p /logs/verifier\nok=1\nfor n in 1 7 12 40; do\n  seq "$n" > /tmp/in.txt\n'
            '  [ "$(python3 /app/count.py /tmp/in.txt)" = "$n" ] || ok=0\ndone\n'
            '[ "$(python3 /app/count.py /app/a.txt)" = 3 ] || ok=0\n'
            '[ "$(python3 /app/count.py /app/b.txt)" = 5 ] || ok=0\n'
            '[ "$(python3 /app/count.py /app/c.txt)" = 8 ] || ok=0\n'
            '[ "$(python3 /app/count.py /app/d.txt)" = 13 ] || ok=0\n'
            "echo $ok > /logs/verifier/reward.txt\n",
            {},
        ),
        (  # the instruction asks for that very text
            "Write /app/hello.py, which prints `Hello, world!`.\n",
            '#!/bin/bash\nmkdir -p /logs/verifier\nif [ "$(python3 /app/hello.py)" = "Hello, world!" ]; '
            "then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
            {},
        ),
        (  # cases in a table: the expected value comes from a loop
            "Write /app/pal.py, which says whether its argument is a palindrome.\n",
            RUN_CHECK,
            {
                "tests/check.py": "import subprocess, sys\nCASES = {'abba': 'yes', 'abc': 'no'}\n"
                "for text, want in CASES.items():\n"
                "    out = subprocess.run(['python3', '/app/pal.py', text], capture_output=True, text=True).stdout\n"
                "    if out.strip() != want:\n        sys.exit(1)\n"
            },
        ),
    ],
)
def test_literals_next_to_inputs_computation_or_the_instruction_are_not_flagged(
    tmp_path: Path, instruction: str, test_sh: str, files: dict[str, str]
) -> None:
    assert lint(write_task(tmp_path, instruction=instruction, test_sh=test_sh, files=files)) == []


@pytest.mark.parametrize(
    "test_sh, where",
    [
        (STRICT_TEST, ("tests/test.sh", 4)),
        (
            "#!/bin/bash -e\nmkdir -p /logs/verifier\ndiff /app/out.txt /app/in.txt\n"
            "echo 1 > /logs/verifier/reward.txt\n",
            ("tests/test.sh", 3),
        ),
        (  # a check in the body of an if runs under set -e too
            "#!/bin/bash\nset -o errexit\nif [ -f /app/out.txt ]; then\n  python3 /tests/check.py\n"
            "  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n",
            ("tests/test.sh", 4),
        ),
        (  # an assignment fails with its command substitution
            "#!/bin/bash\nset -e\nmkdir -p /logs/verifier\nout=$(python3 /app/main.py)\n"
            'if [ "$out" = "$(cat /app/in.txt)" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
            ("tests/test.sh", 4),
        ),
        (  # the reward written by a function called after the check
            '#!/bin/bash\nset -e\nreward() {\n  echo "$1" > /logs/verifier/reward.txt\n}\n'
            "pip install -q pytest\npython3 /tests/check.py\nreward 1\n",
            ("tests/test.sh", 7),
        ),
    ],
)
def test_check_under_set_e_before_the_reward(tmp_path: Path, test_sh: str, where: tuple[str, int]) -> None:
    task = write_task(tmp_path, test_sh=test_sh, files={"tests/check.py": SAME_FILES})
    assert verifier_warnings(task) == [("set_e_before_reward", *where)]
    finding = only(lint(task), FindingCode.LINT)
    assert "if CHECKS; then echo 1; else echo 0; fi > /logs/verifier/reward.txt" in finding.message
    assert verdict_for(lint(task)) is Verdict.ACCEPTED  # advice only


@pytest.mark.parametrize(
    "test_sh",
    [
        STRICT_TEST.replace("mkdir", "trap 'echo 0 > /logs/verifier/reward.txt' ERR\nmkdir"),
        "#!/bin/bash\nset -e\nfinish() { [ -f /tmp/ok ] && echo 1 > /logs/verifier/reward.txt || "
        "echo 0 > /logs/verifier/reward.txt; }\ntrap finish EXIT\npython3 /tests/check.py\ntouch /tmp/ok\n",
        "#!/bin/bash\nset -e\nif python3 /tests/check.py; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
        STRICT_TEST.replace(
            "python3 /tests/check.py", "python3 /tests/check.py || { echo 0 > /logs/verifier/reward.txt; exit 0; }"
        ),
        STRICT_TEST.replace(
            "mkdir -p /logs/verifier\n", "mkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\n"
        ),
        "#!/bin/bash\nset -euo pipefail\npython3 -m pip install -q pytest\nuvx --version\nmkdir -p /logs/verifier\n"
        "set +e\npython3 /tests/check.py\nstatus=$?\nset -e\n"
        'if [ "$status" -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
    ],
)
def test_set_e_with_a_guarded_reward_is_not_flagged(tmp_path: Path, test_sh: str) -> None:
    assert lint(write_task(tmp_path, test_sh=test_sh, files={"tests/check.py": SAME_FILES})) == []


def test_verifier_checks_run_per_step(tmp_path: Path) -> None:
    task = write_task(tmp_path)
    (task / "task.toml").write_text(
        'schema_version = "1.4"\n[agent]\ntimeout_sec = 30.0\n[verifier]\ntimeout_sec = 30.0\n'
        '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n'
    )
    verifiers = {
        "one": {"tests/test.sh": WEAK_TEST},
        "two": {"tests/test.sh": STRICT_TEST, "tests/check.py": SAME_FILES},
    }
    for name, tests in verifiers.items():
        for rel, text in {
            "instruction.md": "Write `done` to /app/out.txt.\n",
            "solution/solve.sh": "echo done > /app/out.txt\n",
            **tests,
        }.items():
            (task / "steps" / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (task / "steps" / name / rel).write_text(text)
    (task / "tests" / "test.sh").unlink()
    assert sorted(verifier_warnings(task)) == [
        ("names_only", "steps/one/tests/test.sh", 3),
        ("set_e_before_reward", "steps/two/tests/test.sh", 4),
    ]


def test_bundled_verifier_that_stops_before_its_reward() -> None:
    findings = lint(TASKS_REPO / "reconcile-bank-statement")
    assert [(f.evidence["check"], f.evidence["file"], f.evidence["line"]) for f in findings] == [
        ("set_e_before_reward", "tests/test.sh", 5)
    ]


@pytest.mark.parametrize(
    "script, leaked",
    [
        ("#!/bin/bash\nset -e\ncd /app\npip install -r requirements.txt\n", False),
        ("apt-get update && apt-get install -y jq\npython3 -m pip install numpy==1.26\n", False),
        # the same installs, then the work: the reference solution itself is in the image
        ("#!/bin/bash\npip install -r requirements.txt\npython3 /app/merge.py > /app/out.csv\n", True),
    ],
)
def test_a_setup_step_shared_with_the_solution_is_no_leak(tmp_path: Path, script: str, leaked: bool) -> None:
    files = {"environment/bootstrap.sh": script, "solution/setup.sh": script, "environment/requirements.txt": "x\n"}
    dockerfile = "FROM python:3.11-slim\nWORKDIR /app\nCOPY bootstrap.sh requirements.txt /app/\n"
    findings = [f for f in lint(write_task(tmp_path, dockerfile=dockerfile, files=files)) if f.code is FindingCode.LEAK]
    assert bool(findings) is leaked, findings
    if leaked:
        assert findings[0].evidence["file"] == "environment/bootstrap.sh"
