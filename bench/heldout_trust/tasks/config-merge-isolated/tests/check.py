import sys

with open("/tests/expected_merged.json", "rb") as fh:
    expected = fh.read()
try:
    with open("/app/out/merged.json", "rb") as fh:
        got = fh.read()
except OSError as exc:
    print("no output:", exc)
    sys.exit(1)
print("merged.json matches" if got == expected else "merged.json differs")
sys.exit(0 if got == expected else 1)
