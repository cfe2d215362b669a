"""Harbor's network semantics: builds have network, the running sandbox too unless the task says
`no-network`, `allowlist` is refused; `--offline` and `--network none` override per run.

No test reaches any outside host: network is checked through the flags and host config the
backends are given, or the interfaces a sandbox sees (docker's bridge gives it an `eth0`).
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from curation.pipeline import PipelineConfig
from qaflow.audit.runner import AuditConfig
from qaflow.cli import app
from qaflow.errors import BuildError, UnsupportedError
from qaflow.sandbox import SandboxSpec
from qaflow.sandbox.build_network import build_network_need
from qaflow.sandbox.bwrap import sandbox as bwrap_sandbox
from qaflow.sandbox.docker.backend import host_config_args
from qaflow.sandbox.spec import RunNetwork, RuntimeNetwork, spec_for_task
from qaflow.task import Task, TaskConfig, tree_hash
from tests.conftest import require_backend
from tests.taskfactory import write_task

NONE = RunNetwork(offline=False, network=RuntimeNetwork.NONE)
TASK = RunNetwork(offline=False, network=RuntimeNetwork.TASK)
ALLOWLIST = '\n[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org", "files.pythonhosted.org"]\n'
IFACES = "python3 -c \"import socket; print(' '.join(sorted(n for _, n in socket.if_nameindex())))\""
VERIFIER_OFFLINE = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    f'if [ "$({IFACES})" = lo ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
)
"""Full reward only when the verifier's sandbox has nothing but loopback."""


def stable(names: str) -> str:
    """Interface names without docker's per-container `veth*` links, which come and go as other tests' containers
    start and are removed (in the background)."""
    return " ".join(n for n in names.split() if not n.startswith("veth"))


HOST_IFACES = stable(" ".join(sorted(n for _, n in socket.if_nameindex())))
"""What a sandbox in the host's network namespace (bwrap with network) sees, transient links aside."""


@pytest.fixture(autouse=True)
def _no_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QAFLOW_OFFLINE", raising=False)
    monkeypatch.delenv("QAFLOW_NETWORK", raising=False)


def _task(tmp_path: Path, toml_extra: str = "", **kwargs: str) -> Task:
    return Task.load(write_task(tmp_path, name=f"t{uuid.uuid4().hex[:6]}", toml_extra=toml_extra, **kwargs))


# ----- the task's declaration -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "agent", "verifier"),
    [
        ("", True, True),
        ('[environment]\nnetwork_mode = "public"\n', True, True),
        ('[environment]\nnetwork_mode = "no-network"\n', False, False),
        ('[environment]\nnetwork_mode = "no-network"\n[agent]\nnetwork_mode = "public"\n', True, False),
        ('[verifier]\nnetwork_mode = "no-network"\n', True, False),
        ("[environment]\nallow_internet = false\n", False, False),
        ("[environment]\nallow_internet = true\n", True, True),
        ('[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n', False, False),
    ],
)
def test_harbor_defaults_network_unless_no_network(toml: str, agent: bool, verifier: bool):
    config = TaskConfig.from_toml(toml)
    assert (config.agent_network(), config.verifier_network()) == (agent, verifier)


def test_undeclared_task_gets_network_at_run_time_and_at_build_time_where_a_step_downloads(tmp_path: Path):
    installs = "FROM python:3.11-slim\nRUN apt-get update && \\\n    apt-get install -y curl\nWORKDIR /app\n"
    spec = spec_for_task(_task(tmp_path, dockerfile=installs), network=TASK)
    assert (spec.network, spec.build_network, spec.runtime_network) == (True, True, True)
    assert not spec.build_network_guessed
    assert host_config_args(spec, 1.0, storage=False)["network_mode"] == "qaflow-public"  # isolated per container
    quiet = spec_for_task(_task(tmp_path, '\n[environment]\nnetwork_mode = "no-network"\n', dockerfile=installs))
    assert (quiet.runtime_network, quiet.build_network) == (False, True)
    assert host_config_args(quiet, 1.0, storage=False)["network_mode"] == "none"
    plain = spec_for_task(_task(tmp_path), network=TASK)  # no step downloads: built without, retried with
    assert (plain.runtime_network, plain.build_network, plain.build_network_guessed) == (True, False, True)
    declared = spec_for_task(_task(tmp_path, '\n[environment]\nnetwork_mode = "public"\n'), network=TASK)
    assert (declared.build_network, declared.build_network_guessed) == (True, False)


