"""Escape and abuse suite: untrusted task code against every backend (docker, docker under gVisor, bwrap).

Each case plays an attacker (the agent's commands, the reference solution, or the verifier's
own processes) and checks that the attempt is contained, that it is reported in the result,
and that the recorded reward is the verifier's own. gVisor cases skip, with the reason printed,
only where runsc cannot start containers here (`qaflow sandbox doctor` says why), and fail instead under
QAFLOW_REQUIRE_BACKENDS=1 (CI), where setup.sh registers it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.agents import OracleAgent
from qaflow.cli import app
from qaflow.errors import SandboxError
from qaflow.models.trial import ErrorKind, ExitStatus, TrialResult
from qaflow.sandbox import Limits, SandboxSpec, check_runtime, open_sandbox
from qaflow.sandbox.base import Sandbox
from qaflow.task import Task, tree_hash
from qaflow.trial import run_trial
from tests.conftest import require_backend
from tests.taskfactory import write_task

GVISOR = "docker:runsc"
BACKENDS = [
    pytest.param("docker", marks=pytest.mark.docker),
    pytest.param(GVISOR, marks=pytest.mark.docker, id="gvisor"),
    pytest.param("bwrap", marks=pytest.mark.bwrap),
]
VERIFIER_ZERO = "#!/bin/bash\nmkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\n"


def require_gvisor(config: pytest.Config) -> None:
    """Skip, printing why on the terminal, when runsc cannot start containers here."""
    require_backend("docker")
    ok, reason = check_runtime("runsc")
    if ok:
        return
    message = f"gVisor (docker --runtime runsc) cannot start here: {reason}"
    if os.environ.get("QAFLOW_REQUIRE_BACKENDS") == "1":
        pytest.fail(f"gVisor is required here (QAFLOW_REQUIRE_BACKENDS=1) but {message}")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"SKIP {message}", yellow=True)
    pytest.skip(message)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == GVISOR:
        require_gvisor(request.config)
    else:
        require_backend(request.param)
    return request.param


@pytest.fixture
def sandbox(backend: str, tmp_path: Path) -> Iterator[Sandbox]:
    ctx = tmp_path / f"ctx-{uuid.uuid4().hex[:8]}"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text("FROM python:3.11-slim\nWORKDIR /app\n")
    spec = SandboxSpec(name="escape", context_dir=ctx, env_hash=tree_hash(ctx), run_id="pytest-escape")
    box = open_sandbox(spec, backend)
    try:
        yield box
    finally:
        box.close()


def trial(
    tmp_path: Path,
    backend: str,
    *,
    solve: str,
    test: str = VERIFIER_ZERO,
    toml_extra: str = "",
    agent_timeout: float = 30.0,
    limits: Limits | None = None,
) -> TrialResult:
    task = Task.load(
        write_task(tmp_path, name=f"t{uuid.uuid4().hex[:6]}", solve_sh=solve, test_sh=test, toml_extra=toml_extra)
    )
    task.config.agent.timeout_sec = agent_timeout
    started = time.monotonic()
    result = run_trial(task, OracleAgent(), backend=backend, limits=limits)
    assert time.monotonic() - started < 120, "the trial must return, whatever the task does"
    assert result.backend == backend
    return result


def host_can_fork() -> bool:
    return subprocess.run(["true"], timeout=30).returncode == 0


# ----- the host's files ----------------------------------------------------------------------------


def test_host_files_outside_the_sandbox_cannot_be_read(sandbox: Sandbox, tmp_path: Path):
    token = secrets.token_hex(16)
    secret = tmp_path / "host-secret.txt"
    secret.write_text(token)
    shadow = Path("/etc/shadow")
    shadow_hashes = [
        line.split(":")[1]
        for line in (shadow.read_text().splitlines() if shadow.is_file() else [])
        if line.count(":") > 2 and len(line.split(":")[1]) > 3
    ]
    probe = (
        f"cat {secret} /proc/1/root{secret} /proc/1/cwd{secret} 2>&1; "
        "cat /etc/shadow /etc/gshadow 2>&1; cat /etc/ssh/ssh_host_*_key 2>&1; cat /etc/docker/daemon.json 2>&1; "
        "for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock; do "
        "[ -S $s ] && echo SOCKET:$s; done; "
        "mknod /tmp/qaflow-disk b 8 0 2>&1 && head -c 512 /tmp/qaflow-disk > /tmp/blk && [ -s /tmp/blk ]"
        " && echo RAW-DISK; true"
    )
    res = sandbox.exec(probe, timeout=60)
    seen = res.stdout + res.stderr
    assert token not in seen
    for hashed in shadow_hashes:
        assert hashed not in seen, "the host's password hashes are readable"
    assert "SOCKET:" not in seen, "a host daemon's socket is reachable"
    assert "RAW-DISK" not in seen, "a raw host block device was readable"
    # The same through the sandbox's own file API, which the agent harness's read tool uses.
    with pytest.raises(FileNotFoundError):
        sandbox.get(str(secret))
    for path in ("/etc/shadow", "/etc/gshadow", "/etc/docker/daemon.json"):
        try:
            data = sandbox.get(path)
        except (FileNotFoundError, SandboxError):
            continue
        assert not any(h.encode() in data for h in shadow_hashes), path
        assert b"runtimes" not in data, path


def test_nothing_on_the_host_can_be_written(sandbox: Sandbox, tmp_path: Path):
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    marker = f"qaflow-escape-{uuid.uuid4().hex[:8]}"
    targets = [str(victim), f"/etc/{marker}", f"/usr/{marker}", f"/tmp/{marker}", f"/root/{marker}", f"/var/{marker}"]
    attack = (
        "mount -o remount,rw / 2>/dev/null; mount -o remount,rw,bind /usr 2>/dev/null; "
        "mount -t tmpfs none /mnt 2>/dev/null; "
        + "; ".join(f"echo pwned > {t} 2>/dev/null; echo pwned > /proc/1/root{t} 2>/dev/null" for t in targets)
        + "; for f in /sys/fs/cgroup/*/release_agent /sys/fs/cgroup/release_agent; do echo /x > $f 2>/dev/null; done"
        + "; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null && echo wrote-a-host-sysctl"
        # Same values back: harmless if the write went through, but it must not.
        + '; v=$(cat /proc/sys/vm/swappiness) && echo "$v" > /proc/sys/vm/swappiness 2>/dev/null'
        + " && echo wrote-a-host-sysctl"
        + '; v=$(cat /proc/sys/kernel/core_pattern) && echo "$v" > /proc/sys/kernel/core_pattern 2>/dev/null'
        + " && echo wrote-a-host-sysctl; true"
    )
    res = sandbox.exec(attack, timeout=60)
    assert victim.read_text() == "original"
    for target in targets[1:]:
        assert not Path(target).exists(), target
    assert "wrote-a-host-sysctl" not in res.stdout
    release_agents = list(Path("/sys/fs/cgroup").glob("*/release_agent"))
    assert all(p.read_text().strip() != "/x" for p in release_agents)


# ----- network --------------------------------------------------------------------------------------


def _host_addresses() -> list[str]:
    found = ["127.0.0.1", "172.17.0.1"]
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.255", 1))  # no packet is sent: this only picks the outgoing address
        found.append(s.getsockname()[0])
    return list(dict.fromkeys(found))


def test_no_network_address_is_reachable(sandbox: Sandbox):
    tcp = socket.socket()
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("0.0.0.0", 0))
    tcp.listen(16)
    port = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", port))
    tcp.settimeout(0.2)
    udp.settimeout(0.2)
    hits: list[str] = []
    stop = threading.Event()

    def listen() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                conn, addr = tcp.accept()
                hits.append(f"tcp from {addr}")
                conn.close()
            with contextlib.suppress(TimeoutError, OSError):
                _, addr = udp.recvfrom(100)
                hits.append(f"udp from {addr}")

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    targets = [(host, port) for host in _host_addresses()] + [("1.1.1.1", 53), ("8.8.8.8", 443), ("10.0.0.1", 80)]
    probe = (
        "import socket\n"
        f"targets = {targets!r}\n"
        "for host, port in targets:\n"
        "    s = socket.socket(); s.settimeout(2)\n"
        "    try:\n"
        "        s.connect((host, port)); print('CONNECTED', host, port)\n"
        "    except OSError as e:\n"
        "        print('refused', host, port, e)\n"
        "    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "    try:\n"
        "        u.sendto(b'x', (host, port))\n"
        "    except OSError:\n"
        "        pass\n"
        "try:\n"
        "    print('RESOLVED', socket.getaddrinfo('example.com', 80)[0][4])\n"
        "except OSError as e:\n"
        "    print('no dns', e)\n"
    )
    sandbox.put("/app/probe.py", probe.encode())
    res = sandbox.exec("python3 /app/probe.py", timeout=60)
    time.sleep(0.5)
    stop.set()
    thread.join()
    tcp.close()
    udp.close()
    assert res.exit_code == 0, res.stderr
    assert "CONNECTED" not in res.stdout and "RESOLVED" not in res.stdout, res.stdout
    assert sum(line.startswith("refused ") for line in res.stdout.splitlines()) == len(targets), res.stdout
    assert hits == []


# ----- resources ------------------------------------------------------------------------------------


def test_fork_bomb_is_contained_and_the_trial_goes_on(backend: str, tmp_path: Path):
    solve = "#!/bin/bash\nbomb() { bomb | bomb & }\nbomb\nsleep 60\n"
    result = trial(tmp_path, backend, solve=solve, agent_timeout=4, limits=Limits(pids=128))
    assert result.agent_exec is not None and not result.agent_exec.ok
    assert result.error is None, result.error
    assert result.reward == 0.0
    assert host_can_fork()


def test_memory_fill_is_killed_and_reported(backend: str, tmp_path: Path):
    solve = "#!/bin/bash\npython3 -c \"b = bytearray(2 * 1024**3); open('/app/out.txt', 'w').write('done')\"\n"
    test = (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        'if [ "$(cat /app/out.txt 2>/dev/null)" = done ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
    )
    toml = "\n[environment]\nmemory_mb = 256\n"
    result = trial(tmp_path, backend, solve=solve, test=test, toml_extra=toml, agent_timeout=15)
    assert host_can_fork()
    agent = result.agent_exec
    if backend == GVISOR and result.error is not None:
        # gVisor's sandbox is one process to the host's OOM killer: it may die whole, during the
        # command or just after (docker does not always record that as an OOM kill), or be left
        # unable to start processes; the trial says so instead of verifying in a broken sandbox.
        assert result.error.kind is ErrorKind.SANDBOX, result.error
        assert agent is None or agent.oom_killed or agent.sandbox_died or agent.exit_code != 0
        assert result.reward is None
        return
    assert agent is not None and agent.exit_code != 0
    assert agent.oom_killed and not agent.sandbox_died
    assert (result.error, result.reward) == (None, 0.0)


def test_disk_fill_is_bounded_and_reported(backend: str, tmp_path: Path):
    solve = (
        "#!/bin/bash\n"
        "head -c 40000000 /dev/zero > /app/one-big-file; echo big-file-exit:$?\n"
        "for i in $(seq 200); do head -c 10000000 /dev/zero > /app/fill-$i || break; done\n"
        "echo done > /app/out.txt\n"
    )
    test = (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        'if [ "$(cat /app/out.txt 2>/dev/null)" = done ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
    )
    result = trial(
        tmp_path,
        backend,
        solve=solve,
        test=test,
        toml_extra="\n[environment]\nstorage_mb = 150\n",
        limits=Limits(file_size_mb=30),
    )
    agent = result.agent_exec
    assert agent is not None
    assert "big-file-exit:0" not in agent.stdout, "a file past file_size_mb was written"
    assert agent.storage_exceeded and "storage limit" in agent.stderr
    assert result.error is None, result.error
    assert result.reward == 0.0, "the filler was killed before it finished"


def test_a_verifier_that_fills_the_disk_leaves_no_reward_rather_than_a_forged_one(backend: str, tmp_path: Path):
    test = (
        "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"
        "for i in $(seq 100); do head -c 10000000 /dev/zero > /app/v-$i; done\n"
    )
    result = trial(
        tmp_path,
        backend,
        solve="#!/bin/bash\ntrue\n",
        test=test,
        toml_extra="\n[environment]\nstorage_mb = 150\n",
        limits=Limits(file_size_mb=30),
    )
    assert result.verifier_exec is not None and result.verifier_exec.storage_exceeded
    assert result.error is not None and result.error.kind is ErrorKind.REWARD, result.error
    assert "storage limit" in result.error.message and result.reward is None


HARNESS_TOOLS = ("sh", "bash", "cat", "tar", "rm", "mkdir", "head", "ls", "find", "stat", "sha256sum", "python3")
"""Names of programs a harness's own commands might look up along PATH."""


