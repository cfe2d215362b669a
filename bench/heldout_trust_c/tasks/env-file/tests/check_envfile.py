import sys

sys.path.append("/app")

from envfile import parse_env  # noqa: E402
from env_cases import CASES  # noqa: E402

def main() -> int:
    if len(CASES) < 5:
        print("too few cases")
        return 1
    bad = 0
    for text, want in CASES:
        got = parse_env(text)
        if got != want:
            print(f"parse_env({text!r}) = {got!r}, want {want!r}")
            bad += 1
    print(f"{len(CASES) - bad}/{len(CASES)} cases")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
