#!/bin/bash
printf 'print("want")\n' > /app/split.py
