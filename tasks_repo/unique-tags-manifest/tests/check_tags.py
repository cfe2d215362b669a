import json

tags = set(open("/app/posts.txt").read().split())
expected = json.load(open("/app/data/manifest.json"))["unique_tags"]
try:
    lines = open("/app/out/tags.txt").read().split()
except OSError:
    raise SystemExit(1)
ok = len(lines) == expected and lines == sorted(set(lines)) and all(t in tags for t in lines)
raise SystemExit(0 if ok else 1)
