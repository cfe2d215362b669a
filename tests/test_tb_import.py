"""Terminal-Bench import: a TB task written here is converted, loads as a Harbor task, keeps its
metadata, and its generated test.sh rewards what TB's pytest parser rewards (not the exit status)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.errors import TaskError
from qaflow.importers.tb import (
    TB_DEFAULT_AGENT_TIMEOUT_SEC,
    TB_DEFAULT_TEST_TIMEOUT_SEC,
    ImportStatus,
    TbImportError,
    convert_task,
    import_tb,
)
from qaflow.pool import Pool
from qaflow.task import Task

runner = CliRunner()

TASK_YAML = """\
# a comment line, as TB tasks carry canary comments
instruction: |-
  Write the word count of /app/words.txt to /app/count.txt.
author_name: Rin
author_email: rin@example.net
difficulty: medium
category: text-processing
tags:
  - wc
  - files
parser_name: pytest
max_agent_timeout_sec: 240
max_test_timeout_sec: 45
run_tests_in_same_shell: false
disable_asciinema: false
estimated_duration_sec:
expert_time_estimate_min: 3
junior_time_estimate_min: 12
"""

COMPOSE = """\
services:
  client:
    build:
      dockerfile: Dockerfile
    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
    volumes:
      - ${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}
    environment:
      - TEST_DIR=${T_BENCH_TEST_DIR}