def test_programs_the_agent_puts_first_on_path_never_run_the_harness_own_commands(backend: str, tmp_path: Path):
    forger = (
        "#!/bin/sh\n/bin/mkdir -p /logs/verifier 2>/dev/null; echo 1 > /logs/verifier/reward.txt 2>/dev/null\n"
        "echo 1 > /logs/verifier/reward.json 2>/dev/null; printf 'reward.txt\\n1\\n'; exit 0\n"
    )
    solve = "#!/bin/bash\n" + "".join(
        f"cat > /app/bin/{name} <<'EOF'\n{forger}EOF\nchmod +x /app/bin/{name}\n" for name in HARNESS_TOOLS
    )
    test = "#!/bin/bash\n/bin/mkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\n"
    dockerfile = "FROM python:3.11-slim\nWORKDIR /app\nRUN mkdir -p /app/bin\nENV PATH=/app/bin:$PATH\n"
    task = Task.load(write_task(tmp_path, name="path-first", solve_sh=solve, test_sh=test, dockerfile=dockerfile))
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.agent_exec is not None and result.agent_exec.exit_code == 0, result.agent_exec
    assert (result.error, result.reward) == (None, 0.0), (result.error, result.verifier_exec)


def test_output_floods_are_capped(backend: str, tmp_path: Path):
    solve = "#!/bin/bash\nhead -c 40000000 /dev/zero | tr '\\0' x\nhead -c 20000000 /dev/zero | tr '\\0' y >&2\n"
    test = (
        "#!/bin/bash\nhead -c 20000000 /dev/zero | tr '\\0' z\nmkdir -p /logs/verifier\n"
        "echo 1 > /logs/verifier/reward.txt\n"
    )
    result = trial(tmp_path, backend, solve=solve, test=test, limits=Limits(output_bytes=64 * 1024))
    agent, verifier = result.agent_exec, result.verifier_exec
    assert agent is not None and verifier is not None
    assert agent.stdout_truncated and agent.stderr_truncated and verifier.stdout_truncated
    assert len(agent.stdout.encode()) <= 64 * 1024 and len(verifier.stdout.encode()) <= 64 * 1024
    assert (result.error, result.reward) == (None, 1.0)


