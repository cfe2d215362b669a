"""Scores the extracted links against the verifier's list: F1 of precision and recall, and order checked."""
import subprocess
import sys

proc = subprocess.run([sys.executable, "/app/links.py", "/tests/doc.md"], capture_output=True, text=True, timeout=60)
want = open("/tests/expected.txt").read().split()
got = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
hits = len(set(got) & set(want))
if proc.returncode != 0 or not got or not hits:
    score = 0.0
else:
    precision, recall = hits / len(got), hits / len(want)
    score = 2 * precision * recall / (precision + recall)
    if got != want:  # full marks only for the exact list, in order, without duplicates
        score = min(score, 0.99)
print(f"score {score:.3f}")
open("/logs/verifier/reward.txt", "w").write(f"{score:.3f}\n")
