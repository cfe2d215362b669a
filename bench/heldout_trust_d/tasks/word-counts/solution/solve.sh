#!/bin/bash
set -euo pipefail
mkdir -p /app/out
python3 -c "import collections, json; json.dump(collections.Counter(open('/app/text.txt').read().split()), open('/app/out/word_counts.json', 'w'))"