# ----- processes outliving their phase -----------------------------------------------------------


_STRAY_LOOP = (
    "while true; do printf x >> /tmp/alive; mkdir -p /logs/verifier 2>/dev/null; "
    'printf "%s" "{"reward": 1, "alive": 0}" > /logs/verifier/reward.json 2>/dev/null; sleep 0.05; done'
)
"""A process rewriting a full reward forever (no single quote: it goes inside sh -c '...')."""
_ALIVE_CHECK = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "a=$(stat -c %s /tmp/alive 2>/dev/null || echo 0); sleep 0.5; b=$(stat -c %s /tmp/alive 2>/dev/null || echo 0)\n"
    'alive=0; [ "$a" = "$b" ] || alive=1\n'
    'printf \'{"reward": 0, "alive": %s}\' "$alive" > /logs/verifier/reward.json\n'
)


@pytest.mark.parametrize("how", ["setsid", "nohup", "double-fork", "timeout"])
def test_processes_the_agent_leaves_cannot_act_on_the_verifier(backend: str, tmp_path: Path, how: str):
    start = {
        "setsid": f"setsid sh -c '{_STRAY_LOOP}' >/dev/null 2>&1 &",
        "nohup": f"nohup sh -c '{_STRAY_LOOP}' >/dev/null 2>&1 &",
        "double-fork": f"( setsid sh -c '{_STRAY_LOOP}' >/dev/null 2>&1 & )",
        "timeout": f"( setsid sh -c '{_STRAY_LOOP}' >/dev/null 2>&1 & )",
    }[how]
    # poll (a loaded machine starts the stray late) within the agent's 2 s
    running = "[ -s /tmp/alive ] && [ -s /logs/verifier/reward.json ] && { echo STRAY-RUNNING; break; }"
    check = f"for _ in $(seq 15); do sleep 0.1; {running}; done"
    tail = "sleep 60" if how == "timeout" else "true"
    solve = f"#!/bin/bash\n{start}\n{check}\n{tail}\n"
    result = trial(tmp_path, backend, solve=solve, test=_ALIVE_CHECK, agent_timeout=2.0)
    assert result.agent_exec is not None and "STRAY-RUNNING" in result.agent_exec.stdout, result.agent_exec
    assert result.error is None, result.error
    assert result.rewards == {"reward": 0.0, "alive": 0.0}, "an agent process reached the verifier's files"
    if how == "timeout" and backend == "bwrap":  # the timed-out command's pid namespace took them down
        assert result.services_left == 0
    elif backend in ("docker", "bwrap"):  # kept running for the verifier, but only in the agent's sandbox
        assert result.services_left >= 1 and result.verifier_sandbox == "view", result
    else:  # gVisor cannot make a view: killed, as before
        assert result.services_left >= 1 and result.strays_killed["agent"] >= 1
    if how == "timeout":
        assert result.exit_status is ExitStatus.AGENT_TIMEOUT


