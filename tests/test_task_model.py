"""The task model: task.toml variants, unknown-key round trips, the version hash, and bad inputs.

Every task.toml here is written for these tests (not copied from Harbor)."""

from __future__ import annotations

import os
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from qaflow.errors import TaskError
from qaflow.task import NetworkMode, Task, TaskConfig, VerifierEnvironmentMode, tree_hash

SCHEMA_14 = """\
schema_version = "1.4"

[task]
name = "acme/count-words"
version = "0.2.0"
description = "Count the words of a file."
keywords = ["text", "wc"]
authors = [{ name = "Ada", email = "ada@example.org" }]

[metadata]
difficulty = "easy"
category = "text"

[verifier]
timeout_sec = 45.0

[agent]
timeout_sec = 90.0

[environment]
build_timeout_sec = 120.0
cpus = 2
memory_mb = 1024
storage_mb = 4096
network_mode = "no-network"
"""

OLD_SCHEMA = """\
version = "1.0"

[metadata]
author_name = "Bo"

[agent]
timeout_sec = 30.0

[environment]
memory = "2G"
storage = "10G"
allow_internet = true
"""

MULTI_STEP = """\
schema_version = "1.4"

[task]
name = "acme/two-steps"

[[steps]]
name = "make"

[steps.agent]
timeout_sec = 20.0

[[steps]]
name = "extend"
min_reward = 0.5
"""

SEPARATE = """\
schema_version = "1.4"

[task]
name = "acme/separate"

[verifier]
environment_mode = "separate"
"""

UNKNOWN_EVERYWHERE = """\
schema_version = "1.4"
future_top = "kept"
artifacts = [{ source = "/var/log/app.log", service = "api" }]

[task]
name = "acme/unknowns"
shiny = true

[metadata]
difficulty = "hard"

[metadata.nested]
deep = { deeper = [1, 2, 3] }

[verifier]
timeout_sec = 10.0
grader = "strict"

[[verifier.collect]]
service = "api"
command = "cat /tmp/stats"

[agent]
timeout_sec = 11.0
persona = "careful"

[environment]
cpus = 1
accelerator = { kind = "none" }

[environment.healthcheck]
command = "true"
interval_sec = 2

[solution]
env = { MODE = "fast" }
notes = "kept too"

[[steps]]
name = "one"
extra_step_key = 7

[steps.agent]
timeout_sec = 5.0
step_agent_extra = "x"

[steps.verifier]
step_verifier_extra = "y"

[custom_table]
anything = "goes"
"""


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def single_task(root: Path, toml: str = SCHEMA_14, **extra: str | bytes) -> Path:
    files: dict[str, str | bytes] = {
        "task.toml": toml,
        "instruction.md": "Count the words in /app/in.txt and write the number to /app/out.txt.\n",
        "environment/Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\nCOPY in.txt /app/in.txt\n",
        "environment/in.txt": "one two three\n",
        "tests/test.sh": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
        "solution/solve.sh": "#!/bin/bash\nwc -w < /app/in.txt > /app/out.txt\n",
    }
    files.update(extra)
    return write(root, files)


# -- variants ---------------------------------------------------------------------------------


def test_schema_14_with_task_table(tmp_path: Path) -> None:
    task = Task.load(single_task(tmp_path / "count-words"))
    assert task.name == "acme/count-words"
    assert task.config.schema_version == "1.4"
    assert task.config.task is not None
    assert task.config.task.authors[0].email == "ada@example.org"
    assert task.config.environment.network_mode is NetworkMode.NO_NETWORK
    assert task.config.environment.memory_mb == 1024
    assert task.agent_timeout_sec == 90.0
    assert task.verifier_timeout_sec == 45.0
    assert task.instruction.startswith("Count the words")
    assert task.has_solution
    assert task.verifier_mode is VerifierEnvironmentMode.SHARED
    assert not task.config.agent_network()
    assert len(task.version) == 64
    assert task.env_hash == tree_hash(tmp_path / "count-words" / "environment")


