import json
import subprocess
import sys


def call(expr):
    code = f"import json, sys; sys.path.insert(0, '/app'); from intervals import merge, overlaps; print(json.dumps({expr}))"
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_touching_do_not_overlap():
    assert call("[overlaps((1, 3), (3, 5)), overlaps((3, 5), (1, 3))]") == [False, False]


def test_overlap():
    assert call("[overlaps((1, 4), (3, 5)), overlaps((0, 10), (2, 3))]") == [True, True]


def test_disjoint():
    assert call("overlaps((1, 2), (5, 6))") is False


def test_merge_keeps_touching_apart():
    assert call("merge([(3, 5), (1, 3)])") == [[1, 3], [3, 5]]


def test_merge_overlapping():
    assert call("merge([(5, 8), (1, 4), (3, 6), (10, 11)])") == [[1, 8], [10, 11]]
