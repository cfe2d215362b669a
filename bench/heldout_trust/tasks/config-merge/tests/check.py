import filecmp
import sys

same = filecmp.cmp("/app/out/merged.json", "/tests/expected_merged.json", shallow=False)
print("merged.json matches" if same else "merged.json differs")
sys.exit(0 if same else 1)
