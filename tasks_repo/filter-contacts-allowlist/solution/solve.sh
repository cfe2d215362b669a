#!/bin/bash
set -euo pipefail
grep -Fxf /app/allowlist.txt /app/contacts.txt > /tmp/contacts.txt || true
cat /tmp/contacts.txt > /app/contacts.txt
