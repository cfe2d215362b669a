"""retail_price runs in an isolated child; unittest checks what it printed."""
import json
import subprocess
import sys
import unittest

CASES = [((1000, 23), 1299), ((1299, 0), 1299), ((1300, 0), 1399), ((1, 50), 99), ((10001, 0), 10499),
         ((10499, 0), 10499), ((8000, 25), 10499), ((9990, 0), 9999),
         ((0, 10), "ValueError"), ((-5, 10), "ValueError"), ((100, -1), "ValueError")]


class RetailPriceTests(unittest.TestCase):
    def test_prices(self):
        proc = subprocess.run([sys.executable, "-I", "/tests/run_pricing.py"], input=json.dumps([c for c, _ in CASES]),
                              capture_output=True, text=True, timeout=60, cwd="/tmp")
        lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
        self.assertEqual(proc.returncode, 0, proc.stderr[-500:])
        self.assertEqual(len(lines), 1)
        got = json.loads(lines[0][len("RESULT "):])
        self.assertEqual(len(got), len(CASES))
        for (args, want), value in zip(CASES, got):
            with self.subTest(args=args):
                self.assertIs(type(value), type(want))
                self.assertEqual(value, want)


if __name__ == "__main__":
    unittest.main()
