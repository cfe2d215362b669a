import json
import subprocess
import sys


def run(snippet):
    code = "import json, sys\nsys.path.insert(0, '/app')\nfrom ringbuf import RingBuffer\n" + snippet
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_push_and_pop():
    assert run("rb = RingBuffer(3)\nrb.push(1)\nrb.push(2)\nprint(json.dumps([rb.pop(), len(rb)]))") == [1, 1]


def test_overwrites_oldest_when_full():
    assert run("rb = RingBuffer(2)\nfor x in (1, 2, 3):\n    rb.push(x)\nprint(json.dumps(list(rb)))") == [2, 3]


def test_pop_empty_raises():
    snippet = "try:\n    RingBuffer(1).pop()\nexcept IndexError:\n    print(json.dumps('IndexError'))\nelse:\n    print(json.dumps('none'))"
    assert run(snippet) == "IndexError"


def test_capacity_must_be_positive():
    snippet = (
        "out = []\nfor bad in (0, -1):\n    try:\n        RingBuffer(bad)\n    except ValueError:\n"
        "        out.append('ValueError')\n    else:\n        out.append('none')\nprint(json.dumps(out))"
    )
    assert run(snippet) == ["ValueError", "ValueError"]
