"""The `Sandbox` contract (docs/contracts.md, "Sandboxes"), run alike on the in-memory fake, bwrap and docker:
what unit tests learn from the fake holds on the real backends. Every command here stays in the fake's shell
subset (tests/fake_sandbox.py); the cases only the real backends can honour (memory, pids, network, storage,
escapes, /proc) are in tests/test_sandbox_conformance.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qaflow.errors import BuildError
from qaflow.sandbox import Limits, backend_class
from qaflow.sandbox.base import Sandbox, SandboxBackend


def test_the_backend_and_its_sandboxes_have_every_member_of_the_protocols(make_any_sandbox, any_backend: str):
    box = make_any_sandbox()
    assert isinstance(box, Sandbox)
    roots = box.writable_roots
    assert roots and all(r.startswith("/") for r in roots)
    assert any(box.workdir == r or box.workdir.startswith(r.rstrip("/") + "/") for r in roots), roots
    backends = backend_class(any_backend)()
    assert isinstance(backends, SandboxBackend)
    stand_ins = backends.stand_ins(box.spec)  # type: ignore[attr-defined]
    pythons = {ref: backends.python_version(local) for ref, local in stand_ins.items()}
    if any_backend == "docker":  # no registry here: python:3.11-slim is built from a local stand-in with a python3
        assert list(pythons) == ["python:3.11-slim"] and re.fullmatch(r"3\.\d+", pythons["python:3.11-slim"] or "")
    else:
        assert stand_ins == {}


def test_exec_reports_exit_code_streams_env_and_cwd(make_any_sandbox):
    box = make_any_sandbox()
    res = box.exec("echo out; echo err >&2; exit 3")
    assert (res.exit_code, res.stdout, res.stderr, res.timed_out) == (3, "out\n", "err\n", False)
    assert box.exec("echo $FOO", env={"FOO": "bar"}).stdout == "bar\n"
    assert box.exec("pwd").stdout.strip() == box.workdir == "/app"
    assert box.exec(["pwd"], cwd="/tmp").stdout.strip() == "/tmp"


def test_dockerfile_env_workdir_copy_and_run_apply(make_any_sandbox):
    box = make_any_sandbox(
        "FROM python:3.11-slim\nWORKDIR /srv/work\nENV GREETING=hello\nCOPY data.txt ./data.txt\n"
        "RUN echo built > /srv/work/built.txt\n",
        files={"data.txt": "payload\n"},
    )
    assert box.workdir == "/srv/work"
    assert box.exec("echo $GREETING; cat data.txt built.txt").stdout == "hello\npayload\nbuilt\n"


def test_a_failing_run_step_is_a_build_error_with_its_output(make_any_sandbox):
    with pytest.raises(BuildError) as caught:
        make_any_sandbox("FROM python:3.11-slim\nWORKDIR /app\nRUN echo \"run-\"'output' && exit 3\n")
    assert "run-output" in caught.value.log_tail  # the step's own output (its text reads "run-"'output')


def test_put_get_roundtrip_bytes_and_dirs(make_any_sandbox, tmp_path: Path):
    box = make_any_sandbox()
    blob = bytes(range(256)) * 100
    box.put("/app/blob.bin", blob)
    assert box.get("/app/blob.bin") == blob
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("A")
    (src / "sub" / "b.sh").write_text("#!/bin/sh\necho B\n")
    (src / "sub" / "b.sh").chmod(0o755)
    box.put("/tests", src)
    assert box.exec("cat /tests/a.txt; /tests/sub/b.sh").stdout == "AB\n"
    box.exec("mkdir -p /app/out/deep && echo x > /app/out/deep/f.txt")
    dest = tmp_path / "dest"
    box.get_dir("/app/out", dest)
    assert (dest / "deep" / "f.txt").read_text() == "x\n"
    with pytest.raises(FileNotFoundError):
        box.get("/app/does-not-exist")


def test_put_keeps_modes_and_get_tells_a_folder_from_a_missing_file(make_any_sandbox, tmp_path: Path):
    box = make_any_sandbox()
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho ran $1\n")
    script.chmod(0o755)
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/sh\necho never\n")
    plain.chmod(0o644)
    box.put("/app/bin/run.sh", script)
    box.put("/app/bin/plain.sh", plain)
    assert box.exec("/app/bin/run.sh arg").stdout == "ran arg\n"
    refused = box.exec("/app/bin/plain.sh")
    assert (refused.exit_code, refused.stdout) == (126, "")  # not executable: mode 0644 kept
    assert box.get("/app/bin/run.sh") == script.read_bytes()
    with pytest.raises(IsADirectoryError):
        box.get("/app/bin")
    with pytest.raises(FileNotFoundError):
        box.get_dir("/app/no-such-folder", tmp_path / "out")


def test_kill_strays_clears_paths_without_following_links(make_any_sandbox):
    box = make_any_sandbox()
    made = box.exec(
        "mkdir -p /tests/sub /logs /app/keep && touch /tests/a /tests/.hidden /tests/sub/b /app/keep/k"
        " && ln -s /app/keep /tests/link && rm -rf /logs/verifier && ln -s /app/keep /logs/verifier"
        " && [ -L /logs/verifier ] && ls /logs/verifier/"
    )
    assert made.stdout == "k\n", made.stderr  # /logs/verifier itself is the link (the log folders exist at start)
    box.kill_strays(clear=["/tests", "/logs/verifier"])
    res = box.exec(
        "ls -A /tests 2>/dev/null | wc -l; [ -e /logs/verifier ] || [ -L /logs/verifier ] || echo gone; ls /app/keep"
    )
    assert res.stdout.split() == ["0", "gone", "k"], res.stdout + res.stderr


def test_read_first_text_takes_the_first_regular_file_and_follows_no_link(make_any_sandbox):
    box = make_any_sandbox()
    names = ("reward.json", "reward.txt")
    assert box.read_first_text("/logs/verifier", names) is None  # no folder yet
    box.exec("mkdir -p /logs/verifier && printf '0.5\\n' > /logs/verifier/reward.txt")
    assert box.read_first_text("/logs/verifier", names) == ("reward.txt", "0.5\n")
    box.exec("""printf '{"reward": 1}' > /logs/verifier/reward.json""")
    assert box.read_first_text("/logs/verifier", names) == ("reward.json", '{"reward": 1}')
    box.exec("echo 1 > /app/elsewhere && ln -sf /app/elsewhere /logs/verifier/reward.json")
    assert box.read_first_text("/logs/verifier", names) == ("reward.txt", "0.5\n")  # the link is not a reward
    box.exec("rm -rf /logs/verifier && mkdir -p /app/fake && echo 1 > /app/fake/reward.txt")
    box.exec("ln -s /app/fake /logs/verifier")
    assert box.read_first_text("/logs/verifier", names) is None  # nor is a linked folder


@pytest.mark.parametrize("user", ["0", "nobody"])
def test_exec_when_settled_runs_nothing_while_processes_run_else_clears_uploads_and_runs(
    make_any_sandbox, tmp_path, user
):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text("echo fresh\n")
    box = make_any_sandbox()
    box.exec(
        "mkdir -p /tests /logs/verifier && echo planted > /tests/test.sh && echo forged > /logs/verifier/reward.txt"
    )
    box.exec("chmod -R a+rwX /tests /logs")
    box.exec("setsid sleep 30 >/dev/null 2>&1 &")
    cmd = "cat /tests/test.sh; ls -A /logs/verifier | wc -l; echo $(id -u)"
    clear = ["/tests", "/logs/verifier"]
    running = box.exec_when_settled(cmd, clear=clear, uploads=[("/tests", tests)], user=user)
    assert running == 1
    assert box.exec("cat /tests/test.sh /logs/verifier/reward.txt").stdout == "planted\nforged\n"  # nothing changed

    box.kill_strays()
    ran = box.exec_when_settled(cmd, clear=clear, uploads=[("/tests", tests)], user=user)
    assert not isinstance(ran, int)
    assert ran.exit_code == 0, ran.stderr
    uid = "0" if user == "0" else box.exec("id -u nobody").stdout.strip()
    assert ran.stdout.split() == ["echo", "fresh", "0", uid]  # the uploaded test.sh, an empty logs folder

    left = box.exec_when_settled(
        "setsid sh -c 'sleep 1; echo late > /logs/verifier/reward.txt' >/dev/null 2>&1 & echo started",
        clear=clear,
        uploads=[],
        user=user,
    )
    assert not isinstance(left, int) and left.strays_killed >= 1  # what the command leaves is killed with it
    box.exec("sleep 1.5")  # the fake's clock moves only with its own sleeps
    assert box.exec("cat /logs/verifier/reward.txt 2>/dev/null || echo none").stdout == "none\n"


def test_settle_counts_what_runs_and_kill_strays_ends_it(make_any_sandbox):
    box = make_any_sandbox()
    started = box.exec("setsid sleep 30 >/dev/null 2>&1 & echo started")
    assert (started.exit_code, started.stdout, started.strays_killed) == (0, "started\n", 0)
    assert box.settle() == 1  # a server the agent left: nothing is changed
    assert box.settle() == 1
    assert box.kill_strays() >= 1
    assert box.settle() == 0
    assert box.kill_strays() == 0
    assert box.exec("echo alive").stdout == "alive\n"


def test_exec_kill_strays_after_kills_what_the_command_left(make_any_sandbox):
    box = make_any_sandbox()
    res = box.exec("setsid sleep 30 >/dev/null 2>&1 & echo started", kill_strays_after=True)
    assert (res.exit_code, res.stdout, res.strays_killed) == (0, "started\n", 1)
    assert box.settle() == 0
    writer = box.exec(
        "(sleep 1; echo late > /app/late.txt) >/dev/null 2>&1 & echo /app/early.txt > /app/early.txt",
        kill_strays_after=True,
    )
    assert writer.strays_killed >= 1
    box.exec("sleep 1.5")
    assert box.exec("cat /app/early.txt; cat /app/late.txt 2>/dev/null || echo no-late").stdout == (
        "/app/early.txt\nno-late\n"
    )
    quiet = box.exec("echo nothing left", kill_strays_after=True)
    assert quiet.strays_killed == 0


def test_verifier_view_copies_the_files_but_no_process_and_is_independent(make_any_sandbox):
    box = make_any_sandbox()
    box.exec("mkdir -p /app/data && echo agent > /app/data/f.txt && ln -s /app/data/f.txt /app/link")
    box.exec("setsid sleep 30 >/dev/null 2>&1 &")  # the verifier gets a view when services are left running
    with box.verifier_view() as view:
        assert view.workdir == box.workdir
        assert view.exec("cat /app/data/f.txt /app/link").stdout == "agent\nagent\n"
        assert view.settle() == 0  # none of the agent's processes
        view.exec("echo view > /app/data/f.txt && touch /app/only-in-view")
        box.exec("echo box-later > /app/data/g.txt")
        assert view.exec("ls /app/data; [ -e /app/only-in-view ] && echo mine").stdout == "f.txt\nmine\n"
        assert box.exec("cat /app/data/f.txt; [ -e /app/only-in-view ] || echo not-here").stdout == (
            "agent\nnot-here\n"
        )
    assert box.settle() == 1  # the sandbox itself is unchanged: its process still runs
    box.kill_strays()


def test_a_foreground_sleep_past_the_timeout_is_timed_out(make_any_sandbox):
    box = make_any_sandbox()
    res = box.exec(
        "(sleep 0.5; echo tick > /app/tick) & (sleep 2; echo late > /app/late) & echo before; sleep 30; echo after",
        timeout=1,
    )
    assert (res.timed_out, res.exit_code, res.stdout, res.ok) == (True, 137, "before\n", False)
    assert 1 <= res.duration_s < 15
    box.exec("sleep 1.5")
    after = box.exec("cat /app/tick; [ -e /app/late ] || echo no-late")
    assert after.stdout == "tick\nno-late\n", "the timeout kills the command's tree, nothing done before it"
    assert box.exec("echo alive").stdout == "alive\n"


def test_output_over_the_limit_is_cut_with_the_flag(make_any_sandbox):
    box = make_any_sandbox(limits=Limits(output_bytes=10))
    res = box.exec("printf 0123456789abcdef; echo err >&2")
    assert (res.stdout, res.stdout_truncated, res.stderr, res.stderr_truncated) == ("0123456789", True, "err\n", False)
    both = box.exec("printf 0123456789 >&2; printf 0123456789x >&2; echo out")
    assert (both.stdout, both.stderr, both.stderr_truncated) == ("out\n", "0123456789", True)
    exact = box.exec("printf 0123456789")
    assert (exact.stdout, exact.stdout_truncated) == ("0123456789", False)
    # the cap is the commands' output, not the sandbox's own reads: a trial with it still settles and reads rewards
    box.exec("mkdir -p /logs/verifier && printf '{\"reward\": 0.25}' > /logs/verifier/reward.json")
    assert box.settle() == 0
    assert box.read_first_text("/logs/verifier", ("reward.json",)) == ("reward.json", '{"reward": 0.25}')


SHELL_CASES = [
    ("echo a; echo b >&2; exit 300", 44, "a\n"),
    ("false; echo $?; true && echo t || echo f; false || echo f2; ! false && echo neg", 0, "1\nt\nf2\nneg\n"),
    (
        'x=\'a  b\'; echo $x; echo "$x"; y=; echo "[$y]" [${y:-d}] [${y-d}] [${z-d}] [${x:+set}] ${#x}',
        0,
        "a b\na  b\n[] [d] [] [d] [set] 4\n",
    ),
    (
        'set -- 1 \'2 3\' 4; echo $#; for a in "$@"; do echo "<$a>"; done; for a in $@; do echo "($a)"; done',
        0,
        "3\n<1>\n<2 3>\n<4>\n(1)\n(2)\n(3)\n(4)\n",
    ),
    (
        "echo 'single $HOME' \"double $HOME\" \\$HOME esc\\ aped ~",
        0,
        "single $HOME double /root $HOME esc aped /root\n",
    ),
    ("printf '%s|%5s|%-3d|%03d|%x|%%\\n' a b 7 7 255; printf '%s\\n' x y", 0, "a|    b|7  |007|ff|%\nx\ny\n"),
    ("echo 'a\\tb'; bash -c \"echo 'a\\tb'; echo -e 'c\\td'\"", 0, "a\tb\na\\tb\nc\td\n"),
    (
        "mkdir -p /tmp/d/e && cd /tmp/d/e && pwd && cd .. && pwd; cd /nonexistent 2>/dev/null; echo $?",
        0,
        "/tmp/d/e\n/tmp/d\n2\n",
    ),
    (
        "cd /tmp && mkdir -p s/t && touch s/b s/.h s/a && ls s; ls -A s; ls nothere 2>/dev/null; echo $?",
        0,
        "a\nb\nt\n.h\na\nb\nt\n2\n",
    ),
    (
        "cd /tmp && echo one > f && echo two >> f && cat f && wc -l f && wc -l < f && cat f | wc -l",
        0,
        "one\ntwo\n2 f\n2\n2\n",
    ),
    ("cd /tmp && touch ga gb .gh && echo g* 'g*' g? /tmp/g[a] nomatch*", 0, "ga gb g* ga gb /tmp/ga nomatch*\n"),
    ("if false; then echo 1; elif true; then echo 2; else echo 3; fi; if false; then :; fi; echo $?", 0, "2\n0\n"),
    ('i=; while [ "$i" != xx ]; do i=${i}x; echo $i; done; for j in 1 2; do printf $j; done; echo', 0, "x\nxx\n12\n"),
    (
        "(cd /tmp; x=1; echo in $x); echo out $x; pwd; { echo g1; echo g2; } > /tmp/g; cat /tmp/g",
        0,
        "in 1\nout\n/app\ng1\ng2\n",
    ),
    ("echo $(echo a; echo b) \"$(printf 'x\\n\\n')\"; x=$(exit 7); echo $?", 0, "a b x\n7\n"),
    ("cat <<EOF\nv=$HOME $(echo sub)\nEOF\ncat <<'EOF'\nv=$HOME\nEOF", 0, "v=/root sub\nv=$HOME\n"),
    ("set -e; false && echo no; echo b; if false; then :; fi; false; echo never", 1, "b\n"),
    ("set -u; echo ${unset_var:-ok}; echo $unset_var; echo never", 2, "ok\n"),
    ("bash -c 'set -euo pipefail; false | true; echo unreached'; echo rc=$?", 0, "rc=1\n"),
    ("export A=1; B=2; sh -c 'echo [$A][$B]'; C=3 sh -c 'echo [$C] $0 $1' zero one", 0, "[1][]\n[3] zero one\n"),
    (
        "printf '#!/bin/sh\\necho shebang $#\\n' > /tmp/t.sh; chmod 755 /tmp/t.sh; /tmp/t.sh a b; "
        "/tmp/nope.sh 2>/dev/null; echo $?",
        0,
        "shebang 2\n127\n",
    ),
    (
        "ln -s /tmp/tgt /tmp/l && echo x > /tmp/l && cat /tmp/tgt && [ -L /tmp/l ] && rm /tmp/l && cat /tmp/tgt",
        0,
        "x\nx\n",
    ),
    (
        "mkdir -p /tmp/k/in && ln -s /tmp/k /tmp/lk && rm -rf /tmp/lk && ls /tmp/k && rm /tmp/k 2>/dev/null; echo $?",
        0,
        "in\n1\n",
    ),
    ("cd /tmp && mkdir -p fd/a && touch fd/a/f fd/g && find fd -mindepth 1 -delete && ls -A fd | wc -l", 0, "0\n"),
    ("timeout 0.2 sleep 5; echo $?; sleep 0.1 & echo bg; wait; echo waited", 0, "124\nbg\nwaited\n"),
    ("id -u; id -u nobody; echo x > /dev/null; cat /dev/null; echo $?", 0, "0\n65534\n0\n"),
]


def test_the_shell_subset_means_what_sh_means(make_any_sandbox):
    """Each snippet gives the same stdout and exit code on the fake as under the real backends' sh (dash) and bash."""
    box = make_any_sandbox()
    got = [(cmd, *_outcome(box.exec(cmd, timeout=30))) for cmd, _, _ in SHELL_CASES]
    assert got == [(cmd, code, out) for cmd, code, out in SHELL_CASES]


def _outcome(res) -> tuple[int, str]:
    return res.exit_code, res.stdout
