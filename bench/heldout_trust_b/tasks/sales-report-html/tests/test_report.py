import subprocess
import sys
from html.parser import HTMLParser


class Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.title, self._in_title = [], "", False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def test_report(tmp_path):
    out = tmp_path / "report.html"
    subprocess.run([sys.executable, "/app/report.py", "/tests/sales.csv", str(out)], check=True, timeout=60)
    text = out.read_text()
    p = Collect()
    p.feed(text)
    assert p.title == "Sales report"
    assert ("table", {"id": "by-region"}) in p.tags
    # header + 3 regions + total
    assert sum(1 for t, _ in p.tags if t == "tr") == 5
