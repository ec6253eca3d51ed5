#!/usr/bin/env bash
# Make sure the local registry the image-pull tests start is installed: Debian's
# docker-registry (the distribution registry, `docker-registry serve <config>`) and
# apache2-utils (`htpasswd -B` for its basic auth). Does nothing when both commands exist;
# otherwise installs the two packages with apt-get (CI runs as root on a fresh machine).
# Idempotent.
set -euo pipefail

if command -v docker-registry >/dev/null 2>&1 && command -v htpasswd >/dev/null 2>&1; then
  exit 0
fi

echo "ensure-registry: installing Debian's docker-registry and apache2-utils" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq docker-registry apache2-utils >/dev/null
command -v docker-registry >/dev/null && command -v htpasswd >/dev/null
