"""Sterile verification: each pytest run of the verifier made so that nothing the agent can write decides it.

The rule repair `sterile_verifier` (`qaflow.repair.rules`) puts a runner into tests/ and starts every pytest
command of the verifier's shell scripts with it (`bash /tests/qaflow_sterile.sh pytest ...`). The runner
runs the command it is given with

- pytest's configuration from /tests only: `-c` the verifier's own ini in tests/ (or `qaflow_pytest.ini`,
  an empty one written beside the runner), `--rootdir=/tests`, `--confcutdir=/tests` (no conftest.py from
  above /tests, e.g. `/conftest.py` or one in `/app`), `-p no:cacheprovider`; flags the command already
  gives are kept and not repeated;
- no user site on Python's path (`PYTHONNOUSERSITE=1`, where a `.pth` would run at start-up);

and succeeds only when pytest exits 0 *and* its junit report counts at least one passed test and no failure
or error. A module of the agent's that ends the process during collection (`os._exit(0)`) leaves no report,
so the exit status alone no longer pays. The working folder and the import path the tests rely on (an
agent's module they import on purpose) stay as they were; that edge is attacked by the audit's in-process
probes, and a verifier that compares with an object it did not build stays a `weak_verifier`.

Like every repair, the result counts only after a fresh audit, exploit battery included, is clean and the
oracle still passes.
"""

from __future__ import annotations

import posixpath
import re
import shlex

from qaflow.repair.rule_files import TaskFiles, is_shell, verifier_dir
from qaflow.repair.shell_fixes import (
    _BARE_PYTEST_RE,
    _END_OF_COMMAND_RE,
    _PY_PYTEST_RE,
    _RUNNER_RE,
    _TIMEOUT_RE,
    _map_commands,
    quoted_at,
)

RUNNER = "tests/qaflow_sterile.sh"
RUNNER_CALL = "bash /tests/qaflow_sterile.sh "
INI = "tests/qaflow_pytest.ini"
INI_TEXT = "# qaflow sterile_verifier: pytest's configuration comes from /tests only\n[pytest]\n"
OWN_INIS = ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
"""Files in tests/ that can hold pytest's configuration, in pytest's order of preference."""

RUNNER_TEXT = r"""#!/bin/bash
# qaflow sterile_verifier: runs one pytest command ("$@") so that no file the agent can write decides it.
# pytest's configuration comes from /tests only, no conftest.py above /tests loads, no cache is read, no
# user site is on Python's path; and the command counts as passed only when pytest exits 0 and its junit
# report counts at least one passed test and no failure or error.
ini=__INI__
tests=__TESTS__
work="$(mktemp -d)" || exit 1
junit="$work/junit.xml"
own=""
flags=()
prev=""
for arg in "$@"; do
  case "$arg" in
    --junitxml=*|--junit-xml=*) own="${arg#*=}" ;;
  esac
  case "$prev" in
    --junitxml|--junit-xml) own="$arg" ;;
  esac
  prev="$arg"
done
has() {
  local arg
  for arg in "${@:2}"; do
    case "$arg" in "$1"|"$1"=*) return 0 ;; esac
  done
  return 1
}
if [ -n "$own" ]; then junit="$own"; rm -f "$junit"; else flags+=("--junitxml=$junit"); fi
has -c "$@" || has --config-file "$@" || flags+=(-c "$ini")
has --rootdir "$@" || flags+=("--rootdir=$tests")
has --confcutdir "$@" || has --noconftest "$@" || flags+=("--confcutdir=$tests")
has no:cacheprovider "$@" || flags+=(-p no:cacheprovider)
PYTHONNOUSERSITE=1 "$@" "${flags[@]}"
status=$?
if [ "$status" -ne 0 ]; then
  rm -rf "$work"
  exit "$status"
fi
if [ ! -s "$junit" ]; then
  echo "qaflow sterile_verifier: pytest exited 0 but wrote no junit report: not a pass" >&2
  rm -rf "$work"
  exit 1
fi
suite="$(tr '\n' ' ' <"$junit" | grep -o '<testsuite [^>]*>' | head -n 1)"
rm -rf "$work"
count() {
  printf '%s' "$suite" | grep -o " $1=\"[0-9]*\"" | head -n 1 | tr -cd '0-9'
}
tests="$(count tests)"
failures="$(count failures)"
errors="$(count errors)"
skipped="$(count skipped)"
if [ -z "$tests" ] || [ -z "$failures" ] || [ -z "$errors" ]; then
  echo "qaflow sterile_verifier: pytest's junit report has no test counts: not a pass" >&2
  exit 1
fi
passed=$((tests - failures - errors - ${skipped:-0}))
if [ "$failures" -ne 0 ] || [ "$errors" -ne 0 ] || [ "$passed" -lt 1 ]; then
  echo "qaflow sterile_verifier: $passed passed, $failures failed, $errors errors: not a pass" >&2
  exit 1
fi
exit 0
"""