def test_old_schema_without_task_table(tmp_path: Path) -> None:
    task = Task.load(single_task(tmp_path / "legacy-task", OLD_SCHEMA))
    assert task.config.task is None
    assert task.name == "legacy-task"
    assert task.config.schema_version == "1.0"
    env = task.config.environment
    assert env.memory_mb == 2048
    assert env.storage_mb == 10240
    assert env.network_mode is NetworkMode.PUBLIC
    assert task.config.agent_network()
    assert task.verifier_timeout_sec == 600.0
    assert task.config.metadata == {"author_name": "Bo"}


def test_old_schema_allow_internet_false_means_no_network() -> None:
    config = TaskConfig.from_toml('[environment]\nallow_internet = false\nmemory = "512M"\n')
    assert config.environment.network_mode is NetworkMode.NO_NETWORK
    assert config.environment.memory_mb == 512


def multi_step_files() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "task.toml": MULTI_STEP,
        "environment/Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\n",
    }
    for step in ("make", "extend"):
        files[f"steps/{step}/instruction.md"] = f"Step {step}.\n"
        files[f"steps/{step}/tests/test.sh"] = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"
        files[f"steps/{step}/solution/solve.sh"] = f"#!/bin/bash\necho {step}\n"
    return files


def test_multi_step_task(tmp_path: Path) -> None:
    task = Task.load(write(tmp_path / "two-steps", multi_step_files()))
    assert task.config.steps is not None
    assert [s.name for s in task.config.steps] == ["make", "extend"]
    assert task.config.steps[0].agent.timeout_sec == 20.0
    assert task.config.steps[1].min_reward == 0.5
    assert task.instruction == "Step make.\n\n\nStep extend.\n"


def test_multi_step_root_instruction_does_not_replace_a_missing_step_instruction(tmp_path: Path) -> None:
    files = multi_step_files()
    del files["steps/extend/instruction.md"]
    files["instruction.md"] = "A root instruction is not used by multi-step tasks.\n"
    root = write(tmp_path / "two-steps", files)
    with pytest.raises(TaskError) as info:
        Task.load(root)
    assert info.value.path == root / "steps" / "extend" / "instruction.md"
    assert "missing instruction for step 'extend'" in info.value.reason


def test_multi_step_missing_step_solution(tmp_path: Path) -> None:
    files = multi_step_files()
    del files["steps/make/solution/solve.sh"]
    root = write(tmp_path / "two-steps", files)
    with pytest.raises(TaskError) as info:
        Task.load(root)
    assert info.value.path == root / "steps" / "make" / "solution" / "solve.sh"
    assert "missing solution for step 'make'" in info.value.reason
    assert Task.load(root, require_solution=False).name == "acme/two-steps"


def test_separate_verifier_environment(tmp_path: Path) -> None:
    root = single_task(tmp_path / "sep", SEPARATE, **{"tests/Dockerfile": "FROM python:3.11-slim\n"})
    task = Task.load(root)
    assert task.config.verifier.environment_mode is VerifierEnvironmentMode.SEPARATE
    assert task.verifier_mode is VerifierEnvironmentMode.SEPARATE


def test_separate_mode_is_implied_by_tests_dockerfile(tmp_path: Path) -> None:
    root = single_task(tmp_path / "implicit", **{"tests/Dockerfile": "FROM python:3.11-slim\n"})
    assert Task.load(root).verifier_mode is VerifierEnvironmentMode.SEPARATE


def test_unknown_keys_survive_round_trip() -> None:
    config = TaskConfig.from_toml(UNKNOWN_EVERYWHERE)
    assert tomllib.loads(config.to_toml()) == tomllib.loads(UNKNOWN_EVERYWHERE)
    again = TaskConfig.from_toml(config.to_toml())
    assert again == config
    assert again.model_extra is not None and again.model_extra["future_top"] == "kept"
    assert again.steps is not None and again.steps[0].agent.model_extra == {"step_agent_extra": "x"}


