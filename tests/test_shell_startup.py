"""Shell start-up files as trust edges: which file each traced shell would read (generated invocations), the
`shell-startup` plants derived from that, and that the plants take over a real login bash's programs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from qaflow.audit.exploits import SHELL_STARTUP, SHIM, Exploit, plan_exploits, startup_plants
from qaflow.audit.observation import Access, Observation, Seen, parse_logs
from qaflow.audit.observer_files import BASH_ENV, BASH_ENV_FILE, SEP
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode
from qaflow.repair.rules import SHELL_STARTUP_EXPLOIT, fix_startup_shell
from qaflow.repair.shell_fixes import no_startup_shell

HOME = "/home/agent"


def _trace(command: str, source: str = "/tests/test.sh", cwd: str = "/app") -> str:
    return f"+{SEP}{source}{SEP}{cwd}{SEP} {command}"


def _startup(lines: list[str], *, login: bool = False) -> dict[str, list[str]]:
    start = f"#start{SEP}{HOME}{SEP}{'login' if login else ''}"
    seen = Seen()
    parse_logs({"sh.1.trace": "\n".join([start, *lines])}, seen, Observation(observed=True))
    return {p: sorted(by) for p, (hows, by) in seen.paths.items() if "startup" in hows}


SHELLS = {
    "bash -lc 'python3 -m pytest /tests'": ".bash_profile",
    "bash --login -c 'pytest'": ".bash_profile",
    "/bin/bash -l /tests/run.sh": ".bash_profile",
    "bash -ic 'pytest'": ".bashrc",
    "bash -i /tests/run.sh": ".bashrc",
    "sh -l -c 'python3 /tests/check.py'": ".profile",
    "dash -lc 'true'": ".profile",
}
NOT_STARTUP = [
    "bash /tests/run.sh -l",  # an argument of the script, not of bash
    "bash -c 'pytest -l'",
    "bash -xe /tests/run.sh",
    "sh /tests/run.sh",
    "python3 -m pytest -l /tests",
    "zsh -c true",
]


SYSTEM_FILE = {".bash_profile": "/etc/profile", ".profile": "/etc/profile", ".bashrc": "/etc/bash.bashrc"}


@pytest.mark.parametrize("command,name", SHELLS.items())
def test_a_login_or_interactive_shell_reads_its_home_and_system_start_up_files(command: str, name: str):
    by = ["/tests/test.sh"]
    assert _startup([_trace(command)]) == {f"{HOME}/{name}": by, SYSTEM_FILE[name]: by}


@pytest.mark.parametrize("command", NOT_STARTUP)
def test_other_shells_read_no_start_up_file(command: str):
    assert _startup([_trace(command)]) == {}


@pytest.mark.parametrize(
    "command,path",
    [
        ('source "/home/agent/.bashrc"', "/home/agent/.bashrc"),
        (". ./venv/bin/activate", "/app/venv/bin/activate"),
        ("source /opt/conda/etc/profile.d/conda.sh", "/opt/conda/etc/profile.d/conda.sh"),
        (". /tests/env.sh", None),  # the verifier's own file
    ],
)
def test_a_sourced_file_is_a_start_up_file(command: str, path: str | None):
    assert _startup([_trace(command)]) == ({path: ["/tests/test.sh"]} if path else {})


def test_the_images_bash_env_sourced_by_the_observer_is_a_start_up_file_and_its_own_lines_are_not_the_verifiers():
    lines = [_trace("[ -n /root/.bashrc ]", source=BASH_ENV_FILE), _trace(". /root/.bashrc", source=BASH_ENV_FILE)]
    lines.append(_trace(": startup /root/.profile", source=BASH_ENV_FILE))  # named by BASH_ENV, absent
    seen, obs = Seen(), Observation(observed=True)
    parse_logs({"sh.1.trace": "\n".join([f"#start{SEP}/root{SEP}", *lines])}, seen, obs)
    assert {p: sorted(hows) for p, (hows, _by) in seen.paths.items()} == {
        "/root/.bashrc": ["startup"],
        "/root/.profile": ["startup"],
    }
    assert obs.shell_commands == 0 and seen.names == {}
    assert '. "$QAFLOW_BASH_ENV_CHAIN"' in BASH_ENV


def test_the_observer_sources_the_images_bash_env_in_a_real_bash(tmp_path: Path):
    (tmp_path / "log").mkdir()
    (tmp_path / "bashenv.sh").write_text(BASH_ENV)
    (tmp_path / "image_env.sh").write_text("export FROM_IMAGE=1\n")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "BASH_ENV": str(tmp_path / "bashenv.sh"),
        "QAFLOW_OBSERVE_LOG": str(tmp_path / "log"),
        "QAFLOW_OBSERVE_PY": str(tmp_path / "py"),
        "QAFLOW_BASH_ENV_CHAIN": str(tmp_path / "image_env.sh"),
    }
    done = subprocess.run(["bash", "-c", 'echo "$FROM_IMAGE"'], env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "1" and done.stderr == ""
    (trace,) = (tmp_path / "log").iterdir()
    assert f". {tmp_path / 'image_env.sh'}" in trace.read_text()
    trace.unlink()
    # a file the image's BASH_ENV names that does not exist: bash says nothing, the trace names it
    absent = env | {"QAFLOW_BASH_ENV_CHAIN": str(tmp_path / "absent.sh")}
    done = subprocess.run(["bash", "-c", "true"], env=absent, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
    (trace,) = (tmp_path / "log").iterdir()
    assert f": startup {tmp_path / 'absent.sh'}" in trace.read_text()


def test_the_repair_rule_names_the_audits_exploit():
    assert SHELL_STARTUP_EXPLOIT == SHELL_STARTUP


def test_a_login_shell_is_seen_by_its_own_start_record():
    assert _startup([], login=True) == {f"{HOME}/.bash_profile": [], "/etc/profile": []}
    assert _startup([]) == {}


def _obs(*accesses: Access, programs: list[str]) -> Observation:
    return Observation(observed=True, accesses=list(accesses), programs=programs)


def test_plants_put_exiting_shims_of_the_deciding_programs_first_on_path():
    profile = Access(path=f"{HOME}/.bash_profile", how=["startup"], creatable=True)
    obs = _obs(profile, programs=["mkdir", "python3", "cat", "timeout", "pytest"])
    (exploit,) = [e for e in plan_exploits(obs, set()) if e.name == SHELL_STARTUP]
    assert [p.path for p in exploit.plants] == [
        f"{HOME}/.bash_profile",
        f"{HOME}/.qaflow-shims/python3",
        f"{HOME}/.qaflow-shims/pytest",
    ]
    assert all(p.content == SHIM for p in exploit.plants[1:])
    assert f"export PATH={HOME}/.qaflow-shims:" in (exploit.plants[0].command or "")
    locked = profile.model_copy(update={"creatable": False})
    writable = Access(path="/app/venv/bin/activate", how=["startup"], exists=True, writable=True)
    assert startup_plants(_obs(locked, programs=["python3"])) == []
    assert startup_plants(_obs(profile, programs=["cat", "grep"])) == []  # nothing that decides the reward
    assert [p.path for p in startup_plants(_obs(locked, writable, programs=["node"]))] == [
        "/app/venv/bin/activate",
        "/app/venv/bin/.qaflow-shims/node",
    ]


@pytest.mark.parametrize("kind", ["login", "sourced", "bash_env"])
def test_the_plants_take_over_a_real_shell(tmp_path: Path, kind: str):
    home = tmp_path / "home"
    home.mkdir()
    name = ".bash_profile" if kind == "login" else ".bashrc"
    (home / name).write_text("export KEPT=1\n")  # an existing start-up file is appended to, not replaced
    access = Access(path=str(home / name), how=["startup"], exists=True, writable=True)
    exploit = Exploit(name=SHELL_STARTUP, plants=startup_plants(_obs(access, programs=["python3"])))
    check = 'python3 -c "raise SystemExit(3)"; echo "$? $KEPT"'
    run = ["bash", "-lc", check] if kind == "login" else ["bash", "-c", f'source "$HOME/.bashrc"; {check}']
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin"}
    if kind == "bash_env":  # the image's `ENV BASH_ENV=...`: every non-interactive bash sources it
        run, env = ["bash", "-c", check], env | {"BASH_ENV": str(home / name)}
    assert subprocess.run(run, env=env, capture_output=True, text=True).stdout.strip() == "3 1"
    assert subprocess.run(["sh", "-c", exploit.script()], env=env).returncode == 0
    assert subprocess.run(run, env=env, capture_output=True, text=True).stdout.strip() == "0 1"


REWRITES = {
    'bash -lc "pytest /tests"\n': 'bash -c "pytest /tests"\n',
    'if /bin/bash --login -c "x"; then echo 1; fi\n': 'if /bin/bash -c "x"; then echo 1; fi\n',
    "bash -il /tests/run.sh\n": "bash /tests/run.sh\n",
    'bash -xlc "x"\n': 'bash -xc "x"\n',
    "sh -l -c x\n": "sh -c x\n",
    "X=1 bash -i -c x | tee log\n": "X=1 bash -c x | tee log\n",
    'echo "bash -lc x"\n': None,
    "bash /tests/run.sh -l\n": None,
    "bash -c 'ls -l'\n": None,
}


@pytest.mark.parametrize("text,want", REWRITES.items())
def test_the_repair_starts_the_verifiers_shells_without_start_up_files(text: str, want: str | None):
    assert no_startup_shell(text) == want


def test_the_rule_runs_only_where_a_home_start_up_file_was_planted():
    files = {"tests/test.sh": "#!/bin/bash\nif bash -lc 'python3 -m pytest /tests'; then echo 1; fi\n"}

    def won(path: str) -> AuditFinding:
        plant = {"exploit": SHELL_STARTUP, "files": [path, "/root/.qaflow-shims/python3"]}
        return AuditFinding(code=FindingCode.REWARD_TAMPER, message="m", evidence={"exploits": [plant]})

    assert fix_startup_shell(files, [won("/root/.bash_profile")]) == {
        "tests/test.sh": "#!/bin/bash\nif bash -c 'python3 -m pytest /tests'; then echo 1; fi\n"
    }
    assert fix_startup_shell(files, [won("/opt/venv/bin/activate")]) == {}
