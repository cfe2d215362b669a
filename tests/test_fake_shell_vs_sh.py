"""The fake sandbox's shell (tests/fake_sandbox.py) against the host's own shells, in the unit tier: every
builtin and construct of its documented subset, run by the fake and by `/bin/sh` (dash) or bash in a fresh
folder, must give the same exit code and stdout; what the fake does not implement must be refused loudly
(exit 2 or 127 and a `fake sandbox:` line), never answered differently.

The snippets use paths relative to their working folder, so the same text runs in the fake's `/app` and in
a temporary folder of the host."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fake_sandbox import FakeSandbox

HOST_SH = shutil.which("dash") or "/bin/sh"

SH_CASES: list[str] = [
    # words, quoting, parameters
    "x='a  b'; echo $x; echo \"$x\"; echo '$x' \\$x",
    'y=; echo "[${y:-d}][${y-d}][${z-d}][${y:+s}][${z+s}]"; v=abc; echo ${#v}',
    'set -- 1 \'2 3\' 4; echo $#; echo "$1|$2|$3"; shift; echo $#; echo "$*"; shift 2; echo $#',
    'for a in "$@"; do echo "<$a>"; done; set -- p q; for a; do echo $a; done',
    # IFS field splitting
    'IFS=:; x=a:b::c; for i in $x; do echo "[$i]"; done',
    "IFS=', '; x='a, b,c'; set -- $x; echo $#",
    "x='  lead  trail  '; set -- $x; echo $# \"[$1]\"; IFS=:; x=':a::'; set -- $x; echo $#; set -- p$x; echo $#",
    "IFS=; x='a b'; set -- $x; echo $#; IFS=' :'; x=' a : b '; set -- $x; echo $# \"$1|$2\"",
    "unset IFS; x='a	b  c'; set -- $x; echo $#",
    # exit status, lists, negation
    "false; echo $?; true && echo t || echo f; false || echo f2; ! false && echo neg; ! true; echo $?",
    "(exit 3); echo $?; { false; }; echo $?; x=$(exit 5); echo $?",
    # command -v, type of a name
    "command -v echo; command -v cd; command -v ls; command -v nosuchcmd; echo $?",
    "command -v test; command -v [; command -v cat; command -v read",
    # echo and printf
    "echo -n a; echo b; echo 'c\\td'; echo",
    "printf '%s|%5s|%-3d|%03d|%x|%X|%o|%c|%%\\n' a b 7 7 255 255 8 xyz; printf '%s\\n' x y z",
    "printf '%d %i %u\\n' 3 -4 5; printf '%.2f|%5.1f\\n' 3.14159 2.5; printf '%b\\n' 'a\\tb'",
    # files
    "mkdir -p d/e && touch d/a d/.h && ls d; ls -A d; ls -a d | wc -l; ls nothere 2>/dev/null; echo $?",
    "echo one > f && echo two >> f && cat f && wc -l f && wc -l < f && wc -c < f && wc -w < f",
    "printf 'a\\nb\\nc\\nd\\n' > f; head -n 2 f; head -1 f; tail -n 2 f; tail -1 f; tail -n +3 f; head -c 3 f; echo",
    "echo x > a; cp a b; mv b c; cat c; ls; mkdir -p s/t; echo y > s/t/u; cp -r s s2; cat s2/t/u",
    "mkdir -m 700 priv; [ -d priv ] && echo dir; touch f; chmod 600 f; [ -r f ] && echo r; [ -x f ] || echo nox",
    "ln -s tgt l; echo x > l; cat tgt; [ -L l ] && echo link; [ -h l ] && echo h; rm l; [ -e l ] || echo gone",
    "mkdir -p k/in; rm -r k; [ -e k ] || echo rmd; rm nofile 2>/dev/null; echo $?; rm -f nofile; echo $?",
    "mkdir -p fd/a && touch fd/a/f fd/g && find fd -type d -mindepth 1; find fd -mindepth 2; find fd -name 'g*'",
    "basename /a/b/c.txt; basename /a/b/c.txt .txt; dirname /a/b/c; dirname c; basename /",
    'mkdir -p sub/dir && cd sub/dir && basename "$(pwd)" && cd .. && basename "$(pwd)"; '
    "cd /nonexistent 2>/dev/null; echo $?",
    "touch ga gb .gh; echo g* 'g*' g? g[a] nomatch*",
    # control flow
    "if false; then echo 1; elif true; then echo 2; else echo 3; fi; if false; then :; fi; echo $?",
    'i=; while [ "$i" != xxx ]; do i=${i}x; done; echo $i; until true; do echo never; done; echo u',
    "for j in 1 2 3; do if [ $j = 2 ]; then echo two; fi; echo $j; done",
    # subshells, groups, substitution, here-documents
    "(cd d 2>/dev/null; x=1; echo in $x); echo out $x; { echo g1; echo g2; } > g; cat g",
    "echo $(echo a; echo b) \"$(printf 'x\\n\\n')\"; echo \"$(echo ' sp ')\"",
    "cat <<EOF\nv=$# $(echo sub)\nEOF\ncat <<'EOF'\nv=$#\nEOF\ncat <<-EOF\n\tindented\n\tEOF",
    # test / [
    "[ a = a ] && echo eq; [ a != b ] && echo ne; [ -n x ] && echo n; [ -z '' ] && echo z; [ ! -e nope ] && echo no",
    "[ 3 -lt 4 ] && echo lt; [ 4 -le 4 ] && echo le; [ 5 -gt 4 ] && echo gt; [ 4 -ge 5 ] || echo notge; "
    "[ 1 -eq 1 ] && echo eq; [ 1 -ne 2 ] && echo ne",
    "echo x > f; : > e; [ -s f ] && echo s; [ -s e ] || echo empty; [ -f f ] && echo f; test -d . && echo d",
    # options
    "set -e; false && echo no; echo b; if false; then :; fi; false; echo never",
    "set -u; echo ${unset_var:-ok}; echo $unset_var; echo never",
    "set -e; set +e; false; echo survived",
    # variables, environment, read
    "export A=1; B=2; sh -c 'echo [$A][$B]'; C=3 sh -c 'echo [$C] $0 $1' zero one; unset A; sh -c 'echo [$A]'",
    "env X=1 sh -c 'echo $X'; env Y=2 env | wc -l > /dev/null; echo $?",
    'printf \'a b c\\nd e\\n\' > in; read x y < in; echo "[$x][$y]"; while read -r l; do echo "<$l>"; done < in',
    "printf 'k=v\\n' > kv; IFS='=' read -r k v < kv; echo \"$k|$v\"",
    "umask; id -u; echo x > /dev/null; cat /dev/null; echo $?",
    # scripts and sourcing
    "printf '#!/bin/sh\\necho s $# \"$1\"\\nexit 4\\n' > t.sh; chmod 755 t.sh; ./t.sh a b; echo $?; "
    "./nope.sh 2>/dev/null; echo $?",
    "echo 'V=sourced' > lib.sh; . ./lib.sh; echo $V; W=0; echo 'W=1' > w.sh; sh w.sh; echo $W",
    "sh -c 'exec echo replaced; echo never'; echo after",
    "timeout 0.2 sleep 5; echo $?; sleep 0.1 & echo bg; wait; echo waited",
]

BASH_CASES: list[str] = [
    "set -euo pipefail; false | true; echo unreached",
    "echo -e 'c\\td'; echo 'e\\tf'",
    "x=1; [ $x = 1 ] && echo one; set -o pipefail; false | true; echo $?",
]


def _host(shell: str, script: str, cwd: Path) -> tuple[int, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LC_ALL": "C"}
    done = subprocess.run([shell, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout


def _refused(code: int, stderr: str) -> bool:
    return code in (2, 127) and "fake sandbox:" in stderr


@pytest.fixture
def any_backend(fake_backend: str) -> str:
    return fake_backend


@pytest.mark.parametrize(
    ("shell", "script"),
    [*((HOST_SH, s) for s in SH_CASES), *(("bash", s) for s in BASH_CASES)],
    ids=[*(f"sh-{i}" for i in range(len(SH_CASES))), *(f"bash-{i}" for i in range(len(BASH_CASES)))],
)
def test_the_fake_shell_answers_as_the_host_shell_or_refuses(shell: str, script: str, make_any_sandbox, tmp_path):
    box = make_any_sandbox()
    assert isinstance(box, FakeSandbox)
    fake = box.exec(["bash", "-c", script] if shell == "bash" else script, timeout=30)
    work = tmp_path / "host"
    work.mkdir()
    expected = _host(shell, script, work)
    if _refused(fake.exit_code, fake.stderr):
        pytest.fail(f"the fake refuses a snippet of its documented subset: {fake.stderr.strip()}")
    assert (fake.exit_code, fake.stdout) == expected, fake.stderr
