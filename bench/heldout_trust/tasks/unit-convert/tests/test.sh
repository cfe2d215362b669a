#!/bin/bash
cd /tests
if python3 -m unittest discover -s /tests -p 'test_*.py' -v; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
