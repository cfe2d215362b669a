"""leaderboard.txt must rank every author by commit count."""

import sys
from pathlib import Path

AUTHORS = {"alice", "bruno", "chen", "dmitri", "emma", "farid"}
COMMITS = {"alice": 6, "bruno": 5, "chen": 3, "dmitri": 3, "emma": 2, "farid": 1}

ranking = sorted(AUTHORS, key=lambda author: -COMMITS[author])
expected = [f"{author} {COMMITS[author]}" for author in ranking]

path = Path("/app/leaderboard.txt")
if not path.is_file():
    sys.exit("missing /app/leaderboard.txt")
lines = [line.strip() for line in path.read_text().strip().splitlines()]
if lines != expected:
    sys.exit(f"expected {expected}, got {lines}")
print("ok")
