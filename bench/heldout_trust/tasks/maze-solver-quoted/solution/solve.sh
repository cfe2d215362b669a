#!/bin/bash
cat > /app/solve_maze.py <<'PY'
import collections
import sys

grid = open(sys.argv[1]).read().split()
start = next((r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == "S")
prev = {start: None}
queue = collections.deque([start])
end = None
while queue:
    r, c = queue.popleft()
    if grid[r][c] == "E":
        end = (r, c)
        break
    for step, dr, dc in (("D", 1, 0), ("U", -1, 0), ("R", 0, 1), ("L", 0, -1)):
        nr, nc = r + dr, c + dc
        if 0 <= nr < len(grid) and 0 <= nc < len(grid[nr]) and grid[nr][nc] != "#" and (nr, nc) not in prev:
            prev[(nr, nc)] = ((r, c), step)
            queue.append((nr, nc))
if end is None:
    print("NONE")
else:
    steps = []
    while prev[end] is not None:
        end, step = prev[end]
        steps.append(step)
    print("".join(reversed(steps)))
PY
