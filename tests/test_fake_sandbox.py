"""The in-memory fake sandbox itself (tests/fake_sandbox.py): what it refuses, its scripted programs, virtual
time, its registration. What it shares with the real backends is tests/test_sandbox_contract.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import qaflow.sandbox as sandboxes
from qaflow.errors import SandboxError, UnsupportedError
from qaflow.sandbox import backend_class, check_backend, register_backend
from tests.fake_sandbox import FakeBackend, FakeSandbox


@pytest.fixture
def any_backend(fake_backend: str) -> str:
    """This file's sandboxes (`make_any_sandbox`) are fakes only."""
    return fake_backend


@pytest.fixture
def box(make_any_sandbox) -> FakeSandbox:
    opened = make_any_sandbox()
    assert isinstance(opened, FakeSandbox)
    return opened


@pytest.mark.parametrize(
    "cmd",
    [
        "case x in x) echo yes;; esac",
        "f() { echo hi; }; f",
        "echo `date`",
        "echo $((1 + 2))",
        "echo ${x%.txt}",
        "bash -c 'echo {a,b}'",
        "echo hi; if true; then",
        "cat <&3",
    ],
)
def test_syntax_outside_the_subset_fails_loudly_and_runs_nothing(box, cmd):
    res = box.exec(cmd)
    assert (res.exit_code, res.stdout) == (2, "")
    assert res.stderr.startswith("fake sandbox: syntax error or unsupported syntax:"), res.stderr
    assert box.unsupported is not None


@pytest.mark.parametrize(
    ("cmd", "code", "named"),
    [
        ("echo before; python3 -c 'print(1)'; echo after", 127, "python3"),
        ("echo before; grep -q x /etc/passwd || echo after", 127, "grep"),
        ("echo before; ls -l /; echo after", 2, "ls: option -l"),
        ("echo before; cat /proc/self/status; echo after", 2, "/proc/self/status"),
        ("echo before; set -x; echo after", 2, "set -x"),
        ("echo before; sh -c 'ln /etc/passwd /tmp/hard'; echo after", 2, "hard links"),
        ("echo before; (sleep 1; stat /tmp) & sleep 2; echo after", 127, "stat"),
    ],
)
def test_a_command_outside_the_subset_ends_the_exec_with_a_named_error(box, cmd, code, named):
    res = box.exec(cmd)
    assert (res.exit_code, res.stdout) == (code, "before\n")
    assert res.stderr.startswith("fake sandbox:") and named in res.stderr, res.stderr


def test_a_missing_file_run_by_path_fails_as_in_sh_and_the_script_goes_on(box):
    res = box.exec("/app/nope.sh; echo rc=$?")
    assert (res.exit_code, res.stdout, res.stderr) == (0, "rc=127\n", "sh: 1: /app/nope.sh: not found\n")
    assert box.unsupported is None


def test_a_scripted_program_gets_its_argv_stdin_env_and_cwd(fake_backend, fake_programs, make_any_sandbox):
    calls = []

    def python3(box, argv, stdin, env, cwd):
        calls.append((argv, stdin, env.get("WHO"), env.get("LOCAL"), cwd))
        return 3, b"out:" + stdin.upper(), b"warned\n"

    fake_programs["python3"] = python3
    box = make_any_sandbox()
    res = box.exec(
        "LOCAL=yes; echo data | python3 -c 'print(1)' 'two words'; echo rc=$?", env={"WHO": "me"}, cwd="/tmp"
    )
    assert (res.exit_code, res.stdout, res.stderr) == (0, "out:DATA\nrc=3\n", "warned\n")
    assert calls == [(["python3", "-c", "print(1)", "two words"], b"data\n", "me", None, "/tmp")]
    box.put("/app/tool.py", b"#!/usr/bin/env python3\nprint('hi')\n")
    box.exec("chmod +x /app/tool.py && ./tool.py arg")
    assert calls[-1][0] == ["python3", "./tool.py", "arg"]  # the file run by path: its interpreter's program
    assert box.exec(["/usr/bin/python3", "-V"]).exit_code == 3


