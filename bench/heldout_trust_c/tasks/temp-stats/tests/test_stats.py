import math
import subprocess
import sys

import pytest

CASES = [
    ("2 4 4 4 5 5 7 9", 2.0),
    ("1.5 2.5 3.5", 0.816496580927726),
    ("10 10 10 10 11", 0.4),
    ("-3 0 3 100.25", 43.46132440170226),
]


def run_stats(tmp_path, numbers):
    data = tmp_path / "data.txt"
    data.write_text("\n".join(numbers.split()) + "\n")
    proc = subprocess.run(
        [sys.executable, "/app/stats.py", str(data)], capture_output=True, text=True, timeout=10
    )
    assert proc.returncode == 0, proc.stderr
    return float(proc.stdout.strip())


@pytest.mark.parametrize("numbers,want", CASES)
def test_population_stdev(tmp_path, numbers, want):
    got = run_stats(tmp_path, numbers)
    assert abs(got - want) <= 1e-6 * abs(got)
