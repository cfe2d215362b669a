"""The lint probe: static checks, no sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qaflow.audit.lint import LintConfig, lint_task
from qaflow.audit.similarity import heredocs, similarity
from qaflow.models.audit import AuditFinding
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


def test_same_bytes_under_an_answer_name_or_unnamed_are_a_leak(tmp_path: Path) -> None:
    data = "".join(f"IMG_{i:04d}.jpg,2024-05-{i:02d}\n" for i in range(1, 9))
    dockerfile = "FROM python:3.11-slim\nCOPY . /app/\n"
    instruction = "Rename the photos listed in `/app/expected_manifest.csv`.\n"
    files = {"environment/expected_manifest.csv": data, "tests/expected_manifest.csv": data}
    findings = lint(write_task(tmp_path, instruction=instruction, dockerfile=dockerfile, files=files))
    assert codes(findings) == [("leak", "error")]
    files = {"environment/fixtures.csv": data, "tests/fixtures.csv": data}
    assert codes(lint(write_task(tmp_path, "b", dockerfile=dockerfile, files=files))) == [("leak", "error")]


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
    finding = only(findings)
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
            assert findings == [], (folder.name, findings)
        elif "leak" not in codes:
            assert [f for f in findings if f.code.value == "leak"] == [], (folder.name, findings)
    assert len(controls) >= 5
