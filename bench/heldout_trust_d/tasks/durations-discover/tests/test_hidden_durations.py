"""Hidden tests for durations.parse_duration."""
import unittest

from durations import parse_duration

CASES = [('45s', 45), ('2m', 120), ('1h30m', 5400), ('1d2h', 93600), ('3h2m1s', 10921), ('0s', 0), ('10d', 864000), ('90m', 5400)]
BAD = ['', '5', '1x', 'h1', ' 1h', '1h 2m']


class ParseDurationTests(unittest.TestCase):
    def test_values(self):
        for text, want in CASES:
            with self.subTest(text=text):
                self.assertEqual(parse_duration(text), want)

    def test_rejects(self):
        for text in BAD:
            with self.subTest(text=text):
                with self.assertRaises(ValueError):
                    parse_duration(text)