def test_a_program_runs_in_the_build_and_an_unsupported_run_step_is_unsupported(
    fake_backend, fake_programs, make_any_sandbox
):
    fake_programs["pip"] = lambda box, argv, stdin, env, cwd: (0, b"installed " + argv[-1].encode() + b"\n", b"")
    box = make_any_sandbox("FROM python:3.11-slim\nWORKDIR /app\nRUN pip install requests > /app/pip.log\n")
    assert box.get("/app/pip.log") == b"installed requests\n"
    with pytest.raises(UnsupportedError, match="apt-get: command not found"):
        make_any_sandbox("FROM python:3.11-slim\nRUN apt-get install -y git\n")


def test_time_is_virtual(box):
    start = time.monotonic()
    res = box.exec("sleep 1000", timeout=5)
    assert (res.timed_out, res.exit_code, res.duration_s) == (True, 137, 5.0)
    box.exec("while true; do echo x >> /app/ticks; sleep 1; done >/dev/null 2>&1 &")
    assert box.exec("wc -l < /app/ticks").stdout == "1\n"  # up to its first sleep, at once
    done = box.exec("sleep 3.5; wc -l < /app/ticks")
    assert (done.stdout, done.duration_s) == ("4\n", 3.5)  # woke at 1, 2 and 3
    assert box.exec("wc -l < /app/ticks").stdout == "4\n"  # no time passes between execs
    assert box.processes == 1 and box.kill_strays() == 1
    assert time.monotonic() - start < 1
    forever = box.exec("sleep infinity")
    assert forever.exit_code == 2 and "never ends" in forever.stderr


def test_links_resolve_inside_the_fake_and_a_loop_is_an_error(box, tmp_path: Path):
    box.exec("ln -s ../../../../../.. /app/up && ln -s /etc/passwd /app/pw && ln -s /app/loop /app/loop")
    assert box.exec("ls /app/up").stdout == box.exec("ls /").stdout
    assert box.get("/app/up/etc/hostname") == b"fake\n"
    assert box.exec("cat /app/pw").stdout.startswith("root:x:0:0:")
    looped = box.exec("cat /app/loop")
    assert looped.exit_code == 1 and "Too many levels of symbolic links" in looped.stderr
    box.get_dir("/app", tmp_path / "out")
    assert (tmp_path / "out" / "pw").is_symlink() and str((tmp_path / "out" / "pw").readlink()) == "/etc/passwd"


def test_users_env_and_closing(box):
    assert box.exec("id -u", user="nobody").stdout == "65534\n"
    assert box.exec("id -u", user="1000:1000").stdout == "1000\n"
    with pytest.raises(SandboxError, match="no user"):
        box.exec("true", user="alice")
    with pytest.raises(SandboxError, match="does not exist"):
        box.exec("true", cwd="/nope")
    path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert box.exec("echo $PATH $HOME $LANG").stdout == f"{path} /root C.UTF-8\n"
    box.exec("sleep 5 &")
    assert FakeBackend.reap("pytest") >= 1
    with pytest.raises(SandboxError, match="closed"):
        box.exec("true")
    box.close()


def test_register_backend_adds_test_doubles_but_never_replaces_a_real_backend(fake_backend, monkeypatch):
    assert backend_class(fake_backend) is FakeBackend
    assert check_backend(fake_backend) == (True, "in-memory fake")
    for name in ("docker", "bwrap"):
        with pytest.raises(ValueError, match="built in"):
            register_backend(name, "tests.fake_sandbox:FakeBackend")
    with pytest.raises(ValueError, match="module:attr"):
        register_backend("other", "tests.fake_sandbox")
    with pytest.raises(ValueError, match="letters"):
        register_backend("auto", "tests.fake_sandbox:FakeBackend")
    monkeypatch.setattr(sandboxes, "_BACKENDS", dict(sandboxes._BACKENDS))
    register_backend("other", "tests.fake_sandbox:FakeBackend")
    assert backend_class("other") is FakeBackend


def test_the_registry_is_restored_after_a_test_that_registered_the_fake():
    assert "fake" not in sandboxes._BACKENDS
