"""merged.csv must hold the latest version of every contact, sorted by id."""

import sys
from pathlib import Path

EXPECTED = [
    "id,name,email,updated_at",
    "3,Ada King,ada.king@engine.example,2024-02-20T10:15:00Z",
    "5,Barbara Liskov,liskov@csail.example,2024-03-15T09:45:00Z",
    "7,Grace Hopper,grace@navy.example,2024-03-01T09:00:00Z",
    "9,Donald Knuth,knuth@stanford.example,2024-03-12T16:05:00Z",
    "12,Alan Turing,alan@bletchley.example,2024-02-11T17:45:00Z",
    "21,E. W. Dijkstra,ewd@utexas.example,2024-03-10T07:30:00Z",
    "100,Frances Allen,fran@ibm.example,2024-01-19T13:00:00Z",
]

path = Path("/app/merged.csv")
if not path.is_file():
    sys.exit("missing /app/merged.csv")
lines = [line.rstrip("\r") for line in path.read_text().strip().splitlines()]
if lines != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {lines}")
print("ok")
