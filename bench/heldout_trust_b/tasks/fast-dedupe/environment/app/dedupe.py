"""dedupe.py IN OUT: writes IN's lines to OUT, keeping only the first occurrence of each line."""
import sys
import time


def dedupe(lines):
    out = []
    for line in lines:
        if not any(line == kept for kept in out):
            out.append(line)
    return out


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        lines = f.read().splitlines()
    t0 = time.perf_counter()
    result = dedupe(lines)
    elapsed_ms = (time.perf_counter() - t0) * 1000
    with open(dst, "w") as f:
        f.write("\n".join(result) + "\n")
    print(f"elapsed_ms={elapsed_ms:.0f}", file=sys.stderr)


if __name__ == "__main__":
    main()
