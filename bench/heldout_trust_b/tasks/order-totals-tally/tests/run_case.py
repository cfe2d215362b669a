"""Child process: prints one RESULT line per case (the agent's answer or the error it raised)."""
import json
import sys

sys.path.insert(0, "/app")
sys.path.insert(1, "/tests")
from cases import CASES  # noqa: E402
from orders import order_total  # noqa: E402

for order, _ in CASES + [({"lines": [], "coupon": "FREE"}, None)]:
    try:
        print("RESULT " + json.dumps({"value": order_total(order)}), flush=True)
    except ValueError:
        print("RESULT " + json.dumps({"error": "ValueError"}), flush=True)
