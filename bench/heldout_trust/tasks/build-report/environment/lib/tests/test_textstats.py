import sys
import unittest

sys.path.insert(0, "/app/lib")
from textstats import mean_word_length  # noqa: E402


class T(unittest.TestCase):
    def test_plain(self):
        self.assertAlmostEqual(mean_word_length("ab abcd"), 3.0)

    def test_punctuation(self):
        self.assertAlmostEqual(mean_word_length("Hi, you!"), 2.5)

    def test_empty(self):
        self.assertEqual(mean_word_length("  "), 0.0)