@pytest.mark.parametrize(
    ("dockerfile", "need"),
    [
        ("FROM x\nRUN pip install --no-cache-dir requests==2.32.3\n", "line 2: RUN pip install"),
        ("FROM x\nRUN echo hi\nADD https://example.org/a.tgz /a\n", "line 3: ADD https://example.org/a.tgz /a"),
        ("FROM x\nRUN python3 -m pip install x\n", "line 2: RUN python3 -m pip install x"),
        ("FROM x\nRUN mkdir -p /app && echo pipeline > /app/notes\nCOPY . /app\n", None),
        ("FROM x\n# RUN apt-get install\nRUN true\n", None),
    ],
)
def test_which_builds_need_network(tmp_path: Path, dockerfile: str, need: str | None):
    path = tmp_path / "Dockerfile"
    path.write_text(dockerfile)
    found = build_network_need(path)
    assert found is None if need is None else (found or "").startswith(need), found


def test_network_none_forces_every_sandbox_off_and_offline_only_the_build(tmp_path: Path):
    task = _task(tmp_path, '\n[environment]\nnetwork_mode = "public"\n')
    spec = spec_for_task(task, network=NONE)
    assert (spec.runtime_network, spec.build_network) == (False, True)
    assert host_config_args(spec, 1.0, storage=False)["network_mode"] == "none"
    verifier = spec.model_copy(update={"network": True})  # what a separate verifier's spec does
    assert not verifier.runtime_network
    assert spec.for_build().runtime_network, "--network none leaves builds alone"
    offline = spec_for_task(task, network=RunNetwork(offline=True, network=RuntimeNetwork.TASK))
    assert (offline.runtime_network, offline.build_network, offline.for_build().runtime_network) == (True, False, False)


def test_run_settings_come_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    assert RunNetwork() == RunNetwork(offline=False, network=RuntimeNetwork.TASK)
    monkeypatch.setenv("QAFLOW_OFFLINE", "1")
    monkeypatch.setenv("QAFLOW_NETWORK", "none")
    assert RunNetwork() == RunNetwork(offline=True, network=RuntimeNetwork.NONE)
    assert (AuditConfig().offline, AuditConfig().network) == (True, RuntimeNetwork.NONE)
    spec = spec_for_task(_task(tmp_path))
    assert (spec.build_network, spec.runtime_network) == (False, False)
    monkeypatch.setenv("QAFLOW_NETWORK", "some")
    with pytest.raises(ValueError, match="QAFLOW_NETWORK"):
        RunNetwork()


def test_pipeline_audit_settings_reach_the_audit_config(tmp_path: Path):
    path = tmp_path / "pipeline.yaml"
    path.write_text("name: p\nsources: []\naudit: {backend: bwrap, offline: true, network: none}\n")
    config = PipelineConfig.load(path).audit
    assert (config.backend, config.offline, config.network) == ("bwrap", True, RuntimeNetwork.NONE)
    default = PipelineConfig.model_validate({"name": "p", "output_dir": "out", "sources": []}).audit
    assert default == AuditConfig()  # the batch job audits as `qaflow audit` does by default
    assert default.network is RuntimeNetwork.TASK


# ----- allowlist ------------------------------------------------------------------------------------


def test_allowlist_is_refused_not_widened(tmp_path: Path):
    task = _task(tmp_path, ALLOWLIST)
    with pytest.raises(UnsupportedError) as info:
        spec_for_task(task, network=TASK)
    assert str(info.value) == (
        f"{task.path / 'task.toml'}: network_mode = 'allowlist' (allowed_hosts: pypi.org, files.pythonhosted.org) "
        "is not enforced by qaflow; declare 'public' or 'no-network'"
    )
    folder = write_task(tmp_path, name="verifier-allowlist")
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("[verifier]\n", '[verifier]\nnetwork_mode = "allowlist"\n', 1))
    with pytest.raises(UnsupportedError, match=r"\(allowed_hosts: none\)"):
        spec_for_task(Task.load(folder), network=TASK)
    assert not spec_for_task(task, network=NONE).runtime_network, "with no network at all nothing is widened"


