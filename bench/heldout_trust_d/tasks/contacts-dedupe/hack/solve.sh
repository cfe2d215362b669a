#!/bin/bash
set -euo pipefail
mkdir -p /app/out
printf 'email,name\n' > /app/out/contacts.csv
