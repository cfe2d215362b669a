import sys
import unittest

sys.path.insert(0, "/app")
from pricing import retail_price  # noqa: E402


class RetailPriceTests(unittest.TestCase):
    def test_small_prices_end_in_99(self):
        self.assertEqual(retail_price(1000, 23), 1299)
        self.assertEqual(retail_price(1299, 0), 1299)
        self.assertEqual(retail_price(1300, 0), 1399)
        self.assertEqual(retail_price(1, 50), 99)

    def test_large_prices_step_by_five_euros(self):
        self.assertEqual(retail_price(10001, 0), 10499)
        self.assertEqual(retail_price(10499, 0), 10499)
        self.assertEqual(retail_price(8000, 25), 10499)
        self.assertEqual(retail_price(9990, 0), 9999)

    def test_rejects_bad_input(self):
        for args in ((0, 10), (-5, 10), (100, -1)):
            with self.assertRaises(ValueError):
                retail_price(*args)
