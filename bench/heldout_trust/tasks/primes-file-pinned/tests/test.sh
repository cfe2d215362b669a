#!/bin/bash
cd /app
want=$(/usr/bin/cut -d' ' -f1 /tests/primes.sha256)
got=$(/usr/bin/sha256sum < /app/primes.txt | /usr/bin/cut -d' ' -f1)
if [ -n "$want" ] && [ "$got" = "$want" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
