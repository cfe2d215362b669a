"""The bwrap backend beyond the shared conformance suite: the Dockerfile subset, the image cache,
path confinement of put/get, cleanup, and the rlimit fallback."""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from qaflow.errors import BuildError, SandboxError, UnsupportedError
from qaflow.sandbox import Limits, SandboxSpec
from qaflow.sandbox.bwrap import cgroups
from qaflow.sandbox.bwrap.backend import BwrapBackend, BwrapSandbox
from qaflow.sandbox.bwrap.rootfs import host_pytest_plugins, host_root
from qaflow.task import tree_hash
from tests.conftest import require_backend

pytestmark = pytest.mark.bwrap

Opener = Callable[..., BwrapSandbox]


@pytest.fixture
def backend(tmp_path: Path) -> BwrapBackend:
    require_backend("bwrap")
    return BwrapBackend(cache_dir=tmp_path / "cache")


@pytest.fixture
def make_context(tmp_path: Path) -> Callable[..., Path]:
    def make(dockerfile: str | None, files: dict[str, str] | None = None) -> Path:
        ctx = tmp_path / f"ctx-{uuid.uuid4().hex[:8]}"
        ctx.mkdir()
        if dockerfile is not None:
            (ctx / "Dockerfile").write_text(dockerfile)
        for rel, text in (files or {}).items():
            (ctx / rel).parent.mkdir(parents=True, exist_ok=True)
            (ctx / rel).write_text(text)
        return ctx

    return make


def spec_for(ctx: Path, **kwargs: object) -> SandboxSpec:
    return SandboxSpec(name="bwrap-test", context_dir=ctx, env_hash=tree_hash(ctx), **kwargs)


@pytest.fixture
def open_box(backend: BwrapBackend, make_context: Callable[..., Path]) -> Iterator[Opener]:
    boxes: list[BwrapSandbox] = []

    def opener(dockerfile: str = "FROM python:3.11-slim\nWORKDIR /app\n", files=None, **kwargs) -> BwrapSandbox:
        box = backend.open(spec_for(make_context(dockerfile, files), **kwargs))
        boxes.append(box)
        return box

    yield opener
    for box in boxes:
        box.close()


# -- the Dockerfile subset ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("USER nobody", "USER nobody"),
        ("VOLUME /data", "VOLUME"),
        ("ADD https://example.com/x.tar.gz /app/", "URL"),
        ("COPY --from=builder /out /app/", "--from"),
        ("FROM debian:12", "multi-stage"),
        ("ONBUILD RUN true", "ONBUILD"),
        ("RUN --mount=type=cache,target=/root/.cache true", "--mount"),
    ],
)
def test_unsupported_instruction_names_file_line_and_docker(backend, make_context, line: str, what: str):
    ctx = make_context(f"FROM python:3.11-slim\nWORKDIR /app\n{line}\n")
    with pytest.raises(UnsupportedError) as info:
        backend.open(spec_for(ctx))
    message = str(info.value)
    assert f"{ctx / 'Dockerfile'}:3" in message
    assert what in message and "needs the docker backend" in message


def test_prebuilt_image_without_dockerfile_needs_docker(backend, make_context):
    ctx = make_context(None)
    with pytest.raises(UnsupportedError, match="needs the docker backend"):
        backend.open(spec_for(ctx, docker_image="ghcr.io/some/image:1"))


def test_harmless_instructions_are_ignored_and_user_root_is_fine(open_box):
    box = open_box(
        "# syntax=docker/dockerfile:1\nFROM python:3.11-slim AS base\nLABEL a=b\nEXPOSE 8080\nUSER root\n"
        'WORKDIR /app\nCMD ["python3"]\nENTRYPOINT ["/bin/sh"]\n'
    )
    assert box.exec("pwd").stdout == "/app\n"


@pytest.mark.parametrize("source", ["../outside.txt", "/../outside.txt", "link.txt"])
def test_copy_from_outside_the_context_is_rejected(backend, make_context, tmp_path: Path, source: str):
    (tmp_path / "outside.txt").write_text("secret")
    ctx = make_context(f"FROM python:3.11-slim\nCOPY {source} /app/\n")
    (ctx / "link.txt").symlink_to(tmp_path / "outside.txt")
    with pytest.raises(BuildError, match="outside the build context"):
        backend.open(spec_for(ctx))


