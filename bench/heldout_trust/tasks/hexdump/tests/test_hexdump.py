import sys

sys.path.insert(0, "/app")
from hexdump import hexdump  # noqa: E402


def test_empty():
    assert hexdump(b"") == "00000000\n"


def test_short_line():
    assert hexdump(b"Hi\x00") == "00000000  48 69 00" + " " * 42 + "|Hi.|\n00000003\n"


def test_two_lines():
    data = bytes(range(0x41, 0x41 + 20))
    want = (
        "00000000  41 42 43 44 45 46 47 48  49 4a 4b 4c 4d 4e 4f 50  |ABCDEFGHIJKLMNOP|\n"
        "00000010  51 52 53 54" + " " * 39 + "|QRST|\n"
        "00000014\n"
    )
    assert hexdump(data) == want
