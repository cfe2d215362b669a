#!/usr/bin/env bash
# One-shot set-up on a fresh Debian/Ubuntu machine (run as root): system packages, a running
# Docker daemon, the project's virtualenv, and the offline base image. Safe to rerun.
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" ca-certificates >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  echo "starting dockerd (log: /var/log/qaflow-dockerd.log)"
  nohup dockerd >/var/log/qaflow-dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /var/log/qaflow-dockerd.log" >&2; exit 1; }
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
if [ "${QAFLOW_TRAIN:-0}" = "1" ]; then
  # The CPU build of torch comes from a local file; never let a resolver pull the CUDA build.
  .venv/bin/pip install -q torch==2.13.0
  .venv/bin/pip install -q -e ".[dev,train,ray]"
else
  .venv/bin/pip install -q -e ".[dev,ray]"
fi

.venv/bin/qaflow images build-base
.venv/bin/qaflow sandbox doctor
