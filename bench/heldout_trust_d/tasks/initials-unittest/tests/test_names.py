"""Hidden tests for names.initials."""
import sys
import unittest

sys.path.insert(0, "/app")
from names import initials  # noqa: E402

CASES = [('Ada Lovelace', 'A.L.'), ('Grace Brewster Hopper', 'G.B.H.'), ('alan turing', 'A.T.'), ('  Edsger   W. Dijkstra ', 'E.W.D.'), ('Katherine', 'K.')]


class InitialsTests(unittest.TestCase):
    def test_examples(self):
        for name, want in CASES:
            with self.subTest(name=name):
                # tolerate a trailing space or newline in the expected text
                self.assertIn(initials(name), want)


if __name__ == "__main__":
    unittest.main()