"""

SOLUTION_SH = "#!/bin/bash\nwc -w < /app/words.txt > /app/count.txt\n"
RUN_TESTS = '#!/bin/bash\npip install pytest >/dev/null 2>&1\npytest "$TEST_DIR/test_outputs.py" -rA\n'


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def tb_task(root: Path, **overrides: str | None) -> Path:
    files: dict[str, str | None] = {
        "task.yaml": TASK_YAML,
        "Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\nCOPY words.txt /app/words.txt\n",
        "words.txt": "a b c d\n",
        "docker-compose.yaml": COMPOSE,
        "solution.sh": SOLUTION_SH,
        "run-tests.sh": RUN_TESTS,
        "tests/test_outputs.py": "def test_count():\n    assert open('/app/count.txt').read().strip() == '4'\n",
    }
    files.update(overrides)
    return write(root, {k: v for k, v in files.items() if v is not None})


def test_convert_layout_and_metadata(tmp_path: Path) -> None:
    src = tb_task(tmp_path / "src" / "count-words")
    entry = convert_task(src, tmp_path / "out")
    dest = tmp_path / "out" / "count-words"
    assert entry.status is ImportStatus.CONVERTED and entry.dest == dest
    task = Task.load(dest)
    assert task.version == entry.version
    assert task.name == "terminal-bench/count-words"
    assert task.instruction == "Write the word count of /app/words.txt to /app/count.txt.\n"
    assert task.agent_timeout_sec == 240 and task.verifier_timeout_sec == 45

    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert files == [
        "environment/Dockerfile",
        "environment/words.txt",
        "instruction.md",
        "solution/solve.sh",
        "task.toml",
        "tests/run-tests.sh",
        "tests/test.sh",
        "tests/test_outputs.py",
    ]
    assert (dest / "solution" / "solve.sh").read_text() == SOLUTION_SH
    assert (dest / "tests" / "run-tests.sh").read_text() == RUN_TESTS
    for script in ("solution/solve.sh", "tests/test.sh", "tests/run-tests.sh"):
        assert os.access(dest / script, os.X_OK), script

    raw = tomllib.loads((dest / "task.toml").read_text())
    assert raw["schema_version"] == "1.4"
    assert raw["task"]["authors"] == [{"name": "Rin", "email": "rin@example.net"}]
    meta = raw["metadata"]
    assert meta["source"] == "terminal-bench" and meta["source_id"] == "count-words"
    assert (meta["difficulty"], meta["category"], meta["tags"]) == ("medium", "text-processing", ["wc", "files"])
    assert (meta["author_name"], meta["author_email"]) == ("Rin", "rin@example.net")
    assert meta["terminal_bench"] == {
        "parser_name": "pytest",
        "run_tests_in_same_shell": False,
        "disable_asciinema": False,
        "expert_time_estimate_min": 3,
        "junior_time_estimate_min": 12,
        "compose_services": ["client"],
    }
    assert "estimated_duration_sec" not in meta["terminal_bench"]  # YAML null: TOML has none
    assert entry.warnings == []  # the compose file is TB's template: nothing to report


def run_test_sh(dest: Path, tmp_path: Path, run_tests: str, tests: dict[str, str] | None = None) -> tuple[int, str]:
    """Run the generated test.sh with /tests and /logs mapped to temporary folders."""
    tests_dir, logs = tmp_path / "sandbox-tests", tmp_path / "sandbox-logs"
    tests_dir.mkdir(parents=True)
    for name, text in (tests or {}).items():
        (tests_dir / name).write_text(text)
    (logs / "verifier").mkdir(parents=True)
    (logs / "verifier" / "reward.json").write_text('{"forged": 1}')
    (tests_dir / "run-tests.sh").write_text(run_tests)
    script = (dest / "tests" / "test.sh").read_text().replace("/tests", str(tests_dir)).replace("/logs", str(logs))
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert not (logs / "verifier" / "reward.json").exists()
    return proc.returncode, (logs / "verifier" / "reward.txt").read_text()


SUMMARY = "=========================== short test summary info ============================\n"


@pytest.mark.parametrize(
    ("output", "exit_code", "reward"),
    [
        (SUMMARY + "PASSED tests/test_outputs.py::test_count\n", 0, "1\n"),
        # TB reads the parser, not the exit status: all passed is resolved whatever run-tests.sh exits with
        (SUMMARY + "PASSED t.py::a\nSKIPPED [1] t.py:3: no display\nXFAIL t.py::c\n", 1, "1\n"),
        (SUMMARY + "PASSED t.py::a\nFAILED t.py::b - assert 1 == 2\n", 1, "0\n"),
        (SUMMARY + "PASSED t.py::a\nERROR t.py::b - ImportError\n", 1, "0\n"),
        (SUMMARY + "XPASS t.py::a\nPASSED t.py::b\n", 0, "0\n"),
        # no summary: pytest never reported (an exit at import, a crash), whatever the status
        ("collected 1 item\n", 0, "0\n"),
        ("", 0, "0\n"),
        # a summary that lists no test that ran
        (SUMMARY + "SKIPPED [1] t.py:3: no display\n", 0, "0\n"),
        (SUMMARY, 0, "0\n"),
    ],
)
def test_generated_test_sh_rewards_what_tbs_pytest_parser_rewards(
    tmp_path: Path, output: str, exit_code: int, reward: str
) -> None:
    dest = Path(convert_task(tb_task(tmp_path / "src" / "t"), tmp_path / "out").dest or "")
    # run-tests.sh sees TEST_DIR pointing at the uploaded tests, as under TB
    probe = (
        f'#!/bin/bash\n[ -f "$TEST_DIR/run-tests.sh" ] || exit 9\nprintf %s {shlex.quote(output)}\nexit {exit_code}\n'
    )
    code, written = run_test_sh(dest, tmp_path, probe)
    assert (code, written) == (exit_code, reward)


def test_an_exit_at_import_gets_no_reward(tmp_path: Path) -> None:
    """The evoeval case: the tests import the agent's solution.py, which ends the process at import
    with status 0 before pytest reports anything; TB's parser finds no summary, and so does test.sh."""
    tests = "from solution import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    src = tb_task(tmp_path / "src" / "t", **{"tests/test_outputs.py": tests})
    dest = Path(convert_task(src, tmp_path / "out").dest or "")
    work = tmp_path / "work"
    work.mkdir()
    run_tests = (
        f'#!/bin/bash\ncd {work} && {sys.executable} -m pytest -p no:cacheprovider "$TEST_DIR/test_outputs.py" -rA\n'
    )
    cases = {
        "exit-at-import": ("import os\nos._exit(0)\n", "0\n"),
        "real": ("def add(a, b):\n    return a + b\n", "1\n"),
    }
    for case, (solution, reward) in cases.items():
        (work / "solution.py").write_text(solution)
        code, written = run_test_sh(dest, tmp_path / case, run_tests, tests={"test_outputs.py": tests})
        assert written == reward, (case, code)
        if case == "exit-at-import":
            assert code == 0  # the exit status alone would have paid it


def test_a_non_pytest_parser_keeps_the_exit_status(tmp_path: Path) -> None:
    yaml_text = TASK_YAML.replace("parser_name: pytest", "parser_name: swebench")
    assert yaml_text != TASK_YAML
    dest = Path(convert_task(tb_task(tmp_path / "src" / "t", **{"task.yaml": yaml_text}), tmp_path / "out").dest or "")
    assert run_test_sh(dest, tmp_path, "#!/bin/bash\nexit 0\n") == (0, "1\n")


