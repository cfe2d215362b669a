#!/bin/bash
cd /tests
python3 -m pytest -q -p no:cacheprovider -rA /tests/test_rle.py | tee /logs/verifier/pytest.log
if [ "${PIPESTATUS[0]}" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
