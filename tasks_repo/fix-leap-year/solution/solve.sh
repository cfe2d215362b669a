#!/bin/bash
cat > /app/leap.py <<'PY'
def is_leap(year):
    """Whether `year` is a leap year in the Gregorian calendar."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
PY
