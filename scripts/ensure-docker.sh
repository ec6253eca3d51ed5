#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine.
# Does nothing where `docker info` already works; otherwise installs Debian's
# docker.io (when dockerd is missing), starts dockerd in the background with its
# log in $DOCKERD_LOG and waits up to 60 s for it. Idempotent.
set -euo pipefail

DOCKERD_LOG=${DOCKERD_LOG:-/var/log/vk-provider-dockerd.log}

if docker info >/dev/null 2>&1; then
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "ensure-docker: installing Debian's docker.io" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io >/dev/null
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  echo "ensure-docker: starting dockerd (log: $DOCKERD_LOG)" >&2
  # In a session of its own and without the caller's descriptors: a `flock` held by whoever ran
  # this script would otherwise stay locked for as long as dockerd lives.
  (
    for fd in /proc/self/fd/*; do
      n=${fd##*/}
      [ "$n" -gt 2 ] && { eval "exec $n>&-" 2>/dev/null || true; }
    done
    exec setsid dockerd
  ) </dev/null >"$DOCKERD_LOG" 2>&1 &
fi

for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    echo "ensure-docker: engine is up" >&2
    exit 0
  fi
  sleep 1
done

echo "ensure-docker: dockerd did not answer within 60 s; last log lines:" >&2
tail -n 30 "$DOCKERD_LOG" >&2 || true
exit 1
