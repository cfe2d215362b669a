#!/bin/bash
printf 'def is_valid_isbn10(text):\n    return None\n' > /app/isbn.py