@pytest.mark.parametrize("text", [SCHEMA_14, MULTI_STEP, SEPARATE])
def test_known_variants_round_trip_exactly(text: str) -> None:
    assert tomllib.loads(TaskConfig.from_toml(text).to_toml()) == tomllib.loads(text)


# -- version hash -----------------------------------------------------------------------------


def test_version_is_stable_across_loads_and_copies(tmp_path: Path) -> None:
    root = single_task(tmp_path / "a")
    first = Task.load(root)
    assert Task.load(root).version == first.version
    copy = tmp_path / "elsewhere" / "b"
    shutil.copytree(root, copy)
    assert Task.load(copy).version == first.version
    (root / ".qaflow").mkdir()
    (root / ".qaflow" / "side.json").write_text("{}")
    assert Task.load(root).version == first.version


@pytest.mark.parametrize(
    "rel", ["task.toml", "instruction.md", "environment/Dockerfile", "environment/in.txt", "tests/test.sh"]
)
def test_version_changes_when_any_byte_changes(tmp_path: Path, rel: str) -> None:
    root = single_task(tmp_path / "a")
    task = Task.load(root)
    original = (root / rel).read_bytes()
    seen = {task.version}
    for i in range(len(original)):
        changed = bytearray(original)
        changed[i] ^= 0x01
        (root / rel).write_bytes(bytes(changed))
        seen.add(tree_hash(root))
        assert (tree_hash(root / "environment") != task.env_hash) == rel.startswith("environment/")
    assert len(seen) == len(original) + 1  # every one-byte change gives its own version
    (root / rel).write_bytes(original)
    assert Task.load(root).version == task.version


def test_version_changes_on_a_loadable_edit(tmp_path: Path) -> None:
    root = single_task(tmp_path / "a")
    before = Task.load(root)
    (root / "solution" / "solve.sh").write_text("#!/bin/bash\nwc -w < /app/in.txt >/app/out.txt\n")
    after = Task.load(root)
    assert after.version != before.version
    assert after.env_hash == before.env_hash


def test_version_changes_on_rename_and_new_file(tmp_path: Path) -> None:
    root = single_task(tmp_path / "a")
    base = tree_hash(root)
    (root / "environment" / "in.txt").rename(root / "environment" / "in2.txt")
    renamed = tree_hash(root)
    (root / "environment" / "empty").write_bytes(b"")
    assert len({base, renamed, tree_hash(root)}) == 3


def test_version_framing_is_unambiguous(tmp_path: Path) -> None:
    """One file whose bytes look like a second entry must not hash like two files."""
    one = write(tmp_path / "one", {"a": b"x\0b\0y"})
    two = write(tmp_path / "two", {"a": b"x", "b": b"y"})
    assert tree_hash(one) != tree_hash(two)


# -- bad inputs: each names the file and the reason -------------------------------------------

Mutation = Callable[[Path], None]


def _put(rel: str, content: str | bytes) -> Mutation:
    def apply(root: Path) -> None:
        write(root, {rel: content})

    return apply


def _remove(rel: str) -> Mutation:
    def apply(root: Path) -> None:
        target = root / rel
        shutil.rmtree(target) if target.is_dir() else target.unlink()

    return apply


def _symlink_out(root: Path) -> None:
    (root / "environment" / "passwd").symlink_to("/etc/passwd")


def _symlink_dir_out(root: Path) -> None:
    (root / "tests" / "shared").symlink_to(root.parent, target_is_directory=True)


