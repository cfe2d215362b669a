import subprocess
import sys

import pytest

CASES = {
    "Hello, World!": "hello-world",
    "  Crème brûlée  ": "creme-brulee",
    "C++ & Rust: 2024 edition": "c-rust-2024-edition",
    "---": "",
    "Ångström Units": "angstrom-units",
    "already-a-slug": "already-a-slug",
}


@pytest.mark.parametrize("title", list(CASES))
def test_slug(title, tmp_path):
    proc = subprocess.run([sys.executable, "/app/slugify.py", title], capture_output=True, text=True,
                          cwd=tmp_path, timeout=20)
    assert proc.returncode == 0
    assert proc.stdout == CASES[title] + "\n"
