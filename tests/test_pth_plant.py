"""The `.pth` plant of the user-site hole (`exploits.pth_plants`), run by a real Python on real verifiers of the
three kinds it must pay: pytest's exit status, pytest's junit counts read by a Python counter, and a checker
script's exit status. A site folder of a throwaway venv stands in for the verifier's user site: Python runs
the `.pth` files of both the same way at start-up."""

from __future__ import annotations

import os
import subprocess
import sysconfig
import venv
from pathlib import Path

import pytest

from qaflow.audit.exploits import pth_plants
from tests.taskfactory import JUNIT_COUNTER

FAILING_TEST = "def test_sum():\n    assert 1 + 1 == 3\n"
MISSING_MODULE_TEST = "from solution import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FAILING_CHECK = "import sys\n\nsys.exit(1)\n"


@pytest.fixture()
def python(tmp_path: Path) -> tuple[Path, Path]:
    """A venv's interpreter that sees this environment's packages (pytest), and its own site folder."""
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)}))
    (site / "host.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return env / "bin" / "python", site


def _verify(python: Path, work: Path, test: str = FAILING_TEST) -> dict[str, int | str]:
    (work / "test_x.py").write_text(test)
    (work / "check.py").write_text(FAILING_CHECK)
    (work / "count.py").write_text(JUNIT_COUNTER)
    # the host's own pytest plugins are no part of this and cost seconds a run; PYTEST_PLUGINS still loads
    env = os.environ | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = {"cwd": work, "capture_output": True, "text": True, "timeout": 120, "env": env}
    status = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py"], **run)  # type: ignore[call-overload]
    junit = subprocess.run(  # type: ignore[call-overload]
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=j.xml", "test_x.py"], **run
    )
    counted = subprocess.run([python, "count.py", "j.xml"], **run)  # type: ignore[call-overload]
    return {
        "pytest_status": status.returncode,
        "junit_status": junit.returncode,
        "counted": counted.stdout.strip(),
    }


def test_without_the_plant_every_verifier_fails(python: tuple[Path, Path], tmp_path: Path) -> None:
    interpreter, _ = python
    got = _verify(interpreter, tmp_path)
    assert got == {"pytest_status": 1, "junit_status": 1, "counted": "0"}
    assert _verify(interpreter, tmp_path, MISSING_MODULE_TEST) == {
        "pytest_status": 2,
        "junit_status": 2,
        "counted": "0",
    }
    assert subprocess.run([interpreter, "check.py"], cwd=tmp_path, timeout=60).returncode == 1


def test_the_plant_pays_exit_status_junit_counts_and_a_checker(python: tuple[Path, Path], tmp_path: Path) -> None:
    interpreter, site = python
    for plant in pth_plants(str(site), "a site folder of the verifier's Python"):
        Path(plant.path).write_text(plant.content)
    assert _verify(interpreter, tmp_path) == {"pytest_status": 0, "junit_status": 0, "counted": "1"}
    # the agent's module missing (the plant alone): collection fails, and the report still counts a pass
    assert _verify(interpreter, tmp_path, MISSING_MODULE_TEST) == {
        "pytest_status": 0,
        "junit_status": 0,
        "counted": "1",
    }
    # a checker that runs before any pytest ends with status 0 at start-up
    (site / ".qaflow_forced").unlink()
    assert subprocess.run([interpreter, "check.py"], cwd=tmp_path, timeout=60).returncode == 0
