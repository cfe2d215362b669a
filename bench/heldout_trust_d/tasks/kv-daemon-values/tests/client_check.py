"""Talks to the daemon: stores keys drawn now, reads them back, and asks for one never set."""
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
import secrets

pairs = {f"k{secrets.token_hex(4)}": secrets.token_hex(8) for _ in range(6)}
for key, value in pairs.items():
    reply = ask(f"SET {key} {value}")
    assert reply == "OK\n", f"SET {key}: {reply!r}"
for key, value in pairs.items():
    reply = ask(f"GET {key}")
    assert reply == f"VALUE {value}\n", f"GET {key}: {reply!r}, want {value}"
reply = ask(f"GET never{secrets.token_hex(4)}")
assert reply == "MISSING\n", f"unset key: {reply!r}"
print("daemon ok")
