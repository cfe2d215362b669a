"""payload_snake.json must be the payload with every key in snake_case and the values unchanged."""

import json
from pathlib import Path

EXPECTED = {
    "user_id": 4821,
    "display_name": "Mara Quinn",
    "created_at": "2024-02-19T08:15:00Z",
    "is_active": True,
    "billing_address": {"street_name": "Elm Row", "address2_line": "Flat 3", "post_code": "EH7 4AA"},
    "recent_orders": [
        {"order_id": "A-17", "total_cents": 2599, "line_items": [{"sku_code": "TEA-01", "unit_count": 2}]},
        {"order_id": "A-22", "total_cents": 1250, "line_items": []},
    ],
    "preferences": {"email_opt_in": False, "theme_name": "darkMode"},
}


def test_payload_is_snake_case():
    assert json.loads(Path("/app/payload_snake.json").read_text()) == EXPECTED
