import json
import os
import sys

SITE = "/app/site"
EXPECTED = "/tests/expected"
PAGES = {"index.md", "about.md", "contact.md"}


def main() -> int:
    try:
        with open(os.path.join(SITE, "manifest.json")) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as exc:
        print(f"no manifest: {exc}")
        return 1
    if set(manifest) != PAGES:
        print(f"manifest pages {sorted(manifest)}, want {sorted(PAGES)}")
        return 1
    bad = 0
    for page, output in manifest.items():
        want_path = os.path.join(EXPECTED, page.removesuffix(".md") + ".html")
        got_path = os.path.realpath(os.path.join(SITE, output))
        if os.path.commonpath([got_path, SITE]) != SITE:
            print(f"{page}: {output} is outside {SITE}")
            bad += 1
            continue
        try:
            with open(got_path) as g, open(want_path) as w:
                same = g.read().strip() == w.read().strip()
        except OSError as exc:
            print(f"{page}: {exc}")
            same = False
        if not same:
            print(f"{page}: {got_path} differs from the expected page")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
