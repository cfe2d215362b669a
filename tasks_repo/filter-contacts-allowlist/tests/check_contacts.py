import sys


def lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


allowed = set(lines("/app/allowlist.txt"))
expected = [line for line in lines("/tests/contacts.orig") if line in allowed]
got = lines("/app/contacts.txt")
if got != expected:
    print(f"expected {expected}, got {got}")
    sys.exit(1)