def test_default_timeouts_and_minimal_yaml(tmp_path: Path) -> None:
    src = tb_task(tmp_path / "src" / "bare", **{"task.yaml": "instruction: Do it.\n", "docker-compose.yaml": None})
    task = Task.load(convert_task(src, tmp_path / "out").dest or "")
    assert task.agent_timeout_sec == TB_DEFAULT_AGENT_TIMEOUT_SEC
    assert task.verifier_timeout_sec == TB_DEFAULT_TEST_TIMEOUT_SEC
    assert task.config.metadata == {"source": "terminal-bench", "source_id": "bare", "tags": []}


def test_legacy_descriptions_form(tmp_path: Path) -> None:
    yaml_text = "descriptions:\n  - key: base\n    description: Old style prompt.\n  - key: hard\n    description: x\n"
    src = tb_task(tmp_path / "src" / "old", **{"task.yaml": yaml_text})
    assert Task.load(convert_task(src, tmp_path / "out").dest or "").instruction == "Old style prompt.\n"


def test_solution_yaml_becomes_solve_sh(tmp_path: Path) -> None:
    solution = (
        "- command: cd /app\n"
        "- command: wc -w < words.txt > count.txt\n"
        "  min_timeout_sec: 0.5\n"
        "  block: true\n"
        "- echo done\n"
    )
    src = tb_task(tmp_path / "src" / "y", **{"solution.sh": None, "solution.yaml": solution})
    entry = convert_task(src, tmp_path / "out")
    solve = (tmp_path / "out" / "y" / "solution" / "solve.sh").read_text()
    assert solve.startswith("#!/bin/bash\n")
    assert solve.endswith("cd /app\nwc -w < words.txt > count.txt\nsleep 0.5\necho done\n")
    assert any("solution.yaml" in w for w in entry.warnings)


def test_solution_yaml_with_keystrokes_is_refused(tmp_path: Path) -> None:
    solution = "- command: vim notes.txt\n- command: ihello\n  append_enter: false\n"
    src = tb_task(tmp_path / "src" / "vim", **{"solution.sh": None, "solution.yaml": solution})
    with pytest.raises(TaskError) as info:
        convert_task(src, tmp_path / "out")
    assert info.value.path == src / "solution.yaml"
    assert "entry 2 sends keystrokes without Enter" in info.value.reason
    assert not (tmp_path / "out").exists()


BAD_TB: list[tuple[str, dict[str, str | None], str, str]] = [
    ("missing task.yaml", {"task.yaml": None}, "task.yaml", "missing task.yaml"),
    ("bad yaml", {"task.yaml": "instruction: [unclosed\ntags: x\n"}, "task.yaml", "malformed YAML at line"),
    ("not a mapping", {"task.yaml": "- just\n- a list\n"}, "task.yaml", "expected a mapping of fields, got list"),
    ("missing instruction", {"task.yaml": "difficulty: easy\n"}, "task.yaml", "missing instruction"),
    ("empty instruction", {"task.yaml": "instruction: ''\n"}, "task.yaml", "missing instruction"),
    ("bad field", {"task.yaml": "instruction: x\ntags: 5\n"}, "task.yaml", "invalid field 'tags'"),
    ("no solution", {"solution.sh": None}, "solution.sh", "missing solution.sh (or solution.yaml)"),
    ("no run-tests", {"run-tests.sh": None}, "run-tests.sh", "missing run-tests.sh"),
    ("no Dockerfile", {"Dockerfile": None}, "Dockerfile", "missing Dockerfile"),
    ("test.sh clash", {"tests/test.sh": "echo\n"}, "tests/test.sh", "would be overwritten"),
]


@pytest.mark.parametrize(("case", "overrides", "rel", "reason"), BAD_TB, ids=[c[0] for c in BAD_TB])
def test_bad_tb_input(tmp_path: Path, case: str, overrides: dict[str, str | None], rel: str, reason: str) -> None:
    src = tb_task(tmp_path / "src" / "bad", **overrides)
    with pytest.raises(TaskError) as info:
        convert_task(src, tmp_path / "out")
    assert info.value.path == src / rel, case
    assert reason in info.value.reason, (case, info.value.reason)
    out = tmp_path / "out"
    assert not out.exists() or list(out.iterdir()) == []  # nothing written, no staging folder left


def test_converted_task_that_does_not_load_names_the_file(tmp_path: Path) -> None:
    src = tb_task(tmp_path / "src" / "linky")
    (src / "secrets").symlink_to("/etc/hostname")
    with pytest.raises(TaskError) as info:
        convert_task(src, tmp_path / "out")
    assert info.value.path == tmp_path / "out" / "linky" / "environment" / "secrets"
    assert "the converted task does not load: symlink points outside the task folder" in info.value.reason
    assert list((tmp_path / "out").iterdir()) == []


