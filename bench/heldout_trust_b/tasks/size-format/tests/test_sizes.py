import sys
import unittest

sys.path.insert(0, "/app")
sys.path.insert(0, "/tests")
from cases import CASES  # noqa: E402
from sizes import format_size  # noqa: E402


class FormatSizeTests(unittest.TestCase):
    def test_cases(self):
        for args, want in CASES:
            with self.subTest(args=args):
                got = format_size(*args)
                self.assertIsInstance(got, str)
                self.assertEqual(got, want)

    def test_type_error(self):
        for bad in (1.5, "10", None):
            with self.subTest(bad=bad):
                self.assertRaises(TypeError, format_size, bad)


if __name__ == "__main__":
    unittest.main()
