import json
import subprocess
import sys

import pytest

CHILD = "import json,sys; sys.path.insert(0,'/app'); from wordfreq import top_words; " \
        "t,k=json.loads(sys.stdin.read()); print(json.dumps([list(p) for p in top_words(t,k)]))"
CASES = [
    (("b a B c b a", 2), [["b", 3], ["a", 2]]),
    (("Don't stop. don't! Stop? 'quoted' words, words; zeta alpha", 4),
     [["don't", 2], ["stop", 2], ["words", 2], ["alpha", 1]]),
    (("x y", 10), [["x", 1], ["y", 1]]),
    (("Él él EL el", 1), [["el", 2]]),
]


@pytest.mark.parametrize("args, want", CASES)
def test_top_words(args, want, tmp_path):
    proc = subprocess.run([sys.executable, "-I", "-c", CHILD], input=json.dumps(args), capture_output=True,
                          text=True, cwd=tmp_path, timeout=20)
    assert proc.returncode == 0, proc.stderr[-300:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == want
