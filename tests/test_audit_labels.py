"""The audit on the bundled pool, under both backends with `--offline --network none`: every labelled
code found, nothing else, no finding on any control, identical verdicts under docker and bwrap for the
tasks both run alike, task folders untouched; and the apt-get control accepted with build network."""

from __future__ import annotations

import json
import shlex
import shutil
import urllib.request
from pathlib import Path

import docker
import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.models.probe_key import ProbeKey, ProbeKind
from qaflow.models.records import FindingCode
from qaflow.pool import Pool
from qaflow.sandbox.docker.images import BASE_IMAGE
from tests.audit_runs import LABELLED_AUDIT_TIMEOUT_S, LABELS, SAMPLES, labelled_audit
from tests.conftest import TASKS_REPO, require_backend

OFFLINE = ["--offline", "--network", "none"]
APT_CONTROL = "books-to-sqlite"
DEBIAN_MIRROR = "http://deb.debian.org/debian/"


def expected_codes(name: str, backend: str) -> set[str]:
    """What an offline audit on `backend` must find: `backend_codes[backend]`, else `offline_codes`,
    else `codes`."""
    label = LABELS[name]
    by_backend: dict[str, list[str]] = label.get("backend_codes", {})  # type: ignore[assignment]
    if backend in by_backend:
        return set(by_backend[backend])
    return set(label.get("offline_codes", label["codes"]))  # type: ignore[arg-type]


def audit_pool(backend: str, tmp_root: Path) -> dict[str, dict]:
    """The session's audit of the labelled pool on `backend` (`tests.audit_runs.labelled_audit`)."""
    done = labelled_audit(backend, tmp_root)
    assert "accepted" in done.output and "needs_repair" in done.output
    return done.audits


def error_codes(audit: dict) -> set[str]:
    return {f["code"] for f in audit["findings"] if f["severity"] == "error"}


def test_labels_cover_every_code_twice_and_controls():
    counts = {code.value: 0 for code in FindingCode if code not in (FindingCode.LINT, FindingCode.AUDIT_ERROR)}
    for label in LABELS.values():
        for code in label["codes"]:  # type: ignore[attr-defined]
            counts[code] += 1
    assert all(n >= 2 for n in counts.values()), counts
    assert sum(1 for label in LABELS.values() if not label["codes"]) >= 6
    assert set(LABELS) == {p.name for p in TASKS_REPO.iterdir() if p.is_dir() and not p.name.startswith(".")}


@pytest.mark.timeout(LABELLED_AUDIT_TIMEOUT_S)
@pytest.mark.parametrize("backend_name", [pytest.param("docker", marks=pytest.mark.docker),
                                          pytest.param("bwrap", marks=pytest.mark.bwrap)])  # fmt: skip
def test_audit_finds_exactly_the_labelled_codes(backend_name: str, tmp_path_factory: pytest.TempPathFactory):
    require_backend(backend_name)
    audits = audit_pool(backend_name, tmp_path_factory.mktemp("audit"))
    assert set(audits) == set(SAMPLES[backend_name])
    wrong = {
        name: {"expected": sorted(expected_codes(name, backend_name)), "found": sorted(error_codes(audits[name]))}
        for name in audits
        if expected_codes(name, backend_name) != error_codes(audits[name])
    }
    assert wrong == {}
    for name in audits:
        audit, codes = audits[name], expected_codes(name, backend_name)
        if not codes:
            warnings = sorted({f["code"] for f in audit["findings"] if f["severity"] == "warning"})
            assert audit["verdict"] == "accepted" and not error_codes(audit), (name, audit["findings"])
            assert warnings == LABELS[name].get("warnings", []), (name, audit["findings"])
        elif "invalid_task" in codes:
            assert audit["verdict"] == "invalid"
        else:
            assert audit["verdict"] == "needs_repair"
        for finding in audit["findings"]:
            assert finding["message"] and isinstance(finding["evidence"], dict)


@pytest.mark.parametrize("backend_name", [pytest.param("docker", marks=pytest.mark.docker),
                                          pytest.param("bwrap", marks=pytest.mark.bwrap)])  # fmt: skip
def test_every_probe_the_audit_recorded_reads_back_as_a_probe_key(
    backend_name: str, tmp_path_factory: pytest.TempPathFactory
):
    require_backend(backend_name)
    pool = labelled_audit(backend_name, tmp_path_factory.mktemp("audit")).pool
    with Pool.open(pool, create=False) as opened:
        probes = {r.probe for r in opened.ledger.results()}
    keys = {p: ProbeKey.read(p) for p in probes}
    assert sorted(p for p, key in keys.items() if key is None) == []
    assert all(str(key) == p for p, key in keys.items())
    kinds = {key.kind for key in keys.values() if key is not None}
    assert kinds >= {ProbeKind.BUILD, ProbeKind.NOP, ProbeKind.ORACLE, ProbeKind.TAMPER, ProbeKind.OBSERVE,
                     ProbeKind.MUTANT, ProbeKind.EXPLOIT}, sorted(kinds)  # fmt: skip


