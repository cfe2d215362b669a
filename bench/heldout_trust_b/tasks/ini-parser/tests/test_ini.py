import sys
import unittest

sys.path.insert(0, "/app")
from iniparse import parse  # noqa: E402


class ParseTests(unittest.TestCase):
    def test_sections_and_separators(self):
        self.assertEqual(parse("[db]\nHost = x\nport: 5432\n"), {"db": {"host": "x", "port": "5432"}})

    def test_comments_and_blank_lines(self):
        self.assertEqual(parse("; c\n# c\n\n[a]\nk=v\n"), {"a": {"k": "v"}})

    def test_global_keys(self):
        self.assertEqual(parse("name = app\n[s]\nx = 1\n"), {"": {"name": "app"}, "s": {"x": "1"}})

    def test_continuation(self):
        self.assertEqual(parse("[m]\nbody = one\n  two\n\tthree\n"), {"m": {"body": "one\ntwo\nthree"}})

    def test_last_value_wins(self):
        self.assertEqual(parse("[s]\nk=1\nK=2\n"), {"s": {"k": "2"}})

    def test_bad_line(self):
        with self.assertRaisesRegex(ValueError, "3"):
            parse("[s]\nk=1\nthis is wrong\n")


if __name__ == "__main__":
    unittest.main()
