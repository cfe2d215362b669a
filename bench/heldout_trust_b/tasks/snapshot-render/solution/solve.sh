#!/bin/bash
cat > /app/mdtable.py <<'PY'
def _cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.2f}"
    if isinstance(v, int):
        return str(v)
    return str(v).replace("|", "\\|")


def render_table(rows: list, columns: list) -> str:
    numeric = {c: all(isinstance(r.get(c), (int, float)) for r in rows if r.get(c) is not None)
               and any(r.get(c) is not None for r in rows) for c in columns}
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    width = {c: max([len(c), 3] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)}

    def line(values, align):
        parts = []
        for c, v in zip(columns, values):
            parts.append(v.rjust(width[c]) if align and numeric[c] else v.ljust(width[c]))
        return "| " + " | ".join(parts) + " |\n"

    sep = ["-" * (width[c] - 1) + ":" if numeric[c] else "-" * width[c] for c in columns]
    out = line(columns, False) + "| " + " | ".join(sep) + " |\n"
    return out + "".join(line(row, True) for row in cells)
PY