_SERVE = (
    "#!/bin/bash\nmkdir -p /app/srv && echo {body} > /app/srv/index.txt\n"
    "nohup python3 -m http.server 8080 --bind 127.0.0.1 --directory /app/srv >/dev/null 2>&1 &\n"
    "for i in $(seq 50); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8080), 1)' "
    "2>/dev/null && break; sleep 0.1; done\n"
)
"""A solution that leaves an HTTP server on 127.0.0.1:8080 serving `{body}`, as service tasks ask."""
_QUERY = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "python3 - <<'PY'\nimport time, urllib.request\nok = False\nfor _ in range(20):\n"
    "    try:\n        answer = urllib.request.urlopen('http://127.0.0.1:8080/index.txt', timeout=1).read()\n"
    "        ok = answer.strip() == b'hello'\n"
    "        break\n    except OSError:\n        time.sleep(0.25)\n"
    "open('/logs/verifier/reward.txt', 'w').write('1' if ok else '0')\nPY\n"
)
"""A verifier that asks the agent's server and gives 1 only for the right answer."""


def test_a_server_the_agent_leaves_running_answers_the_verifier(backend: str, tmp_path: Path):
    result = trial(tmp_path, backend, solve=_SERVE.format(body="hello"), test=_QUERY)
    assert result.error is None, result.error
    assert result.services_left >= 1, result
    if backend in ("docker", "bwrap"):
        assert (result.reward, result.verifier_sandbox, result.verifier_note) == (1.0, "view", None)
    else:  # gVisor: each sandbox has its own network stack; said, never passed off as a verdict
        assert result.reward == 0.0 and result.verifier_note and "gVisor" in result.verifier_note


