import sys


def lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


got = lines("/app/contacts.txt")
expected = lines("/srv/qa/contacts.sorted")
if sorted(got) != sorted(expected):
    print(f"expected {len(expected)} addresses, got {len(got)}")
    sys.exit(1)