def test_run_is_cached_per_env_hash_and_sandboxes_do_not_share_state(backend, make_context, tmp_path: Path):
    ctx = make_context("FROM python:3.11-slim\nWORKDIR /app\nRUN date +%s%N > stamp && echo built >> runs\n")
    spec = spec_for(ctx)
    with backend.open(spec) as first:
        stamp = first.get("/app/stamp")
        first.exec("echo tampered > /app/stamp; echo again >> /app/runs")
    assert (tmp_path / "cache" / spec.env_hash / "meta.json").is_file()
    with BwrapBackend(cache_dir=tmp_path / "cache").open(spec) as second:
        assert second.get("/app/stamp") == stamp, "the RUN step ran again (or state leaked from a sandbox)"
        assert second.get("/app/runs") == b"built\n"
    assert not list((tmp_path / "cache").glob(".build-*")), "a build temp folder was left behind"


def test_failed_build_caches_nothing_and_shows_the_log(backend, make_context, tmp_path: Path):
    ctx = make_context("FROM python:3.11-slim\nWORKDIR /app\nRUN echo about-to-fail >&2 && exit 3\n")
    with pytest.raises(BuildError) as info:
        backend.open(spec_for(ctx))
    assert "Dockerfile:3" in str(info.value) and "exited 3" in str(info.value)
    assert "about-to-fail" in info.value.log_tail
    assert not any((tmp_path / "cache").iterdir())


def test_arg_env_substitution(open_box):
    box = open_box(
        "ARG BASE=python:3.11-slim\nFROM $BASE\nARG NAME=world\nARG EMPTY\n"
        'ENV GREETING="hello ${NAME}" PLAIN=$NAME\n'
        "ENV LEGACY value with spaces\n"
        "ENV DEFAULTED=${EMPTY:-fallback} ALT=${NAME:+set} SINGLE='$NAME' ESCAPED=\\$NAME\n"
        "ENV PATH=/opt/tools:$PATH\n"
        "WORKDIR /srv/${NAME}\n"
        'RUN echo "$NAME|$GREETING" > from_run.txt\n',
        env={"PLAIN": "from-spec"},
    )
    assert box.workdir == "/srv/world"
    assert box.get("/srv/world/from_run.txt") == b"world|hello world\n"
    out = box.exec('echo "$GREETING|$PLAIN|$LEGACY|$DEFAULTED|$ALT|$SINGLE|$ESCAPED|${NAME:-no-arg-at-runtime}"').stdout
    assert out == "hello world|from-spec|value with spaces|fallback|set|$NAME|$NAME|no-arg-at-runtime\n"
    assert box.exec("echo $PATH").stdout.startswith("/opt/tools:")
    assert box.exec("echo $PLAIN", env={"PLAIN": "from-exec"}).stdout == "from-exec\n"


def test_copy_semantics_dockerignore_chmod_and_new_roots(open_box):
    box = open_box(
        "FROM python:3.11-slim\nWORKDIR /app\nCOPY src/ ./src/\nCOPY a.txt b.txt /opt/data/\n"
        "COPY --chmod=755 tool.sh /opt/bin/tool\nCOPY . /srv/ctx\n",
        files={
            "src/main.py": "print('main')\n",
            "src/pkg/mod.py": "",
            "a.txt": "A",
            "b.txt": "B",
            "tool.sh": "#!/bin/sh\necho tool\n",
            "secret.key": "nope",
            ".dockerignore": "secret.key\n**/*.pyc\n",
        },
    )
    assert box.exec("python3 src/main.py; cat /opt/data/a.txt /opt/data/b.txt; /opt/bin/tool").stdout == (
        "main\nABtool\n"
    )
    assert box.exec("test -f src/pkg/mod.py && test ! -e /srv/ctx/secret.key && test -f /srv/ctx/a.txt").ok
    box.exec("echo changed > /opt/data/a.txt")
    assert box.get("/opt/data/a.txt") == b"changed\n"


def test_copy_into_read_only_host_paths_needs_docker(backend, make_context):
    ctx = make_context("FROM python:3.11-slim\nCOPY tool.sh /usr/local/bin/tool\n", {"tool.sh": "echo\n"})
    with pytest.raises(UnsupportedError, match=r"Dockerfile:2.*read-only /usr.*needs the docker backend"):
        backend.open(spec_for(ctx))


def test_run_writing_to_usr_leaves_the_host_untouched(backend, make_context, open_box):
    target = Path(f"/usr/qaflow-bwrap-test-{uuid.uuid4().hex[:8]}")
    ctx = make_context(f"FROM python:3.11-slim\nRUN echo pwned > {target}\n")
    with pytest.raises(UnsupportedError, match=r"Dockerfile:2: RUN writes outside the writable paths"):
        backend.open(spec_for(ctx))
    assert not target.exists()
    box = open_box(f"FROM python:3.11-slim\nRUN echo pwned > {target} || true; mount -o remount,rw /usr || true\n")
    res = box.exec(f"touch {target}; mount -o remount,rw,bind /usr && touch {target}; echo done")
    assert res.stdout == "done\n"
    assert not target.exists()


