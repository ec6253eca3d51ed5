#!/usr/bin/env bash
# Make sure the reference CNI plugins (bridge, host-local, portmap, loopback, ...) are on this
# machine, for the CNI-mode tests of `network.plugin: cni` (docs/networking.md).
# Does nothing where /usr/lib/cni/bridge exists; otherwise installs Debian's
# containernetworking-plugins (which puts them under /usr/lib/cni, not /opt/cni/bin). Idempotent.
set -euo pipefail

# shellcheck source=scripts/lib/apt-ensure.sh
. "$(dirname "$0")/lib/apt-ensure.sh"
apt_ensure ensure-cni-plugins "/usr/lib/cni/bridge /usr/lib/cni/host-local" containernetworking-plugins