_COMMAND_HEAD = re.compile(
    r"(?:^|[;&|({!]|\b(?:then|do|else|if|elif|while|until|exec|time|command)\b)[ \t]*"
    r"(?:[A-Za-z_]\w*=(?:'[^']*'|\"[^\"]*\"|\S*)[ \t]+)*(?:env(?:[ \t]+[A-Za-z_]\w*=\S*)*[ \t]+)?$"
)
"""What may stand before a command's program: a separator or keyword, assignments, `env` with its own."""
_UVX_RE = re.compile(r"(?<![\w./${}-])(?:[\w./${}-]*/)?uvx(?=[ \t])")
_UVX_VALUED = frozenset(
    {"--with", "-w", "--from", "--python", "-p", "--with-requirements", "--with-editable", "--index"}
)


def _at_program(before: str) -> bool:
    """Whether a program named right after `before` starts a command (or is the one `timeout N`/`uv run` runs)."""
    return any(r.search(before) for r in (_COMMAND_HEAD, _TIMEOUT_RE, _RUNNER_RE))


def _tool_is_pytest(rest: str) -> bool:
    """Whether the tool `uvx` runs (its first word that is neither an option nor an option's value) is pytest."""
    words = rest.split()
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-"):
            i += 2 if word in _UVX_VALUED else 1
            continue
        return word.split("==")[0].split("@")[0] in ("pytest", "py.test")
    return False


def ini_in_tests(files: TaskFiles, root: str = "tests") -> str | None:
    """The verifier's own pytest configuration file at the top of the verifier folder `root`, as a container
    path (the folder is /tests in the container)."""
    for name in OWN_INIS:
        text = files.get(f"{root}/{name}")
        if text is None:
            continue
        if name in ("pytest.ini", ".pytest.ini") or "[pytest]" in text or "[tool:pytest]" in text:
            return f"/tests/{name}"
        if name == "pyproject.toml" and "[tool.pytest.ini_options]" in text:
            return f"/tests/{name}"
    return None


def wrap_pytest(text: str) -> str | None:
    """`text` (a shell script) with each pytest command started by the sterile runner: `python -m pytest`
    (any python), a bare `pytest` where a command starts (after assignments, `env`, `timeout N`, `uv run`
    and the like) and `uvx ... pytest`. Pytest named elsewhere (quoted, in a heredoc, `pip install pytest`)
    and commands the runner already starts are left alone; None when nothing changed."""

    def fix(code: str, i: int, codes: list[str]) -> str:
        starts: set[int] = set()
        covered: list[tuple[int, int]] = []
        for m in _PY_PYTEST_RE.finditer(code):
            covered.append(m.span())
            if not quoted_at(code, m.start()) and _at_program(code[: m.start()]):
                starts.add(m.start())
        for m in _BARE_PYTEST_RE.finditer(code):
            if any(a <= m.start() < b for a, b in covered) or quoted_at(code, m.start()):
                continue
            if _at_program(code[: m.start()]):
                starts.add(m.start())
        for m in _UVX_RE.finditer(code):
            rest = _END_OF_COMMAND_RE.split(code[m.end() :], maxsplit=1)[0]
            if not quoted_at(code, m.start()) and _at_program(code[: m.start()]) and _tool_is_pytest(rest):
                starts.add(m.start())
        for start in sorted(starts, reverse=True):
            if not code[:start].endswith(RUNNER_CALL):
                code = code[:start] + RUNNER_CALL + code[start:]
        return code

    return _map_commands(text, fix)


def runner_text(ini: str, tests: str = "/tests") -> str:
    """The runner, with pytest's ini `ini` and the verifier's folder `tests` (container paths)."""
    return RUNNER_TEXT.replace("__INI__", shlex.quote(ini)).replace("__TESTS__", shlex.quote(tests))


def _verifier_root(rel: str) -> str:
    """The verifier folder a file lies in: `tests` or `steps/<name>/tests`."""
    parts = rel.split("/")
    return "tests" if parts[0] == "tests" else "/".join(parts[:3])


def sterile_changes(files: TaskFiles) -> TaskFiles:
    """Every verifier shell script's pytest commands started by the sterile runner, and in each verifier
    folder that has such a script the runner (and the empty ini it points at, where that folder has no pytest
    configuration of its own); nothing when no script runs pytest."""
    changes: TaskFiles = {}
    roots: set[str] = set()
    for rel, text in files.items():
        if not (verifier_dir(rel) and is_shell(rel, text)) or posixpath.basename(rel) == posixpath.basename(RUNNER):
            continue
        wrapped = wrap_pytest(text)
        if wrapped is not None and wrapped != text:
            changes[rel] = wrapped
        if RUNNER_CALL in (wrapped or text):
            roots.add(_verifier_root(rel))
    if not changes:
        return {}
    for root in sorted(roots):
        ini = ini_in_tests(files, root)
        if ini is None:
            ini = "/tests/" + posixpath.basename(INI)
            changes[f"{root}/{posixpath.basename(INI)}"] = INI_TEXT
        changes[f"{root}/{posixpath.basename(RUNNER)}"] = runner_text(ini)
    return changes
