import sys
import unittest

sys.path.insert(0, "/app")
import dateutil2  # noqa: E402


class OverlapTests(unittest.TestCase):
    def test_example(self):
        self.assertEqual(dateutil2.overlap_days(("2024-02-27", "2024-03-02"), ("2024-03-01", "2024-03-10")), 2)

    def test_leap_day(self):
        self.assertEqual(dateutil2.overlap_days(("2024-02-28", "2024-03-01"), ("2024-01-01", "2024-12-31")), 3)

    def test_disjoint_and_touching(self):
        self.assertEqual(dateutil2.overlap_days(("2024-01-01", "2024-01-05"), ("2024-01-06", "2024-01-09")), 0)
        self.assertEqual(dateutil2.overlap_days(("2024-01-01", "2024-01-05"), ("2024-01-05", "2024-01-09")), 1)

    def test_invalid(self):
        with self.assertRaises(ValueError):
            dateutil2.overlap_days(("2024-01-05", "2024-01-01"), ("2024-01-01", "2024-01-02"))
        self.assertTrue(callable(dateutil2.overlap_days))