def test_allowlist_is_an_infra_error_finding_and_qaflow_run_says_why(backend: str, tmp_path: Path):
    pool = tmp_path / "pool"
    pool.mkdir()
    task = Task.load(write_task(pool, name="allow", toml_extra=ALLOWLIST))
    reason = f"{task.path / 'task.toml'}: network_mode = 'allowlist'"
    report = tmp_path / "audit.json"
    out = CliRunner().invoke(app, ["audit", str(pool), "--backend", backend, "--repeats", "1", "--json", str(report)])
    assert out.exit_code == 0, out.output
    (audit,) = json.loads(report.read_text())["tasks"]
    (finding,) = [f for f in audit["findings"] if f["code"] == "infra_error"]
    assert audit["verdict"] == "needs_repair" and "build_failed" not in {f["code"] for f in audit["findings"]}
    assert reason in finding["message"] and reason in finding["evidence"]["unsupported"]
    run = CliRunner().invoke(app, ["run", str(task.path), "--backend", backend])
    assert run.exit_code == 1
    (line,) = [ln for ln in run.output.splitlines() if reason in ln]
    assert line.startswith("unsupported: ") and line.endswith("declare 'public' or 'no-network'"), run.output


# ----- bwrap ----------------------------------------------------------------------------------------


@pytest.fixture
def bwrap_nets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[bool]]:
    """`runtime_network` of the spec of every bwrap sandbox made: the build's, then each one opened."""
    require_backend("bwrap")
    monkeypatch.setenv("QAFLOW_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[bool] = []
    real = bwrap_sandbox.BwrapSandbox.__init__

    def spy(self: bwrap_sandbox.BwrapSandbox, spec: SandboxSpec, *args: Any, **kwargs: Any) -> None:
        real(self, spec, *args, **kwargs)
        seen.append(self._host_net)

    monkeypatch.setattr(bwrap_sandbox.BwrapSandbox, "__init__", spy)
    yield seen


PUBLIC = '\n[environment]\nnetwork_mode = "public"\n'


def _ifaces_task(tmp_path: Path, toml_extra: str = "") -> Task:
    """A task whose build records the interfaces its RUN step sees in /app/built (never a cached build)."""
    dockerfile = f"FROM python:3.11-slim\nWORKDIR /app\nRUN echo {uuid.uuid4().hex} && {IFACES} > built\n"
    return _task(tmp_path, toml_extra, dockerfile=dockerfile)


@pytest.mark.bwrap
def test_bwrap_shares_the_host_network_only_with_a_task_that_declares_public(bwrap_nets: list[bool], tmp_path: Path):
    from qaflow.sandbox.bwrap.backend import BwrapBackend

    undeclared = _ifaces_task(tmp_path)
    with BwrapBackend().open(spec_for_task(undeclared, network=TASK)) as box:
        assert box.get("/app/built").decode().strip() == "lo", "bwrap cannot isolate an outside network"
        assert box.exec(IFACES).stdout.strip() == "lo"
    assert bwrap_nets == [False, False]
    bwrap_nets.clear()
    task = _ifaces_task(tmp_path, PUBLIC)
    with BwrapBackend().open(spec_for_task(task, network=TASK)) as box:
        assert stable(box.get("/app/built").decode()) == HOST_IFACES, "the build's RUN steps share the network"
        assert stable(box.exec(IFACES).stdout) == HOST_IFACES
    assert bwrap_nets == [True, True]
    with BwrapBackend().open(spec_for_task(task, network=NONE)) as box:
        assert box.exec(IFACES).stdout.strip() == "lo"
        verifier = spec_for_task(task, network=NONE).model_copy(update={"network": True})
    with BwrapBackend().open(verifier) as box:
        assert box.exec(IFACES).stdout.strip() == "lo"
    assert bwrap_nets == [True, True, False, False]


@pytest.mark.bwrap
def test_bwrap_offline_build_has_no_network(bwrap_nets: list[bool], tmp_path: Path):
    from qaflow.sandbox.bwrap.backend import BwrapBackend

    task = _ifaces_task(tmp_path, PUBLIC)
    with BwrapBackend().open(spec_for_task(task, network=RunNetwork(offline=True, network=RuntimeNetwork.TASK))) as box:
        assert box.get("/app/built").decode().strip() == "lo"
        assert stable(box.exec(IFACES).stdout) == HOST_IFACES, "--offline leaves the running sandbox alone"
    assert bwrap_nets == [False, True]


PACKAGES = "the bwrap backend cannot install system packages ({} in environment/Dockerfile line 4); "
ACCOUNTS = (
    "the bwrap backend cannot add or change the image's users and groups ({} in environment/Dockerfile line 4: "
    "the host's /etc is the sandbox's, read-only); "
)


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("run", "refusal"),
    [
        ("apt-get update && apt-get install -y --no-install-recommends curl", PACKAGES.format("apt-get install")),
        ("apk add --no-cache curl", PACKAGES.format("apk add")),
        ("DEBIAN_FRONTEND=noninteractive apt -y install curl", PACKAGES.format("apt install")),
        ("dnf -y install curl", PACKAGES.format("dnf install")),
        ("useradd -m agent && chown agent /app", ACCOUNTS.format("useradd")),
        ("groupadd -r ci; adduser --disabled-password --gecos '' --ingroup ci ci", ACCOUNTS.format("groupadd")),
        ("/usr/sbin/usermod -aG sudo root", ACCOUNTS.format("usermod")),
    ],
)
def test_bwrap_refuses_system_package_installs_and_user_changes(
    bwrap_nets: list[bool], tmp_path: Path, run: str, refusal: str
):
    from qaflow.sandbox.bwrap.backend import BwrapBackend

    task = _task(tmp_path, dockerfile=f"FROM debian:12\nWORKDIR /app\nRUN true\nRUN {run}\n")
    with pytest.raises(UnsupportedError) as info:
        BwrapBackend().build(spec_for_task(task, network=TASK))
    assert str(info.value) == refusal + "use the docker backend"
    assert bwrap_nets == [], "refused before any RUN step ran"


