"""Hidden tests for /app/out/invoice.json."""
import json
from pathlib import Path

INVOICE = Path("/app/out/invoice.json")


class TestInvoice:
    def __init__(self):
        self.invoice = json.loads(INVOICE.read_text())

    def test_subtotal(self):
        assert self.invoice["subtotal_cents"] == 18299

    def test_tax(self):
        assert self.invoice["tax_cents"] == 1464

    def test_total(self):
        assert self.invoice["total_cents"] == 19763


def test_invoice_written():
    assert INVOICE.is_file()
