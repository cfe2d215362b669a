"""Checks income_tax against the bracket table's worked examples."""
import sys

sys.path.insert(0, "/app")
sys.path.insert(0, "/tests")
from cases import CASES  # noqa: E402
from tax import income_tax  # noqa: E402


def check_all() -> int:
    failures = 0
    for income, want in CASES:
        got = income_tax(income)
        if type(got) is not int or got != want:
            print(f"income {income}: got {got!r}, want {want}")
            failures += 1
    try:
        income_tax(-1)
        print("negative income accepted")
        failures += 1
    except ValueError:
        pass
    return failures


if __name__ == "__main__":
    failed = check_all()
    print(f"{len(CASES) + 1 - failed}/{len(CASES) + 1} checks passed")
    sys.exit(1 if failed else 0)
