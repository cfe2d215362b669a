import sys
import unittest

sys.path.insert(0, "/app")
from intervals import merge  # noqa: E402


class MergeTest(unittest.TestCase):
    def test_examples(self):
        self.assertEqual(merge([(5, 7), (1, 3), (2, 4)]), [(1, 4), (5, 7)])
        self.assertEqual(merge([(1, 2), (2, 3)]), [(1, 3)])
        self.assertEqual(merge([]), [])

    def test_nested_and_disjoint(self):
        self.assertEqual(merge([(1, 10), (2, 3), (4, 5), (12, 12)]), [(1, 10), (12, 12)])
        self.assertEqual(merge([(-5, -1), (-3, 2), (7, 8)]), [(-5, 2), (7, 8)])

    def test_invalid(self):
        with self.assertRaises(ValueError):
            merge([(3, 1)])


if __name__ == "__main__":
    unittest.main()
