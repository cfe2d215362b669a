#!/bin/bash
set -euo pipefail
awk '!seen[$0]++' /app/contacts.txt > /tmp/contacts.txt
cat /tmp/contacts.txt > /app/contacts.txt
