"""The cleaned contact list must keep every contact, in order, with the expected columns."""

import csv
import sys
from pathlib import Path

NAMES = [
    "Maria Lopez",
    "James Chen",
    "Aisha Bello",
    "Tom Becker",
    "Yuki Sato",
    "Omar Haddad",
    "Sofia Rossi",
    "Liam O'Brien",
    "Nina Petrova",
    "Kwame Mensah",
]

path = Path("/app/contacts.csv")
if not path.is_file():
    sys.exit(f"missing {path}")
with path.open() as fh:
    rows = list(csv.reader(fh))
if not rows or rows[0] != ["name", "phone"]:
    sys.exit(f"bad header: {rows[:1]}")
names = [row[0] for row in rows[1:]]
if names != NAMES:
    sys.exit(f"expected contacts {NAMES}, got {names}")
if any(len(row) != 2 or not row[1].strip() for row in rows[1:]):
    sys.exit("every contact needs a phone number")
print("ok")