# -- files: confinement ------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/app/../etc/passwd", "relative/file", "/etc/qaflow-escape", "/usr/x", "/proc/x"])
def test_put_outside_the_writable_folders_is_rejected(open_box, path: str):
    box = open_box()
    with pytest.raises(SandboxError):
        box.put(path, b"x")
    assert not Path("/etc/qaflow-escape").exists()


def test_symlinks_planted_in_the_sandbox_cannot_reach_the_host(open_box, tmp_path: Path):
    host_secret = tmp_path / "host-secret.txt"
    host_secret.write_text("host data")
    host_dir = tmp_path / "host-dir"
    host_dir.mkdir()
    box = open_box()
    planted = (
        f"ln -s {host_secret} /app/to-secret; ln -s {host_dir} /app/to-dir; ln -s / /app/root;"
        " ln -s ../../../../../.. /app/up; mkdir -p /tests; ln -s /usr /tests/sub"
    )
    assert box.exec(planted).ok
    with pytest.raises(FileNotFoundError):
        box.get("/app/to-secret")
    box.put("/app/to-dir/new.txt", b"inside")
    assert not (host_dir / "new.txt").exists()
    assert box.exec(f"cat {host_dir}/new.txt").stdout == "inside"
    box.put("/app/root/tmp/x.txt", b"tmp")
    assert box.exec("cat /tmp/x.txt").stdout == "tmp"
    with pytest.raises(SandboxError, match="not writable"):
        box.put("/app/up/etc/evil", b"x")
    src = tmp_path / "tests-src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "t.sh").write_text("echo t\n")
    box.put("/tests", src)
    assert box.exec("test -d /tests/sub && ! test -L /tests/sub && cat /tests/sub/t.sh").stdout == "echo t\n"
    assert not Path("/usr/t.sh").exists()
    box.put("/app/to-secret", b"replaced")
    assert host_secret.read_text() == "host data"
    assert box.get("/app/to-secret") == b"replaced"


def test_get_reads_read_only_host_pieces_and_refuses_what_the_host_cannot_see(open_box, tmp_path: Path):
    box = open_box()
    assert box.get("/etc/hostname") == Path("/etc/hostname").read_bytes()
    with pytest.raises(SandboxError):
        box.get("/proc/self/status")
    with pytest.raises(FileNotFoundError):
        box.get("/app/missing")
    box.exec("mkfifo /app/fifo; mkdir -p /app/out; mkfifo /app/out/pipe; echo x > /app/out/f")
    with pytest.raises(SandboxError, match="not a regular file"):
        box.get("/app/fifo")
    box.get_dir("/app/out", tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["f"]


def test_put_keeps_modes_and_exec_rejects_a_missing_cwd(open_box, tmp_path: Path):
    box = open_box()
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o750)
    box.put("/solution/run.sh", script)
    assert box.exec("/solution/run.sh; stat -c %a /solution/run.sh").stdout == "ran\n750\n"
    with pytest.raises(SandboxError, match="does not exist"):
        box.exec("pwd", cwd="/app/nope")


def test_the_host_tree_is_private_and_setuid_bits_never_leave(open_box, tmp_path: Path):
    box = open_box()
    assert box.exec("cp /bin/true /app/t && chmod u+s /app/t").ok, "sandboxed root can make setuid files"
    assert stat.S_IMODE(os.stat(box.host_dir).st_mode) == 0o700, "other host users must not reach them"
    box.get_dir("/app", tmp_path / "out")
    assert not os.stat(tmp_path / "out" / "t").st_mode & (stat.S_ISUID | stat.S_ISGID)


# -- lifecycle and limits ----------------------------------------------------------------------


def test_close_removes_the_temp_folders_and_cgroups(open_box):
    box = open_box()
    box.exec("echo x > /app/f; sleep 0.01")
    folder, groups = box.host_dir, box.cgroup_dirs
    assert folder.is_dir() and all(g.is_dir() for g in groups.values())
    box.close()
    box.close()
    assert not folder.exists()
    assert not [g for g in groups.values() if g.exists()]
    with pytest.raises(SandboxError, match="closed"):
        box.exec("true")


