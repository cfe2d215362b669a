import sys

sys.path.insert(0, "/app")

from isbn import is_valid_isbn10  # noqa: E402

CASES = [
    ("0306406152", True),
    ("0-306-40615-2", True),
    ("0306406153", False),
    ("080442957X", True),
    ("080442957x", True),
    ("12345", False),
    ("X804429570", False),
    ("", False),
]


def main() -> int:
    failures = 0
    for text, want in CASES:
        try:
            got = is_valid_isbn10(text)
            assert got is want, f"{text!r}: got {got!r}, want {want!r}"
        except Exception as exc:
            print(f"{text!r}: raised {exc!r}")
            continue
    print(f"{len(CASES) - failures}/{len(CASES)} cases")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