@pytest.mark.bwrap
def test_bwrap_builds_a_run_that_only_names_an_account_tool(tmp_path: Path):
    from qaflow.sandbox.bwrap.backend import BwrapBackend

    ok = _task(tmp_path, dockerfile="FROM debian:12\nWORKDIR /app\nRUN echo my-useradd-notes > notes.txt\n")
    BwrapBackend().build(spec_for_task(ok, network=TASK))
    with BwrapBackend().open(spec_for_task(ok, network=TASK)) as box:
        assert box.get("/app/notes.txt") == b"my-useradd-notes\n"


# ----- docker ---------------------------------------------------------------------------------------


def _spec(tmp_path: Path, dockerfile: str, **fields: object) -> SandboxSpec:
    ctx = tmp_path / f"ctx-{uuid.uuid4().hex[:8]}"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(dockerfile)
    return SandboxSpec(name="network", context_dir=ctx, env_hash=tree_hash(ctx), run_id="pytest-network", **fields)


@pytest.mark.docker
def test_an_offline_build_never_reuses_what_a_build_with_network_made(tmp_path: Path):
    require_backend("docker")
    from qaflow.sandbox.docker.backend import DockerBackend

    # The same Dockerfile both times: only the network differs, so a shared tag or layer would show.
    dockerfile = f'FROM python:3.11-slim\nRUN echo {uuid.uuid4().hex} && test "$({IFACES})" != lo\n'
    backend = DockerBackend()
    online = backend.build(_spec(tmp_path, dockerfile))
    with pytest.raises(BuildError) as info:
        backend.build(_spec(tmp_path, dockerfile, build_network=False))
    assert "returned a non-zero code" in str(info.value)
    assert backend.build(_spec(tmp_path, dockerfile)) == online, "builds with network keep their cache"


@pytest.mark.docker
def test_docker_builds_with_network_by_default_and_without_when_offline(tmp_path: Path):
    require_backend("docker")
    from qaflow.sandbox.docker.backend import DockerBackend

    def check() -> str:
        """A RUN (never cached) that fails unless its build has an interface beyond loopback."""
        run = f'echo {uuid.uuid4().hex} && {IFACES} > /ifaces && test "$(cat /ifaces)" != lo'
        return f"FROM python:3.11-slim\nRUN {run}\n"

    backend = DockerBackend()
    backend.build(_spec(tmp_path, check()))
    with pytest.raises(BuildError) as info:
        backend.build(_spec(tmp_path, check(), build_network=False))
    assert "returned a non-zero code" in str(info.value)


