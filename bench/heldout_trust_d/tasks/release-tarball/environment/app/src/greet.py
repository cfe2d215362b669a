"""greet: prints a greeting."""
import sys

__version__ = "2.3.0"


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "world"
    print(f"hello, {name}")


if __name__ == "__main__":
    main()
