#!/bin/bash
cat > /app/flatjson.py <<'PY'
def flatten(doc, sep="."):
    out = {}

    def walk(value, path):
        if isinstance(value, dict) and value:
            for k, v in value.items():
                if sep in k:
                    raise ValueError(f"key {k!r} contains {sep!r}")
                walk(v, path + [k])
        elif isinstance(value, list) and value:
            for i, v in enumerate(value):
                walk(v, path + [str(i)])
        else:
            out[sep.join(path)] = value

    walk(doc, [])
    return out


def unflatten(flat, sep="."):
    if list(flat) == [""]:
        return flat[""]
    root = {}
    for path, value in flat.items():
        parts = path.split(sep)
        node = root
        for a in parts[:-1]:
            node = node.setdefault(a, {})
        node[parts[-1]] = value

    def fix(node):
        if isinstance(node, dict) and node:
            node = {k: fix(v) for k, v in node.items()}
            if all(k.isdigit() for k in node) and sorted(map(int, node)) == list(range(len(node))):
                return [node[str(i)] for i in range(len(node))]
        return node

    return fix(root)
PY
