import math
import unittest

from units import convert


class ConvertTests(unittest.TestCase):
    def close(self, a, b):
        self.assertTrue(math.isclose(a, b, rel_tol=1e-9), f"{a} != {b}")

    def test_metric(self):
        self.close(convert(1500, "m", "km"), 1.5)
        self.close(convert(3, "cm", "mm"), 30)

    def test_imperial(self):
        self.close(convert(1, "mi", "ft"), 5280)
        self.close(convert(2, "yd", "in"), 72)

    def test_cross(self):
        self.close(convert(1, "in", "cm"), 2.54)
        self.close(convert(10, "km", "mi"), 6.213711922373339)

    def test_unknown(self):
        with self.assertRaises(KeyError):
            convert(1, "parsec", "m")
