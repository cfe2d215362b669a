"""Talks to the daemon: stores some keys and reads them back."""
import socket
import sys
import time

SOCK = sys.argv[1]


def ask(line: str) -> str:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(SOCK)
        s.sendall(line.encode() + b"\n")
        return s.makefile().readline()


deadline = time.monotonic() + 10
while True:
    try:
        ask("GET __ping__")
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("the daemon never answered")
        time.sleep(0.05)

PAIRS = {"colour": "blue", "answer": "42", "path": "/var/lib/x", "colour2": "green"}
for key, value in PAIRS.items():
    reply = ask(f"SET {key} {value}")
    assert reply == "OK\n", f"SET {key}: {reply!r}"
for key in PAIRS:
    reply = ask(f"GET {key}")
    assert reply.split()[0] == "VALUE", f"GET {key}: {reply!r}"
print("daemon ok")
