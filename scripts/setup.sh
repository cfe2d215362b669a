#!/usr/bin/env bash
# One-shot set-up on a fresh Debian/Ubuntu machine (run as root): system packages, a running
# Docker daemon with gVisor (runsc) registered, the project's virtualenv, and the offline base
# image. Safe to rerun.
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v runsc >/dev/null || need+=(runsc)
command -v git >/dev/null || need+=(git)  # the audit reads .git history found in task images
# the reward guard (qaflow/trial/guard) is built once, statically linked, on first use
{ command -v cc >/dev/null && [ -f /usr/lib/x86_64-linux-gnu/libc.a ]; } || need+=(gcc libc6-dev)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" ca-certificates >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
if [ "${QAFLOW_TRAIN:-1}" = "1" ]; then
  # The CPU build of torch comes from a local file; never let a resolver pull the CUDA build.
  .venv/bin/pip install -q torch==2.13.0
  .venv/bin/pip install -q -e ".[dev,train,ray]"
else
  .venv/bin/pip install -q -e ".[dev,ray]"
fi

start_dockerd() {
  echo "starting dockerd (log: /var/log/qaflow-dockerd.log)"
  nohup dockerd >/var/log/qaflow-dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /var/log/qaflow-dockerd.log" >&2; exit 1; }
}

# gVisor: register runsc in /etc/docker/daemon.json (other settings kept). A daemon started here
# reads it at start; one already running reloads it on SIGHUP (install-gvisor sends it).
started_dockerd=0
if ! docker info >/dev/null 2>&1; then
  if command -v runsc >/dev/null; then
    .venv/bin/qaflow sandbox install-gvisor --no-reload >/dev/null || true
  fi
  start_dockerd
  started_dockerd=1
fi

.venv/bin/qaflow images build-base

if command -v runsc >/dev/null; then
  if ! .venv/bin/qaflow sandbox install-gvisor; then
    if [ "$started_dockerd" = 1 ] && ! docker info --format '{{json .Runtimes}}' | grep -q '"runsc"'; then
      echo "dockerd did not load the runsc runtime: restarting the dockerd started here"
      kill "$(cat /var/run/docker.pid)" 2>/dev/null || true
      for _ in $(seq 30); do docker info >/dev/null 2>&1 || break; sleep 1; done
      start_dockerd
      .venv/bin/qaflow sandbox install-gvisor ||
        echo "warning: gVisor does not work here; its tests skip and say why" >&2
    else
      echo "warning: gVisor does not work here; its tests skip and say why" >&2
    fi
  fi
fi

.venv/bin/qaflow sandbox doctor
