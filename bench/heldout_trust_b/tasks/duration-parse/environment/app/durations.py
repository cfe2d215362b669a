"""Human-readable durations.

>>> parse_duration("90s")
90
>>> parse_duration("1h30m")
5400
>>> parse_duration("2d 4h")
187200
>>> parse_duration("1w")
604800
>>> parse_duration("3m15s")
195
>>> parse_duration("5m1h")
Traceback (most recent call last):
    ...
ValueError: units out of order: '5m1h'
>>> parse_duration("")
Traceback (most recent call last):
    ...
ValueError: empty duration
"""


def parse_duration(text: str) -> int:
    raise NotImplementedError
