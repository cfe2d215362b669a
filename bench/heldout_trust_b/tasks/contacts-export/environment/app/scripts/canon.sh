#!/bin/bash
# Canonical form of a CSV export for comparisons: header first, rows sorted, trailing blanks stripped.
sed 's/[[:space:]]*$//' | { IFS= read -r header; printf '%s\n' "$header"; LC_ALL=C sort; }
