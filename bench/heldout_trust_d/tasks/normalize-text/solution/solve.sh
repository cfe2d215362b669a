#!/bin/bash
set -euo pipefail
mkdir -p /app/out
python3 -c "
lines = (' '.join(l.split()).lower() for l in open('/app/raw.txt').read().split('\n'))
open('/app/out/normalized.txt', 'w').write(''.join(l + '\n' for l in lines if l))
"
