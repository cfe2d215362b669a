"""The photo folder must hold exactly the renamed files, with their original contents."""

import sys
from pathlib import Path

EXPECTED = {
    "2024-05-01_1.jpg": "0001",
    "2024-05-01_2.jpg": "0003",
    "2024-05-01_3.jpg": "0006",
    "2024-05-03_1.jpg": "0002",
    "2024-05-03_2.jpg": "0005",
    "2024-06-12_1.jpg": "0004",
}
folder = Path("/app/photos")
names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
if names != sorted(EXPECTED):
    sys.exit(f"expected files {sorted(EXPECTED)}, found {names}")
for name, original in EXPECTED.items():
    if (folder / name).read_text() != f"jpeg-bytes-{original}\n":
        sys.exit(f"{name} does not hold the contents of IMG_{original}.jpg")
print("ok")
