#!/bin/bash
printf 'import time\n\ntime.sleep(30)\n' > /app/collatz.py
