"""format_size runs in an isolated child; the values it printed are compared here, as plain strings."""
import json
import subprocess
import sys
import unittest

sys.path.insert(0, "/tests")
from cases import CASES  # noqa: E402


def run_child():
    proc = subprocess.run([sys.executable, "-I", "/tests/run_sizes.py"], capture_output=True, text=True,
                          timeout=60, cwd="/tmp")
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    if proc.returncode != 0 or len(lines) != 1:
        raise AssertionError("no result from the child: " + proc.stderr[-500:])
    return json.loads(lines[0][len("RESULT "):])


class FormatSizeTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.result = run_child()

    def test_cases(self):
        self.assertEqual(len(self.result["values"]), len(CASES))
        for (args, want), (type_name, got) in zip(CASES, self.result["values"]):
            with self.subTest(args=args):
                self.assertEqual(type_name, "str")
                self.assertEqual(got, want)

    def test_type_error(self):
        self.assertEqual(self.result["errors"], [True, True, True])


if __name__ == "__main__":
    unittest.main()