def test_a_wrong_server_is_rejected_and_nothing_left_running_is_reachable_after(backend: str, tmp_path: Path):
    result = trial(tmp_path, backend, solve=_SERVE.format(body="wrong"), test=_QUERY)
    assert (result.error, result.reward) == (None, 0.0)
    nothing = trial(tmp_path, backend, solve="#!/bin/bash\ntrue\n", test=_QUERY)
    assert (nothing.error, nothing.reward, nothing.services_left, nothing.verifier_sandbox) == (None, 0.0, 0, "shared")


def test_a_forger_left_running_beside_a_server_cannot_forge(backend: str, tmp_path: Path):
    forger = (
        "setsid nohup sh -c 'while true; do mkdir -p /logs/verifier /tests; echo 1 > /logs/verifier/reward.txt; "
        'printf "#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n" > /tests/test.sh;'
        "sleep 0.02; done' >/dev/null 2>&1 &\n"
    )
    # The server serves the wrong answer; the forger keeps planting a reward, a test.sh and the right answer file.
    solve = _SERVE.format(body="wrong") + forger + "sleep 0.3\n"
    test = _QUERY.replace("python3 -", "sleep 0.5; python3 -")
    result = trial(tmp_path, backend, solve=solve, test=test)
    assert result.error is None, result.error
    assert (result.reward, result.reward_source) == (0.0, "reward.txt"), result


