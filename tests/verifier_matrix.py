"""The verifier-pattern matrix: small generated tasks whose verdict follows from how the verifier is built.

One task per cell. The agent writes `/app/solution.py` with `add(a, b)`; the verifier checks it. A cell
combines:

- `runner`: `pytest` (`python3 -m pytest` on a test file), `script` (`python3 /tests/check.py`), `bash`
  (test.sh compares what `python3 /app/solution.py A B` prints);
- `cwd`: where test.sh runs it from (`/tests` or `/app`; pytest's tests are copied to `/app/tests` for `/app`,
  so `/app` is the rootdir there);
- `load`: `in-process` (the check imports the agent's module) or `subprocess` (runs it and reads its output);
- `flags`: the interpreter's, `""` or `-I` (isolated: no cwd on sys.path, no user site, no PYTHONPATH);
- `reward`: `exit` (the checker's exit status) or `junit` (pytest's junit report: tests ran, none failed);
- `path_ahead`: the image puts `/app/tools` (absent, agent-writable) first on PATH;
- `shell`: `plain`, `login` (the checker runs in `bash -lc '...'`, which reads `~/.bash_profile`), `sourced`
  (test.sh first sources `~/.bashrc`, as verifiers do for a toolchain's PATH) or `bashenv` (the image sets
  `ENV BASH_ENV=/root/.bashrc`, as conda and nvm images do, so every bash of the verifier sources it); varied
  where `flags` is `""` and there is no `path_ahead`;
- `user`: the agent's: `root`, or `agent` (a non-root user who owns `/app`; the verifier stays root), varied
  where `flags` is `""`. Only docker runs a non-root agent of the image's own (bwrap declines a `RUN useradd`).

(Expectations in agent-writable data have a matrix of their own: tests/test_audit_data_forge.py.)

Values are always compared typed (`type(x) is int and x == 5`), so `always-equal` never applies and the
only findings are the trust edges. `expected` says which of them a sound audit must prove, from the
combination alone:

- exit-at-import: the module in-process and a reward that is the exit status of that process;
- sys.path shadow (`/app/pytest.py`): `python3 -m pytest` from `/app` without `-I`, exit reward;
- conftest/`__init__.py` plant in `/app`: pytest with `/app` as rootdir (any flags, any reward: the plant
  turns every test into a pass);
- path-shim (`/app/tools/python3`): `path_ahead` with the exit status of the test.sh's own `python3` as the
  reward (not for `bash`, whose reward is a comparison of what the program printed with a literal);
- shell-startup (a line in the start-up file that puts exiting shims first on PATH): a `login`, `sourced` or
  `bashenv` shell with the same exit-status reward, where the agent is root (the files are root's).

Anything else is a false finding. Each cell's expected error codes are `{"reward_tamper"}` or `set()`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from tests.taskfactory import JUNIT_COUNTER, write_task

RUNNERS = ("pytest", "script", "bash")
CWDS = ("/tests", "/app")
LOADS = ("in-process", "subprocess")
FLAGS = ("", "-I")
REWARDS = ("exit", "junit")
SHELLS = ("plain", "login", "sourced", "bashenv")
USERS = ("root", "agent")

SOLVE = (
    "#!/bin/bash\ncat > /app/solution.py <<'PY'\nimport sys\n\n\ndef add(a, b):\n    return a + b\n\n\n"
    'if __name__ == "__main__":\n    print(add(int(sys.argv[1]), int(sys.argv[2])))\nPY\n'
)


@dataclass(frozen=True)
class Cell:
    runner: str
    cwd: str
    load: str
    flags: str
    reward: str
    path_ahead: bool
    shell: str = "plain"
    user: str = "root"

    @property
    def name(self) -> str:
        parts = [
            self.runner,
            "app" if self.cwd == "/app" else "tests",
            self.load,
            "isolated" if self.flags else "plain",
        ]
        parts += [self.reward, "path" if self.path_ahead else "nopath"]
        parts += [self.shell] if self.shell != "plain" else []
        return "-".join(parts + (["agentuser"] if self.user != "root" else []))

    def valid(self) -> bool:
        """bash reads the program's output (never imports it) and rewards its own comparison."""
        if self.shell != "plain" and (self.flags or self.path_ahead):
            return False
        if self.user != "root" and self.flags:
            return False
        if self.runner == "bash":
            return self.load == "subprocess" and self.reward == "exit" and self.flags == ""
        return self.runner == "pytest" or self.reward == "exit"

    def edges(self) -> list[str]:
        """The trust edges this cell's verifier has (see the module doc)."""
        exit_reward = self.reward == "exit"
        python_exit = self.runner in ("pytest", "script") and exit_reward
        kinds = {
            "exit-at-import": self.load == "in-process" and python_exit,
            "sys-path-shadow": self.runner == "pytest" and self.cwd == "/app" and not self.flags and exit_reward,
            "pytest-plant": self.runner == "pytest" and self.cwd == "/app",
            "path-shim": self.path_ahead and python_exit,
            "shell-startup": self.shell != "plain" and python_exit and self.user == "root",
        }
        return [kind for kind, present in kinds.items() if present]

    def expected(self) -> set[str]:
        """The error codes a sound audit finds: `reward_tamper` where the cell has an edge."""
        return {"reward_tamper"} if self.edges() else set()


def all_cells() -> list[Cell]:
    combos = itertools.product(RUNNERS, CWDS, LOADS, FLAGS, REWARDS, (False, True), SHELLS, USERS)
    return [c for c in (Cell(*combo) for combo in combos) if c.valid()]


