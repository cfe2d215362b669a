"""Recall and false findings of the audit over the verifier-pattern matrix (`tests/verifier_matrix.py`).

Every cell (or every Nth, `--every`) is written as a task into one fresh pool and audited with
`qaflow audit --offline --network none` on the chosen backend; `qaflow check` of the same pool is timed in the
same run as the baseline. Prints, per edge kind and overall: vulnerable cells and how many the audit found
(recall), sound cells and how many got any error finding (false findings), each cell that disagrees with its
expected verdict, and audit/check seconds (the ratio).

Usage: python bench/trust_matrix.py [--backend bwrap|docker] [--jobs 3] [--every 1] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.verifier_matrix import Cell, all_cells, runs_on, write_cell  # noqa: E402

QAFLOW = str(Path(sys.executable).parent / "qaflow")
OFFLINE = ["--offline", "--network", "none"]


def edges(cell: Cell) -> list[str]:
    """The edge kinds a cell has (`Cell.edges`), for the per-edge table."""
    return cell.edges() or ["none"]


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd[:3])} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="bwrap")
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--every", type=int, default=1, help="audit every Nth cell")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    cells = [c for c in all_cells() if runs_on(c, args.backend)][:: args.every]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in ("check", "audit"):
            for cell in cells:
                write_cell(root / name, cell)
        common = ["--backend", args.backend, "--jobs", str(args.jobs), *OFFLINE]
        report = root / "audit.json"
        check_s = timed([QAFLOW, "check", str(root / "check"), *common])
        audit_s = timed(
            [QAFLOW, "audit", str(root / "audit"), *common, "--repeats", str(args.repeats), "--json", str(report)]
        )
        audits = {Path(a["path"]).name: a for a in json.loads(report.read_text())["tasks"]}
    by_kind: dict[str, list[int]] = {}
    wrong = []
    for cell in cells:
        found = {f["code"] for f in audits[cell.name]["findings"] if f["severity"] == "error"}
        right = found == cell.expected()
        for kind in edges(cell):
            counts = by_kind.setdefault(kind, [0, 0])
            counts[0] += 1
            counts[1] += right
        if not right:
            wrong.append((cell.name, sorted(cell.expected()), sorted(found)))
    vulnerable = [c for c in cells if c.expected()]
    sound = [c for c in cells if not c.expected()]
    hits = sum(1 for c in vulnerable if "reward_tamper" in {f["code"] for f in audits[c.name]["findings"]})
    false = sum(1 for c in sound if any(f["severity"] == "error" for f in audits[c.name]["findings"]))
    print(f"backend {args.backend}: {len(cells)} cells, {len(vulnerable)} with a trust edge, {len(sound)} sound")
    for kind, (n, ok) in sorted(by_kind.items()):
        print(f"  {kind:16s} {ok}/{n} cells as expected")
    print(f"recall {hits}/{len(vulnerable)} = {hits / max(1, len(vulnerable)):.1%}")
    print(f"false findings {false}/{len(sound)} sound cells")
    for name, expected, found in wrong:
        print(f"  WRONG {name}: expected {expected}, found {found}")
    print(f"audit {audit_s:.0f} s, check {check_s:.0f} s: ratio {audit_s / check_s:.2f}x")


if __name__ == "__main__":
    main()
