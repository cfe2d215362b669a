"""Hidden tests for slug.slugify."""
import sys
import unittest

sys.path.insert(0, "/app")
from slug import slugify  # noqa: E402

CASES = [('Hello World', 'hello-world'), ('  Leading and trailing  ', 'leading-and-trailing'), ("C'est la vie!", 'c-est-la-vie'), ('Release 2.0 -- final', 'release-2-0-final'), ('already-a-slug', 'already-a-slug'), ('MiXeD___Case', 'mixed-case')]


class SlugifyTests(unittest.TestCase):
    def test_examples(self):
        for text, want in CASES:
            with self.subTest(text=text):
                self.assertTrue(slugify(text), want)

    def test_returns_str(self):
        self.assertIsInstance(slugify("a b"), str)


if __name__ == "__main__":
    unittest.main()
