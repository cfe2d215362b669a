#!/bin/bash
printf 'print("*")\n' > /app/winner.py
