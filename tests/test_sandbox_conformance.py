"""What only the real backends (docker and bwrap) can honour: limits, network, containment, /proc. The contract
every backend shares, the in-memory fake included (I/O, settle, views, timeouts), is tests/test_sandbox_contract.py."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

from qaflow.sandbox import Limits


def test_harbor_log_folders_exist_before_the_agent_and_any_user_can_write_them(make_sandbox):
    box = make_sandbox()
    listing = box.exec("stat -c '%a %U %n' /logs/agent /logs/verifier /logs/artifacts && ls -A /logs/verifier")
    assert listing.stdout.splitlines() == [f"777 root /logs/{d}" for d in ("agent", "verifier", "artifacts")]
    wrote = box.exec("echo x > /logs/artifacts/mode.txt && echo y > /logs/agent/a.log && echo ok", user="65534")
    assert wrote.stdout.strip() == "ok", wrote.stderr


def test_timeout_kills_the_whole_process_tree(make_sandbox):
    box = make_sandbox()
    start = time.monotonic()
    res = box.exec("(while true; do date +%s%N >> /app/ticks; sleep 0.1; done) & sleep 1000", timeout=1.5)
    assert res.timed_out
    assert time.monotonic() - start < 15
    before = box.exec("wc -l < /app/ticks").stdout.strip()
    time.sleep(0.6)
    after = box.exec("wc -l < /app/ticks").stdout.strip()
    assert before == after, "a child of the timed-out command is still running"


def test_network_is_unreachable_unless_asked(make_sandbox):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    hits: list[object] = []

    def accept() -> None:
        server.settimeout(3)
        with contextlib.suppress(OSError):
            hits.append(server.accept())

    thread = threading.Thread(target=accept)
    thread.start()
    box = make_sandbox()
    probe = (
        "import socket,sys\n"
        "ok=[]\n"
        f"for host,port in [('127.0.0.1',{port}),('1.1.1.1',53),('8.8.8.8',443)]:\n"
        "    s=socket.socket(); s.settimeout(2)\n"
        "    try: s.connect((host,port)); ok.append(host)\n"
        "    except OSError: pass\n"
        "print('connected' if ok else 'isolated', ok)\n"
    )
    box.put("/app/probe.py", probe.encode())
    res = box.exec("python3 /app/probe.py", timeout=30)
    thread.join()
    server.close()
    assert res.stdout.startswith("isolated"), res.stdout + res.stderr
    assert hits == []


def test_memory_limit_kills_the_hog(make_sandbox):
    box = make_sandbox(limits=Limits(memory_mb=256))
    res = box.exec("python3 -c \"b=bytearray(1024*1024*1024); print('allocated')\"", timeout=60)
    assert res.exit_code != 0
    assert "allocated" not in res.stdout
    assert res.oom_killed or "MemoryError" in res.stderr or res.exit_code == 137
    assert box.exec("echo alive").stdout == "alive\n"


def test_fork_bomb_is_contained_by_pids_limit(make_sandbox):
    box = make_sandbox(limits=Limits(pids=64))
    script = (
        "import os,time\n"
        "n=0\n"
        "for _ in range(500):\n"
        "    try:\n"
        "        pid=os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid==0:\n"
        "        time.sleep(30); os._exit(0)\n"
        "    n+=1\n"
        "print(n)\n"
    )
    box.put("/app/bomb.py", script.encode())
    res = box.exec("python3 /app/bomb.py", timeout=20)
    assert res.stdout.strip().isdigit(), res.stdout + res.stderr
    assert int(res.stdout.strip()) < 64
    res = box.exec("bomb(){ bomb | bomb & }; bomb; sleep 60", timeout=5)
    assert not res.ok and res.duration_s < 30
    start = time.monotonic()
    box.close()
    assert time.monotonic() - start < 30, "closing a fork-bombed sandbox must not hang"


def test_stdout_flood_is_capped(make_sandbox):
    box = make_sandbox(limits=Limits(output_bytes=1024 * 1024))
    start = time.monotonic()
    res = box.exec("head -c 104857600 /dev/zero | tr '\\0' 'x'; echo done >&2", timeout=120)
    assert len(res.stdout.encode()) <= 1024 * 1024
    assert res.stdout_truncated and not res.stderr_truncated
    assert res.stderr == "done\n"
    assert time.monotonic() - start < 60


def test_nothing_outside_the_sandbox_changes_on_the_host(make_sandbox, tmp_path: Path):
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    box = make_sandbox()
    targets = [str(victim), "/etc/qaflow-escape", "/root/qaflow-escape", "/usr/qaflow-escape", "/tmp/qaflow-escape"]
    remounts = "mount -o remount,rw,bind /usr 2>/dev/null; mount -o remount,rw,bind /etc 2>/dev/null; "
    cmd = (
        remounts
        + "; ".join(f"echo pwned > {t} 2>/dev/null" for t in targets)
        + "; rm -f /etc/hostname 2>/dev/null; true"
    )
    box.exec(cmd)
    assert victim.read_text() == "original"
    for target in targets[1:]:
        assert not Path(target).exists(), target
    assert Path("/etc/hostname").exists()


def test_kill_strays_leaves_nothing_running_but_the_sandbox(make_sandbox):
    box = make_sandbox()
    res = box.exec(
        "setsid sh -c 'while true; do date +%s%N >> /app/ticks; sleep 0.05; done' >/dev/null 2>&1 & "
        "( setsid sleep 100 & ) ; nohup sleep 100 >/dev/null 2>&1 & (sleep 3; echo late) & echo started"
    )
    assert res.stdout == "started\n" and res.exit_code == 0
    assert res.duration_s < 1.5, "a finished command must not wait for the processes it left"
    box.kill_strays()
    before = box.exec("wc -l < /app/ticks 2>/dev/null || echo 0").stdout
    time.sleep(0.3)
    assert box.exec("wc -l < /app/ticks 2>/dev/null || echo 0").stdout == before, "a stray still runs"
    assert box.kill_strays() == 0
    cmdlines = box.exec("for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done").stdout
    assert "sleep 100" not in cmdlines and "sleep 3" not in cmdlines, cmdlines
    assert box.exec("echo alive").stdout == "alive\n"


def test_storage_limit_stops_a_filler(make_sandbox):
    box = make_sandbox(limits=Limits(storage_mb=64))
    res = box.exec(
        "for i in $(seq 100); do head -c 8000000 /dev/zero > /app/f$i || exit 9; done; echo finished", timeout=60
    )
    assert res.storage_exceeded and not res.ok and "finished" not in res.stdout
    assert "storage limit" in res.stderr
    # A later command that writes little is not blamed for the full disk.
    small = box.exec("echo ok > /app/small && cat /app/small")
    assert (small.stdout, small.storage_exceeded) == ("ok\n", False)
    # Nor is one slow enough to be measured that writes a report (a verifier after a filler)...
    report = box.exec("sleep 0.5; head -c 2000000 /dev/zero > /app/report; sleep 1.5; echo ok")
    assert (report.stdout, report.storage_exceeded) == ("ok\n", False), report.stderr
    # ...but one that goes on filling is stopped.
    refill = box.exec("sleep 0.5; for i in $(seq 100); do head -c 8000000 /dev/zero > /app/g$i; done; echo finished")
    assert refill.storage_exceeded and "finished" not in refill.stdout
