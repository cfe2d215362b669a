#!/bin/bash
cd /app
if sha256sum --check --strict /tests/primes.sha256; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
