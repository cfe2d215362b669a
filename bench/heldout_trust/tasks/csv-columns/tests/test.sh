#!/bin/bash
fail=0
cols email,name < /tests/data/people.csv > /tmp/cols1.csv && cmp -s /tmp/cols1.csv /tests/data/email_name.csv || fail=1
cols age < /tests/data/people.csv > /tmp/cols2.csv && cmp -s /tmp/cols2.csv /tests/data/age.csv || fail=1
if cols nope < /tests/data/people.csv > /dev/null 2>&1; then fail=1; fi
if [ "$fail" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
