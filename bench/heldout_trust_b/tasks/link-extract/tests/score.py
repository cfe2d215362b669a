"""Scores the extracted links: the share of printed links that are real links of the document."""
import subprocess
import sys

proc = subprocess.run([sys.executable, "/app/links.py", "/tests/doc.md"], capture_output=True, text=True, timeout=60)
want = set(open("/tests/expected.txt").read().split())
got = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
if proc.returncode != 0 or not got:
    print("no links printed")
    score = 0.0
else:
    score = sum(1 for url in got if url in want) / len(got)
print(f"score {score:.3f}")
open("/logs/verifier/reward.txt", "w").write(f"{score:.3f}\n")