def test_agent_cannot_plant_tests_or_a_reward(backend: str, tmp_path: Path):
    solve = (
        "#!/bin/bash\n"
        "mkdir -p /tests /logs/verifier\n"
        "touch /tests/planted\n"
        "printf '#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh\n"
        "printf 'import pytest\\n@pytest.hookimpl\\ndef pytest_collection_modifyitems(items): items.clear()\\n'"
        " > /tests/conftest.py\n"
        "echo 1 > /logs/verifier/reward.txt\n"
        "echo '{\"reward\": 1}' > /logs/verifier/reward.json\n"
        # Where /tests can be replaced by a link (docker), try that too.
        "mkdir -p /app/evil && touch /app/evil/planted && rm -rf /tests 2>/dev/null && ln -s /app/evil /tests\n"
        "true\n"
    )
    test = (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "if [ -e /tests/planted ] || [ -e /tests/conftest.py ]; then echo 1; else echo 0; fi"
        " > /logs/verifier/reward.txt\n"
    )
    result = trial(tmp_path, backend, solve=solve, test=test)
    assert result.error is None, result.error
    assert (result.reward, result.reward_source) == (0.0, "reward.txt")


def test_a_replaced_rm_cannot_keep_planted_tests(backend: str, tmp_path: Path):
    solve = (
        "#!/bin/bash\nmkdir -p /tests && touch /tests/planted\n"
        "for d in /usr/local/bin /usr/bin /bin; do\n"
        "  printf '#!/bin/sh\\nexit 0\\n' > $d/rm 2>/dev/null && chmod +x $d/rm\ndone\n"
        "true\n"
    )
    test = (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "if [ -e /tests/planted ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
    )
    result = trial(tmp_path, backend, solve=solve, test=test)
    if backend != "bwrap":  # the fake rm left /tests as it was: refused, not verified
        assert result.error is not None, result
        assert result.error.kind is ErrorKind.SANDBOX and "cannot empty /tests" in result.error.message
        assert result.reward is None and result.verifier_exec is None
    else:  # the fake could not be installed (bwrap: the host's /usr is read-only)
        assert (result.error, result.reward) == (None, 0.0)


