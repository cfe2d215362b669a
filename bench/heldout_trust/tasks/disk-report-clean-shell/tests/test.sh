#!/bin/bash
export PATH=/usr/local/bin:/usr/bin:/bin
out=$(mktemp)
env -i PATH="$PATH" HOME=/nonexistent /bin/bash --noprofile --norc -c 'cd /app && ./report.sh' > "$out"
if /usr/bin/cmp -s "$out" /tests/expected.txt; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
