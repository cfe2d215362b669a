import unittest

from durations import parse_duration


class VisibleTests(unittest.TestCase):
    def test_minutes(self):
        self.assertEqual(parse_duration("2m"), 120)
