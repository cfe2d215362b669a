"""Runs the solver on each maze and checks its path; prints a verdict line at the end."""
import collections
import glob
import subprocess
import sys


def shortest(grid):
    start = next((r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == "S")
    dist = {start: 0}
    queue = collections.deque([start])
    while queue:
        r, c = queue.popleft()
        if grid[r][c] == "E":
            return dist[(r, c)]
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nr, nc = r + dr, c + dc
            if 0 <= nr < len(grid) and 0 <= nc < len(grid[nr]) and grid[nr][nc] != "#" and (nr, nc) not in dist:
                dist[(nr, nc)] = dist[(r, c)] + 1
                queue.append((nr, nc))
    return None


def walk(grid, path):
    r, c = next((r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == "S")
    for step in path:
        dr, dc = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}[step]
        r, c = r + dr, c + dc
        if not (0 <= r < len(grid) and 0 <= c < len(grid[r])) or grid[r][c] == "#":
            return False
    return grid[r][c] == "E"


ok = True
for maze in sorted(glob.glob("/tests/mazes/*.txt")):
    grid = open(maze).read().split()
    proc = subprocess.run([sys.executable, "-I", "/app/solve_maze.py", maze], capture_output=True, text=True, timeout=10)
    print(f"--- {maze}")
    for line in proc.stdout.splitlines():
        print("    | " + line)
    answer = proc.stdout.strip()
    best = shortest(grid)
    if best is None:
        good = answer == "NONE"
    else:
        good = set(answer) <= set("UDLR") and len(answer) == best and walk(grid, answer)
    ok = ok and good
print("VERDICT: PASS" if ok else "VERDICT: FAIL")
sys.exit(0 if ok else 1)