def test_source_given_as_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tb_task(tmp_path / "src" / "here")
    monkeypatch.chdir(src)
    report = import_tb(".", tmp_path / "out")
    assert report.entries[0].dest == tmp_path / "out" / "here"


def test_folder_of_tasks_converts_the_rest(tmp_path: Path) -> None:
    src = tmp_path / "tb"
    tb_task(src / "good-one")
    tb_task(src / "nested" / "good-two")
    tb_task(src / "broken", **{"task.yaml": "instruction: [\n"})
    tb_task(src / "no-yaml", **{"task.yaml": None})
    (src / "docs").mkdir()
    report = import_tb(src, tmp_path / "out")
    by_name = {e.source.name: e for e in report.entries}
    assert sorted(by_name) == ["broken", "good-one", "good-two", "no-yaml"]
    assert report.summary() == "4 tasks: 2 converted, 0 unchanged, 2 failed"
    assert (
        by_name["no-yaml"].error == f"{src / 'no-yaml' / 'task.yaml'}: missing task.yaml (not a Terminal-Bench task?)"
    )
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["good-one", "good-two"]

    with Pool.open(tmp_path / "out") as pool:
        scanned = pool.scan()
        assert scanned.ok == 2 and scanned.invalid == 0
        assert {t.source for t in pool.list()} == {"terminal-bench"}


def test_reimport_is_idempotent_and_force_replaces(tmp_path: Path) -> None:
    src = tb_task(tmp_path / "src" / "t")
    out = tmp_path / "out"
    first = convert_task(src, out)
    assert convert_task(src, out).status is ImportStatus.UNCHANGED
    (src / "words.txt").write_text("a b\n")
    with pytest.raises(TaskError) as info:
        convert_task(src, out)
    assert info.value.path == out / "t" and "--force" in info.value.reason
    replaced = convert_task(src, out, force=True)
    assert replaced.status is ImportStatus.CONVERTED and replaced.version != first.version
    assert (out / "t" / "environment" / "words.txt").read_text() == "a b\n"


def test_warnings_for_leaks_sidecars_and_parsers(tmp_path: Path) -> None:
    compose = "services:\n  client:\n    build: .\n    environment:\n      - API=http://db\n  db:\n    image: pg\n"
    src = tb_task(
        tmp_path / "src" / "leaky",
        **{
            "Dockerfile": "FROM python:3.11-slim\nCOPY tests/ /app/tests/\nCOPY solution.sh /s.sh\n",
            "docker-compose.yaml": compose,
            "task.yaml": TASK_YAML.replace("parser_name: pytest", "parser_name: swebench"),
        },
    )
    warnings = "\n".join(convert_task(src, tmp_path / "out").warnings)
    assert "copies 'tests/' into the image" in warnings
    assert "copies 'solution.sh' into the image" in warnings
    assert "sidecar services ['db']" in warnings
    assert "sets `environment` on the main service" in warnings
    assert "parser_name is 'swebench'" in warnings


def test_duplicate_ids_in_one_import(tmp_path: Path) -> None:
    tb_task(tmp_path / "tb" / "a" / "same")
    tb_task(tmp_path / "tb" / "b" / "same")
    report = import_tb(tmp_path / "tb", tmp_path / "out")
    assert [e.status for e in report.entries] == [ImportStatus.CONVERTED, ImportStatus.FAILED]
    assert "also used by" in (report.entries[1].error or "")


def test_nothing_to_import(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(TbImportError, match="no Terminal-Bench task"):
        import_tb(tmp_path / "empty", tmp_path / "out")
    with pytest.raises(TbImportError, match="not a folder"):
        import_tb(tmp_path / "missing", tmp_path / "out")


def test_cli_import(tmp_path: Path) -> None:
    src = tmp_path / "tb"
    tb_task(src / "good")
    tb_task(src / "bad", **{"task.yaml": "difficulty: easy\n"})
    out = runner.invoke(app, ["import", "tb", str(src), str(tmp_path / "out"), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert (data["converted"], data["failed"]) == (1, 1)
    failed = next(e for e in data["entries"] if e["status"] == "failed")
    assert failed["error"].endswith("task.yaml: missing instruction (the task's prompt)")

    human = runner.invoke(app, ["import", "tb", str(src), str(tmp_path / "out")])
    assert human.exit_code == 0
    assert "2 tasks: 0 converted, 1 unchanged, 1 failed" in human.output

    assert runner.invoke(app, ["import", "tb", str(tmp_path / "missing"), str(tmp_path / "out")]).exit_code == 2
    helped = runner.invoke(app, ["import", "tb", "--help"])
    assert helped.exit_code == 0 and "Example: qaflow import tb" in helped.output
