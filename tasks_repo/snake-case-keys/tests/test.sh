#!/bin/bash
# Fetch the pinned pytest the tests were written against, then run the tests with it.
mkdir -p /logs/verifier
if python3 /tests/fetch_pytest.py /tmp/pinned-pytest \
  && PYTHONPATH=/tmp/pinned-pytest python3 -m pytest -p no:cacheprovider /tests/test_outputs.py -rA; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
