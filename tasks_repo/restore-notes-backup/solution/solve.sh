#!/bin/bash
set -euo pipefail
cp /app/backup/notes.txt.bak /app/notes.txt
