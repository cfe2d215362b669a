"""`--backend auto` task by task: bwrap only where the host stands for the image docker would run."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.sandbox import backend_class
from qaflow.sandbox.choice import choose_backend
from qaflow.sandbox.spec import RunNetwork, RuntimeNetwork, spec_for_task
from qaflow.sandbox.userland import TaskUses, Userland, host_only, host_userland, shell_commands, task_uses
from qaflow.task import Task
from tests.conftest import TASKS_REPO, require_backend
from tests.taskfactory import write_task

LABELS: dict[str, dict[str, object]] = json.loads((TASKS_REPO / "labels.json").read_text())

# -- what a task's files name (no sandbox) --------------------------------------------------------------------

PREFIXES = ["", "sudo ", "FOO=1 BAR=x ", "timeout 5 ", "env ", "nohup ", "/usr/bin/"]
JOINS = ["{c} --version", "true && {c} x", "false || {c} x", "echo a | {c} x", "x=$({c} rev-parse)",
         "if {c} x; then :; fi", "while ! {c} x; do :; done", "for f in a; do {c} $f; done", "( {c} x )",
         "RUN {c} clone repo", "out=`{c} x`"]  # fmt: skip


@pytest.mark.parametrize(("prefix", "join"), list(itertools.product(PREFIXES, JOINS)))
def test_a_program_in_command_position_is_found_however_it_is_written(prefix: str, join: str):
    text = join.format(c=prefix + "gitx")
    assert "gitx" in shell_commands(text), text


@pytest.mark.parametrize(
    "text",
    ["echo gitx", "# gitx clone", "cat gitx.txt", "printf '%s' gitx", "grep -q gitx file", "ls /opt/gitx-data"],
)
def test_a_word_in_argument_position_or_a_comment_is_not_a_program(text: str):
    assert "gitx" not in shell_commands(text)


def test_python_files_name_their_imports_and_the_programs_their_strings_run(tmp_path: Path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        "import numpyx.linalg\nfrom yamlx import safe_load\nfrom . import local\nimport subprocess\n"
        "subprocess.run(['gitx', 'log'])\nos.system('gccx -o a a.c && ./a')\n"
    )
    (tmp_path / "tests" / "run").write_text("#!/usr/bin/env python3\nimport requestsx\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.sh").write_text("curlx http://x\n")
    uses = task_uses([tmp_path])
    assert {"numpyx", "yamlx", "subprocess", "requestsx"} <= uses.imports and "local" not in uses.imports
    assert {"gitx", "gccx"} <= uses.commands and "curlx" not in uses.commands  # hidden folders are not the task's


def test_only_what_the_host_has_and_the_image_lacks_matters():
    host = Userland(programs=frozenset({"sh", "git", "gcc"}), modules=frozenset({"json", "numpy"}))
    image = Userland(programs=frozenset({"sh", "gcc"}), modules=frozenset({"json"}))
    uses = TaskUses(commands=frozenset({"sh", "git", "nosuch"}), imports=frozenset({"json", "numpy", "solution"}))
    assert host_only(uses, host, image) == ["git", "import numpy"]
    assert host_only(TaskUses(commands=frozenset({"gcc"}), imports=frozenset()), host, image) == []


# -- the choice, on real backends -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def both() -> None:
    require_backend("docker")
    require_backend("bwrap")


def _choice(task_dir: Path, name: str = "auto", network: RunNetwork | None = None):
    task = Task.load(task_dir)
    spec = spec_for_task(task, network=network or RunNetwork(offline=True, network=RuntimeNetwork.NONE))
    return choose_backend(task, spec, name)


def _host_only_program() -> str:
    """A program this host has on PATH that the offline base image lacks."""
    docker, bwrap = backend_class("docker")(), backend_class("bwrap")
    image = docker.userland(docker.from_target("python:3.11-slim"))
    host = host_userland(bwrap.host_python())
    assert image is not None and host is not None
    extra = sorted(host.programs - image.programs)
    preferred = [p for p in ("git", "gcc", "curl", "make", "sqlite3") if p in extra]
    return (preferred or extra)[0]


@pytest.mark.docker
@pytest.mark.bwrap
def test_auto_takes_bwrap_only_where_the_host_stands_for_the_image(both: None, tmp_path: Path):
    program = _host_only_program()
    plain = write_task(tmp_path, "plain")
    assert _choice(plain).backend == "bwrap"
    cases = {
        "uses-host-program": (
            {"test_sh": f"#!/bin/bash\n{program} --version >/dev/null && echo 1 > /logs/verifier/reward.txt\n"},
            program,
        ),
        "apt": ({"dockerfile": "FROM python:3.11-slim\nRUN apt-get install -y jq\n"}, "system packages"),
        "untar": ({"solve_sh": "#!/bin/bash\ncd /app && tar xzf /solution/payload.tgz\n"}, "maps only root"),
        "chown": ({"solve_sh": "#!/bin/bash\nchown -R 1000:1000 /app\n"}, "maps only root"),
        "other-python": ({"dockerfile": "FROM python:3.13-slim\nWORKDIR /app\n"}, "Python 3.13"),
        "other-distro": ({"dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\n"}, "ubuntu"),
    }
    for name, (kwargs, why) in cases.items():
        choice = _choice(write_task(tmp_path, name, **kwargs))  # type: ignore[arg-type]
        assert (choice.backend, why in choice.why) == ("docker", True), (name, choice)
    separate = write_task(tmp_path, "separate", files={"tests/Dockerfile": "FROM python:3.11-slim\n"})
    toml = separate / "task.toml"
    toml.write_text(toml.read_text().replace("[verifier]\n", '[verifier]\nenvironment_mode = "separate"\n'))
    assert _choice(separate).backend == "docker"
    public = write_task(tmp_path, "public", toml_extra='\n[environment]\nnetwork_mode = "public"\n')
    online = RunNetwork(offline=False, network=RuntimeNetwork.TASK)
    assert _choice(public, network=online).backend == "docker"
    assert _choice(public).backend == "bwrap"  # the run takes network away: nothing of the host's is shared
    # an explicit backend or a runtime is never second-guessed
    assert _choice(write_task(tmp_path, "apt2", dockerfile=cases["apt"][0]["dockerfile"]), "bwrap").backend == "bwrap"
    assert _choice(plain, "docker").backend == "docker"


@pytest.mark.docker
@pytest.mark.bwrap
def test_auto_sends_to_bwrap_most_of_the_bundled_pool_and_none_whose_image_it_cannot_stand_for(both: None):
    chosen = {}
    for name in sorted(LABELS):
        try:
            chosen[name] = _choice(TASKS_REPO / name)
        except Exception:  # invalid fixtures: the audit reports them, whatever the backend
            continue
    on_bwrap = sorted(n for n, c in chosen.items() if c.backend == "bwrap")
    on_docker = {n: c.why for n, c in chosen.items() if c.backend == "docker"}
    assert len(on_bwrap) >= 0.8 * len(chosen), on_docker
    assert "books-to-sqlite" in on_docker and "system packages" in on_docker["books-to-sqlite"]
    for name in on_bwrap:  # the labels test runs all of these on bwrap and holds them to the same labels as docker
        assert not LABELS[name].get("backend_codes"), name


@pytest.mark.docker
@pytest.mark.bwrap
def test_an_auto_audit_runs_each_task_on_its_backend_and_gets_the_labelled_verdicts(both: None, tmp_path: Path):
    pool = tmp_path / "pool"
    names = ["csv-sum", "rotate-backups", "books-to-sqlite"]
    for name in names:
        shutil.copytree(TASKS_REPO / name, pool / name)
    out = tmp_path / "audit.json"
    res = CliRunner().invoke(
        app, ["audit", str(pool), "--offline", "--network", "none", "--repeats", "2", "--json", str(out)]
    )
    assert res.exit_code in (0, 1), res.output
    audits = {Path(a["path"]).name: a for a in json.loads(out.read_text())["tasks"]}
    expected_backend = {n: _choice(pool / n).backend for n in names}
    assert {n: a["backend"] for n, a in audits.items()} == expected_backend
    assert expected_backend["csv-sum"] == "bwrap" and expected_backend["books-to-sqlite"] == "docker"
    for name, audit in audits.items():
        codes = sorted({f["code"] for f in audit["findings"] if f["severity"] == "error"})
        label = LABELS[name]
        assert codes == sorted(label.get("offline_codes", label["codes"])), (name, codes)  # type: ignore[arg-type]
    assert "auto: bwrap 1, docker 2" in res.output.replace("\n", " ")


@pytest.mark.bwrap
def test_a_solution_that_changes_owners_fails_on_bwrap_as_infrastructure_not_as_a_broken_task(tmp_path: Path):
    require_backend("bwrap")
    pool = tmp_path / "pool"
    write_task(
        pool,
        "chowns",
        solve_sh="#!/bin/bash\ntouch /app/out.txt && chown 1000:1000 /app/out.txt && echo done > /app/out.txt\n",
    )
    out = tmp_path / "audit.json"
    args = ["audit", str(pool), "--backend", "bwrap", "--offline", "--network", "none", "--repeats", "2"]
    res = CliRunner().invoke(app, [*args, "--json", str(out)])
    assert res.exit_code in (0, 1), res.output
    (audit,) = json.loads(out.read_text())["tasks"]
    errors = {f["code"]: f for f in audit["findings"] if f["severity"] == "error"}
    assert set(errors) == {"infra_error"}, audit["findings"]
    assert errors["infra_error"]["evidence"]["was"] == "broken_solution"
    assert "changing ownership of" in errors["infra_error"]["evidence"]["line"]