def test_kill_strays_kills_a_running_command_and_empties_the_groups(open_box):
    box = open_box()
    assert box.kill_strays() == 0
    results: list[object] = []
    runner = threading.Thread(target=lambda: results.append(box.exec("sleep 30 & sleep 30", timeout=60)))
    runner.start()
    deadline = time.monotonic() + 10
    while not box.cgroup_dirs.get("pids") or not cgroups.CgroupSet("x", dirs=box.cgroup_dirs).pids():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    assert box.kill_strays() >= 1
    runner.join(timeout=10)
    assert not runner.is_alive() and results and not results[0].ok
    assert cgroups.CgroupSet("x", dirs=box.cgroup_dirs).pids() == []


def test_host_secrets_are_masked_and_global_proc_files_read_only(open_box):
    box = open_box()
    masks = dict(host_root().masks)
    if Path("/etc/shadow").is_file():
        assert masks["/etc/shadow"] == "/dev/null"
    res = box.exec(
        "cat /etc/shadow 2>/dev/null | wc -c; find /etc/docker /etc/ssh -mindepth 1 2>/dev/null | wc -l; "
        "awk '$5 == \"/proc/sys\" {print $6}' /proc/self/mountinfo"
    )
    size, listed, sys_mount = res.stdout.split()
    assert (size, listed) == ("0", "0")
    assert sys_mount.startswith("ro,"), "the host's sysctls must not be writable"


@pytest.mark.parametrize("layout", ["lib/python3.11/site-packages", "lib/python3/dist-packages"])
def test_host_pytest_plugins_are_the_distributions_that_register_one(tmp_path: Path, layout: str):
    site = tmp_path / layout
    sections = {
        "pytest-9.0.3": "[console_scripts]\npytest = pytest:console_main\n",
        "hypothesis-6.1": "[console_scripts]\nhypothesis = x:main\n\n[pytest11]\nhypothesispytest = _p\n",
        "pytest_benchmark-5.2": "[pytest11]\nbenchmark = pytest_benchmark.plugin\n",
        "rich-13": "[rich.x]\npytest11 = not.a.section\n",
    }
    for dist, text in sections.items():
        (site / f"{dist}.dist-info").mkdir(parents=True)
        (site / f"{dist}.dist-info" / "entry_points.txt").write_text(text)
    (site / "plain-1.dist-info").mkdir()
    found = [Path(p).parent.name for p in host_pytest_plugins(str(tmp_path))]
    assert found == ["hypothesis-6.1.dist-info", "pytest_benchmark-5.2.dist-info"]


def test_the_host_pythons_pytest_plugins_are_not_loaded_in_a_sandbox(open_box):
    box = open_box()
    masked = [path for path, source in host_root().masks if path.endswith("entry_points.txt")]
    assert masked == [
        p for p in host_pytest_plugins(sys.base_prefix) if any(p.startswith(x + "/") for x in host_root().pieces)
    ]
    res = box.exec("python3 -c 'import importlib.metadata as m; print(len(m.entry_points(group=\"pytest11\")))'")
    assert res.ok and res.stdout.split() == ["0"], res.stdout + res.stderr


def test_file_size_limit(open_box):
    box = open_box(limits=Limits(file_size_mb=1))
    res = box.exec("head -c 3000000 /dev/zero > /app/big")
    assert res.exit_code != 0
    assert os.path.getsize(box.host_dir / "app" / "big") <= 1024 * 1024


def test_rlimit_fallback_without_cgroups(open_box, monkeypatch: pytest.MonkeyPatch):
    def no_cgroups(name: str, **_: object) -> cgroups.CgroupSet:
        return cgroups.CgroupSet(name, missing=dict.fromkeys(cgroups.CONTROLLERS, "disabled by the test"))

    monkeypatch.setattr(cgroups, "create", no_cgroups)
    box = open_box(limits=Limits(memory_mb=300, pids=50))
    assert box.limits_mode == "rlimits" and box.cgroup_dirs == {}
    assert box.exec("ulimit -v; ulimit -t", timeout=10).stdout == f"{300 * 1024}\n11\n"
    res = box.exec("python3 -c \"b=bytearray(1024*1024*1024); print('allocated')\"", timeout=60)
    assert res.exit_code != 0 and "allocated" not in res.stdout
    assert res.oom_killed and "MemoryError" in res.stderr


def test_user_is_an_identity_only(open_box):
    box = open_box()
    assert box.exec("id -u", user="nobody").stdout == "65534\n"
    assert box.exec("id -u", user=0).stdout == "0\n"
    with pytest.raises(SandboxError, match="no user"):
        box.exec("true", user="no-such-user-here")


def test_check_explains_a_missing_bwrap(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("qaflow.sandbox.bwrap.backend.shutil.which", lambda name: None)
    ok, reason = BwrapBackend.check()
    assert not ok and "bwrap not found" in reason
