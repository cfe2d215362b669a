#!/bin/bash
sed -i 's/return a\[0\] <= b\[1\] and b\[0\] <= a\[1\]/return a[0] < b[1] and b[0] < a[1]/' /app/intervals.py
grep -q 'a\[0\] < b\[1\]' /app/intervals.py