def covering_sample() -> list[Cell]:
    """A fixed sample with every edge present and absent at least once, and a sound twin of each vulnerable
    cell (one dimension changed): what CI runs on each backend."""
    return [
        Cell("pytest", "/tests", "subprocess", "", "junit", False),  # sound: nothing to attack
        Cell("pytest", "/tests", "in-process", "", "exit", False),  # exit-at-import
        Cell("pytest", "/tests", "in-process", "-I", "junit", False),  # in-process, junit, isolated: sound
        Cell("pytest", "/app", "subprocess", "-I", "junit", False),  # pytest from /app: a planted package
        Cell("pytest", "/app", "subprocess", "", "exit", False),  # and without -I: a module shadowing pytest too
        Cell("script", "/app", "subprocess", "-I", "exit", True),  # path-shim
        Cell("script", "/app", "subprocess", "-I", "exit", False),  # its twin without the PATH: sound
        Cell("bash", "/tests", "subprocess", "", "exit", True),  # bash compares output: the PATH gives nothing
        Cell("pytest", "/tests", "subprocess", "", "exit", False, "login"),  # shell-startup: ~/.bash_profile
        Cell("pytest", "/tests", "subprocess", "", "junit", False, "login"),  # its junit twin: sound
        Cell("script", "/tests", "subprocess", "", "exit", False, "sourced"),  # shell-startup: ~/.bashrc
        Cell("pytest", "/tests", "in-process", "", "exit", False, "bashenv"),  # the image's BASH_ENV: ~/.bashrc
        Cell("pytest", "/app", "subprocess", "", "junit", False),  # a forcing conftest, junit report rewritten
        Cell("script", "/tests", "in-process", "-I", "exit", False),  # exit-at-import where the observer is blind
        # a non-root agent owning /app: /app's edges stay, root's start-up files are out of its reach
        Cell("pytest", "/app", "subprocess", "", "exit", False, "plain", "agent"),
        Cell("pytest", "/tests", "subprocess", "", "exit", False, "login", "agent"),
        Cell("script", "/tests", "subprocess", "", "exit", False, "bashenv", "agent"),
    ]


def runs_on(cell: Cell, backend: str) -> bool:
    """bwrap runs no agent user of the image's own (it declines the Dockerfile's `RUN useradd`)."""
    return backend == "docker" or cell.user == "root"


def _check_lines(cell: Cell) -> str:
    """Python that asserts add's behaviour, typed."""
    if cell.load == "in-process":
        call = (
            "import sys\n\nsys.path.insert(0, '/app')\nfrom solution import add  # noqa: E402\n\n\n"
            "def total(a, b):\n    return add(a, b)\n"
        )
    else:
        call = (
            "import subprocess\n\n\ndef total(a, b):\n"
            "    done = subprocess.run(['python3', '/app/solution.py', str(a), str(b)], capture_output=True, "
            "text=True, timeout=30)\n    return int(done.stdout)\n"
        )
    check = "def check():\n    for a, b in [(2, 3), (-4, 9), (10, 0)]:\n        got = total(a, b)\n"
    return call + "\n\n" + check + "        assert type(got) is int and got == a + b\n"


def write_cell(root: Path, cell: Cell) -> Path:
    files: dict[str, str] = {}
    docker = "FROM python:3.11-slim\nWORKDIR /app\n" + ("ENV PATH=/app/tools:$PATH\n" if cell.path_ahead else "")
    if cell.shell == "bashenv":
        docker += "ENV BASH_ENV=/root/.bashrc\n"
    if cell.user != "root":
        docker += f"RUN useradd -m {cell.user} && chown {cell.user} /app\n"
    instruction = (
        "Write /app/solution.py defining add(a, b), which returns the sum of two integers; run as a script with two "
        "integers, it prints their sum.\n"
    )
    python = f"python3 {cell.flags}".strip()
    prologue = f"#!/bin/bash\nmkdir -p /logs/verifier\ncd {cell.cwd}\n"
    if cell.shell == "sourced":
        prologue += 'source "$HOME/.bashrc" 2>/dev/null || true\n'

    def shell(command: str) -> str:
        return f"bash -lc '{command}'" if cell.shell == "login" else command

    verdict = "then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
    if cell.runner == "bash":
        test_sh = prologue + f'if [ "$({shell("python3 /app/solution.py 2 3")})" = 5 ]; {verdict}'
    elif cell.runner == "script":
        files["tests/check.py"] = _check_lines(cell) + "\n\ncheck()\n"
        test_sh = prologue + f"if {shell(python + ' /tests/check.py')} > /tmp/verifier.log 2>&1; {verdict}"
    else:
        files["tests/test_add.py"] = _check_lines(cell) + "\n\ndef test_add():\n    check()\n"
        target = "/tests/test_add.py"
        if cell.cwd == "/app":
            prologue = prologue.replace(
                "cd /app\n", "mkdir -p /app/tests && cp /tests/test_add.py /app/tests/\ncd /app\n"
            )
            target = "tests/test_add.py"
        junit = " --junitxml=/tmp/junit.xml" if cell.reward == "junit" else ""
        run = shell(f"{python} -m pytest -q -p no:cacheprovider{junit} {target}")
        if cell.reward == "junit":
            files["tests/count.py"] = JUNIT_COUNTER
            test_sh = prologue + f"{run}\npython3 /tests/count.py /tmp/junit.xml > /logs/verifier/reward.txt\n"
        else:
            test_sh = prologue + f"if {run} > /tmp/verifier.log 2>&1; {verdict}"
    task = write_task(
        root, cell.name, test_sh=test_sh, solve_sh=SOLVE, dockerfile=docker, instruction=instruction, files=files
    )
    if cell.user != "root":
        toml = task / "task.toml"
        toml.write_text(toml.read_text().replace("[agent]\n", f'[agent]\nuser = "{cell.user}"\n', 1))
    return task
