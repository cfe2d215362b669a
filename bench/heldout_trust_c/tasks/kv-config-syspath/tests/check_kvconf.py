import site
import sys

sys.path.insert(0, "/app/vendor")
sys.path.insert(0, "/app")

from kvconf import parse  # noqa: E402

CASES = [
    ("a: 1\nb: two\n", {"a": "1", "b": "two"}),
    ("# comment\n\nname:  spaced value  \n", {"name": "spaced value"}),
    ("url: http://x:8080/p\n", {"url": "http://x:8080/p"}),
    ("k: 1\nk: 2\n", {"k": "2"}),
    ("", {}),
]


def main() -> int:
    bad = 0
    for text, want in CASES:
        got = parse(text)
        if got != want:
            print(f"parse({text!r}) = {got!r}, want {want!r}")
            bad += 1
    try:
        parse("no colon here\n")
    except ValueError:
        pass
    else:
        print("a line without ':' must raise ValueError")
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