def test_backends_that_match_their_labels_agree():
    """Each backend's audit must find exactly its expected codes, with the verdict they imply
    (`test_audit_finds_exactly_the_labelled_codes`, on separate workers); where a label has no `backend_codes`
    the expectations are one and the same, so docker and bwrap give that task the same verdict and codes."""
    alike = [name for name, label in LABELS.items() if "backend_codes" not in label]
    assert len(alike) == len(LABELS)  # no task needs a backend of its own at present
    assert all(expected_codes(name, "docker") == expected_codes(name, "bwrap") for name in alike)
    assert set(SAMPLES["docker"]) <= set(SAMPLES["bwrap"]) == set(LABELS)


def debian_mirror_unreachable() -> str | None:
    """Why a docker build cannot reach Debian's mirror here (from the host, then from a container on
    docker's default network), or None when it can."""
    try:
        with urllib.request.urlopen(DEBIAN_MIRROR, timeout=5) as response:
            response.read(1)
    except OSError as e:
        return f"{DEBIAN_MIRROR} is unreachable from this host: {e}"
    probe = f"import urllib.request; urllib.request.urlopen({DEBIAN_MIRROR!r}, timeout=5).read(1)"
    try:
        docker.from_env().containers.run(BASE_IMAGE, ["python3", "-c", probe], remove=True, network_mode="bridge")
    except docker.errors.DockerException as e:
        return f"{DEBIAN_MIRROR} is unreachable from a container: {str(e)[-300:]}"
    return None


@pytest.mark.docker
@pytest.mark.network
def test_apt_get_control_is_accepted_with_build_network(tmp_path: Path):
    require_backend("docker")
    why = debian_mirror_unreachable()
    if why:
        pytest.skip(why)
    task = tmp_path / APT_CONTROL
    shutil.copytree(TASKS_REPO / APT_CONTROL, task)
    report = tmp_path / "audit.json"
    args = ["audit", str(task), "--backend", "docker", "--repeats", "2", "--network", "none", "--json", str(report)]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    (audit,) = json.loads(report.read_text())["tasks"]
    assert (audit["verdict"], audit["findings"]) == ("accepted", []), audit["findings"]


STATIC_CODES = {"lint", "invalid_task", "unverified_requirement", "leak", "infra_error"}
"""Findings of the files alone (and a build the backend cannot do) may have no trial to replay."""


def _replay(command: str) -> dict:
    args = shlex.split(command)
    assert args[:2] == ["qaflow", "run"], command
    out = CliRunner().invoke(app, [*args[1:], "--json"])
    assert out.exit_code in (0, 1), out.output
    return json.loads(out.stdout)


@pytest.mark.bwrap
@pytest.mark.timeout(LABELLED_AUDIT_TIMEOUT_S)
def test_every_trial_finding_names_a_command_that_replays_it(tmp_path_factory: pytest.TempPathFactory):
    """One finding per kind of replay (exploit, mutant, tamper, nop, oracle, rerun) is replayed and gives the
    outcome the finding reports; every finding a trial made names its command."""
    require_backend("bwrap")
    audits = audit_pool("bwrap", tmp_path_factory.mktemp("audit"))
    by_kind: dict[str, tuple[str, dict]] = {}
    for name, audit in sorted(audits.items()):
        for finding in audit["findings"]:
            command = finding["replay"]
            if command is None:
                assert finding["code"] in STATIC_CODES or "step" in finding["evidence"], (name, finding)
                continue
            assert f" {audit['path']} " in f" {command} " and "--backend bwrap --offline --network none" in command
            kind = command.split("--agent ")[1].split()[0].split(":")[0]
            if finding["code"] in ("build_failed", "infra_error"):
                kind = "build"
            by_kind.setdefault(kind, (name, finding))
    assert set(by_kind) >= {"exploit", "mutant", "tamper", "nop", "oracle", "rerun", "build"}, sorted(by_kind)
    for kind, (name, finding) in sorted(by_kind.items()):
        result = _replay(finding["replay"])
        if kind == "rerun":
            outcomes = [result["full_reward"], *result["reruns"]]
            assert len(set(outcomes)) == 2, (name, outcomes)  # the flaky verifier disagrees with itself again
        elif kind == "build":
            assert result["error"] is not None, (name, finding["code"], result["reward"])
        elif kind == "oracle":
            assert not result["full_reward"], (name, finding["code"], result["reward"])
        else:  # an exploit, a wrong answer, a planted reward or an untouched environment passes
            assert result["full_reward"], (name, finding["code"], finding["replay"], result["reward"])