def _huge_file(root: Path) -> None:
    with (root / "environment" / "blob.bin").open("wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # sparse: fast, no disk used


def _fifo(root: Path) -> None:
    os.mkfifo(root / "environment" / "pipe")


BAD_CASES: list[tuple[str, Mutation, str, list[str]]] = [
    ("malformed toml", _put("task.toml", '[task\nname = "x"\n'), "task.toml", ["malformed TOML"]),
    (
        "invalid field type",
        _put("task.toml", SCHEMA_14.replace("timeout_sec = 90.0", 'timeout_sec = "soon"')),
        "task.toml",
        ["invalid field 'agent.timeout_sec'", "valid number"],
    ),
    (
        "bad legacy size",
        _put("task.toml", OLD_SCHEMA.replace('"2G"', '"lots"')),
        "task.toml",
        ["invalid field 'environment'", "invalid size 'lots'"],
    ),
    ("not utf-8 toml", _put("task.toml", b'name = "\xff"\n'), "task.toml", ["not UTF-8"]),
    ("missing task.toml", _remove("task.toml"), "task.toml", ["missing task.toml"]),
    ("missing instruction", _remove("instruction.md"), "instruction.md", ["missing instruction.md"]),
    ("missing tests", _remove("tests"), "tests/test.sh", ["missing verifier tests/test.sh"]),
    ("missing solution", _remove("solution"), "solution/solve.sh", ["missing reference solution"]),
    (
        "copy escapes context",
        _put("environment/Dockerfile", "FROM python:3.11-slim\nCOPY ../../etc/passwd /app/passwd\n"),
        "environment/Dockerfile",
        ["COPY source '../../etc/passwd'", "outside the build context environment/"],
    ),
    (
        "copy of the tests into the image escapes context",
        _put("environment/Dockerfile", "FROM python:3.11-slim\nADD --chown=1:1 ../tests /tests\n"),
        "environment/Dockerfile",
        ["ADD source '../tests'", "outside the build context environment/"],
    ),
    (
        "separate verifier Dockerfile escapes its context",
        _put("tests/Dockerfile", "FROM python:3.11-slim\nCOPY ../solution /solution\n"),
        "tests/Dockerfile",
        ["COPY source '../solution'", "outside the build context tests/"],
    ),
    (
        "unparsable COPY",
        _put("environment/Dockerfile", "FROM python:3.11-slim\nCOPY 'unclosed /app\n"),
        "environment/Dockerfile",
        ["unparsable COPY line", "No closing quotation"],
    ),
    ("symlink outside", _symlink_out, "environment/passwd", ["symlink points outside the task folder", "/etc/passwd"]),
    ("symlinked dir outside", _symlink_dir_out, "tests/shared", ["symlink points outside the task folder"]),
    (
        "non-utf-8 instruction",
        _put("instruction.md", b"Caf\xe9 au lait\n"),
        "instruction.md",
        ["not UTF-8", "at byte 3"],
    ),
    ("200 MB file", _huge_file, "environment/blob.bin", ["200 MiB", "over the 100 MiB limit"]),
    ("fifo", _fifo, "environment/pipe", ["not a regular file but a fifo"]),
]


@pytest.mark.parametrize(("case", "mutate", "rel", "reasons"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_task_raises_task_error_naming_file(
    tmp_path: Path, case: str, mutate: Mutation, rel: str, reasons: list[str]
) -> None:
    root = single_task(tmp_path / "bad")
    mutate(root)
    with pytest.raises(TaskError) as info:
        Task.load(root)
    assert info.value.path == root / rel, case
    for reason in reasons:
        assert reason in info.value.reason, (case, info.value.reason)
    assert str(info.value).startswith(str(root / rel))


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(TaskError) as info:
        Task.load(tmp_path / "nope")
    assert info.value.path == tmp_path / "nope"
    assert "no such directory" in info.value.reason


def test_symlink_inside_task_is_fine(tmp_path: Path) -> None:
    root = single_task(tmp_path / "ok")
    (root / "environment" / "alias.txt").symlink_to("in.txt")
    before = Task.load(root).version
    (root / "environment" / "alias.txt").unlink()
    (root / "environment" / "alias.txt").symlink_to("./in.txt")
    assert Task.load(root).version != before  # the link text is part of the version