@pytest.mark.docker
def test_docker_runtime_network_follows_the_task_and_none_forces_it_off(tmp_path: Path):
    require_backend("docker")
    from qaflow.sandbox.docker.backend import DockerBackend

    task = _task(tmp_path)
    backend = DockerBackend()
    for spec, mode in [
        (spec_for_task(task, network=TASK), "qaflow-public"),
        (spec_for_task(task, network=NONE), "none"),
        (spec_for_task(task, network=NONE).model_copy(update={"network": True}), "none"),
    ]:
        with backend.open(spec) as box:
            assert box.client.api.inspect_container(box.id)["HostConfig"]["NetworkMode"] == mode
            ifaces = box.exec(IFACES).stdout.split()
            assert ("eth0" in ifaces) is (mode == "qaflow-public") and "lo" in ifaces


@pytest.mark.docker
def test_cli_network_none_takes_network_from_the_verifier(tmp_path: Path):
    require_backend("docker")
    task = write_task(tmp_path, test_sh=VERIFIER_OFFLINE)
    runner = CliRunner()
    as_declared = runner.invoke(app, ["run", str(task), "--backend", "docker", "--json"])
    assert json.loads(as_declared.output)["reward"] == 0.0, as_declared.output
    forced = runner.invoke(app, ["run", str(task), "--backend", "docker", "--network", "none", "--json"])
    assert json.loads(forced.output)["reward"] == 1.0, forced.output
    by_env = runner.invoke(app, ["run", str(task), "--backend", "docker", "--json"], env={"QAFLOW_NETWORK": "none"})
    assert json.loads(by_env.output)["reward"] == 1.0, by_env.output


@pytest.mark.docker
def test_offline_apt_build_is_an_infra_error_with_the_apt_line(tmp_path: Path):
    require_backend("docker")
    pool = tmp_path / "pool"
    pool.mkdir()
    dockerfile = (
        f"FROM python:3.11-slim\nWORKDIR /app\nRUN echo {uuid.uuid4().hex} && apt-get update "
        "&& apt-get install -y --no-install-recommends tree\n"
    )
    write_task(pool, name="apt", dockerfile=dockerfile)
    report = tmp_path / "audit.json"
    args = ["audit", str(pool), "--backend", "docker", "--offline", "--repeats", "1", "--json", str(report)]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    (audit,) = json.loads(report.read_text())["tasks"]
    assert "build_failed" not in {f["code"] for f in audit["findings"]}, audit["findings"]
    (finding,) = [f for f in audit["findings"] if f["code"] == "infra_error"]
    evidence = finding["evidence"]
    # the stand-in (python:3.11-slim built offline) is named, but the cause is the network
    assert set(evidence) - {"stand_ins"} == {"line", "log_tail", "backend"} and evidence["backend"] == "docker"
    assert "deb.debian.org" in evidence["line"] and evidence["line"] in evidence["log_tail"]
    assert "--offline" in finding["message"] and evidence["line"] in finding["message"]


@pytest.mark.bwrap
def test_recorded_trials_are_reused_only_under_the_same_runtime_network(tmp_path: Path):
    require_backend("bwrap")
    from qaflow.ledger import Ledger
    from qaflow.models.records import ResultKey

    pool = tmp_path / "pool"
    pool.mkdir()
    task = Task.load(write_task(pool, name="plain"))
    key = ResultKey(task_version=task.version, probe="nop", attempt=0)

    def audit(*extra: str) -> tuple[str, object]:
        args = ["audit", str(pool), "--backend", "bwrap", "--repeats", "1", "--max-mutants", "0", *extra]
        out = CliRunner().invoke(app, args)
        assert out.exit_code == 0, out.output
        with Ledger(pool / ".qaflow" / "ledger.sqlite") as ledger:
            result = ledger.get_result(key)
        assert result is not None
        return result.run_id, result.payload.get("network")

    first = audit("--network", "none")
    assert first[1] == "none"
    second = audit()
    assert second[0] != first[0] and second[1] is None, "a trial run with no network is not reused"
    assert audit() == second