def test_a_background_rewrite_of_the_reward_changes_nothing(backend: str, tmp_path: Path):
    solve = (
        "#!/bin/bash\n"
        "setsid nohup sh -c 'sleep 1; mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt' >/dev/null 2>&1 &\n"
        "(sleep 1; echo 1 > /logs/verifier/reward.txt) &\n"
        "echo done > /app/out.txt\n"
    )
    test = "#!/bin/bash\nmkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\nsleep 1.5\n"
    result = trial(tmp_path, backend, solve=solve, test=test)
    assert result.error is None, result.error
    assert result.reward == 0.0


def test_processes_left_by_the_verifier_cannot_write_after_it_ends(backend: str, tmp_path: Path):
    # The verifier's own background processes, whether they hold its output pipes open (docker
    # then keeps the exec's stream open up to 2 s) or not, are killed before the reward is read.
    test = (
        "#!/bin/bash\nmkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\n"
        "(sleep 0.4; echo 1 > /logs/verifier/reward.txt) &\n"
        "setsid nohup sh -c 'sleep 0.4; echo 1 > /logs/verifier/reward.txt' >/dev/null 2>&1 &\n"
        "exit 0\n"
    )
    result = trial(tmp_path, backend, solve="#!/bin/bash\ntrue\n", test=test)
    assert result.error is None, result.error
    assert result.reward == 0.0
    assert result.verifier_exec is not None and result.verifier_exec.duration_s < 1.5
    assert result.strays_killed["verifier"] >= (0 if backend == "bwrap" else 2)


# ----- gVisor ---------------------------------------------------------------------------------------


@pytest.fixture
def gvisor(request: pytest.FixtureRequest) -> None:
    require_gvisor(request.config)


_KERNEL_PROBE = "#!/bin/bash\n(dmesg 2>/dev/null | head -3; uname -a) > /app/kernel.txt\n"
_KERNEL_TEST = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "if grep -qi gvisor /app/kernel.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
)


@pytest.mark.docker
def test_gvisor_per_run_and_per_task(gvisor: None, tmp_path: Path):
    per_run = trial(tmp_path, GVISOR, solve=_KERNEL_PROBE, test=_KERNEL_TEST)
    assert (per_run.error, per_run.reward) == (None, 1.0), "the trial did not run under gVisor's kernel"
    plain = trial(tmp_path, "docker", solve=_KERNEL_PROBE, test=_KERNEL_TEST)
    assert (plain.error, plain.reward) == (None, 0.0)
    asks = Task.load(
        write_task(
            tmp_path, name="asks", solve_sh=_KERNEL_PROBE, test_sh=_KERNEL_TEST,
            toml_extra='\n[environment]\nruntime = "runsc"\n',
        )
    )  # fmt: skip
    result = run_trial(asks, OracleAgent(), backend="docker")
    assert (result.backend, result.error, result.reward) == (GVISOR, None, 1.0)
    if os.path.exists("/usr/bin/bwrap"):
        on_bwrap = run_trial(asks, OracleAgent(), backend="bwrap")
        assert on_bwrap.error is not None and on_bwrap.error.kind is ErrorKind.UNSUPPORTED
        assert on_bwrap.reward is None


@pytest.mark.docker
def test_cli_run_takes_the_runtime(gvisor: None, tmp_path: Path):
    task_dir = write_task(tmp_path, solve_sh=_KERNEL_PROBE, test_sh=_KERNEL_TEST)
    out = CliRunner().invoke(app, ["run", str(task_dir), "--runtime", "runsc", "--json"])
    assert out.exit_code == 0, out.output
    assert '"backend": "docker:runsc"' in out.output and '"reward": 1.0' in out.output
    bad = CliRunner().invoke(app, ["run", str(task_dir), "--backend", "bwrap", "--runtime", "runsc"])
    assert bad.exit_code == 2 and "docker backend only" in " ".join(bad.output.split())
