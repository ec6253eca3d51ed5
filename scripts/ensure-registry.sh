#!/usr/bin/env bash
# Make sure the local registry the image-pull tests start is installed: Debian's
# docker-registry (the distribution registry, `docker-registry serve <config>`) and
# apache2-utils (`htpasswd -B` for its basic auth). Idempotent.
set -euo pipefail
# shellcheck source=scripts/lib/apt-ensure.sh
. "$(dirname "$0")/lib/apt-ensure.sh"
apt_ensure ensure-registry "docker-registry htpasswd" docker-registry apache2-utils
