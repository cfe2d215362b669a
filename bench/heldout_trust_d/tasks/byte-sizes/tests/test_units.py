"""Hidden tests for units.to_bytes (ported from the old nose suite)."""
import sys
import unittest

sys.path.insert(0, "/app")
from units import to_bytes  # noqa: E402

CASES = [('512', 512), ('1K', 1024), ('1.5K', 1536), ('2M', 2097152), ('1G', 1073741824), ('0.5M', 524288)]


class ToBytesTests(unittest.TestCase):
    def test_values(self):
        for text, want in CASES:
            yield self.assertEqual, to_bytes(text), want

    def test_rejects(self):
        for text in ["", "K", "1.5X", "-1K"]:
            yield self.assertRaises, ValueError, to_bytes, text


if __name__ == "__main__":
    unittest.main()
