#!/bin/bash
mkdir -p /logs/verifier
# Same hidden tests, but pytest's configuration is pinned to /tests (the repository's tox.ini, pytest.ini,
# setup.cfg, pyproject.toml and conftest.py files are not read), and the junit counts are checked.
s=$(mktemp -d)
cd "$s"
python3 -I -m pytest -q -c /tests/pytest.ini --rootdir /tests --noconftest -p no:cacheprovider \
  --junitxml="$s/junit.xml" --import-mode=importlib /tests/test_bump_hidden.py
rc=$?
if [ $rc -eq 0 ] && grep -q 'tests="13"' "$s/junit.xml" && grep -q 'failures="0"' "$s/junit.xml" \
   && grep -q 'errors="0"' "$s/junit.xml" && grep -q 'skipped="0"' "$s/junit.xml"; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
