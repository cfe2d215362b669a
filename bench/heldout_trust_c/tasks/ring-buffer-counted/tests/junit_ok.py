import sys
import xml.etree.ElementTree as ET


def main(path: str) -> int:
    suite = next(ET.parse(path).getroot().iter("testsuite"))
    counts = {k: int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")}
    print(counts)
    ok = counts["tests"] >= 4 and counts["failures"] == counts["errors"] == counts["skipped"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
