"""The backup folder must keep exactly the retained dumps (unchanged), and deleted.txt must list the rest."""

import sys
from pathlib import Path

KEPT = ["2024-02-01", "2024-03-01", "2024-04-01", "2024-04-02", "2024-04-03", "2024-04-04", "2024-04-05"]
DELETED = ["2024-02-08", "2024-02-15", "2024-02-22", "2024-03-07", "2024-03-14", "2024-03-21", "2024-03-28"]

folder = Path("/app/backups")
names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
want = sorted(["README.txt", *(f"db-{d}.sql.gz" for d in KEPT)])
if names != want:
    sys.exit(f"expected {want} in /app/backups, found {names}")
for day in KEPT:
    if (folder / f"db-{day}.sql.gz").read_text() != f"pg_dump of orders taken {day}\n":
        sys.exit(f"db-{day}.sql.gz was modified")
listing = Path("/app/deleted.txt")
if not listing.is_file():
    sys.exit("missing /app/deleted.txt")
if listing.read_text().split() != [f"db-{d}.sql.gz" for d in DELETED]:
    sys.exit(f"deleted.txt does not list the deleted dumps: {listing.read_text()!r}")
print("ok")
