#!/usr/bin/env bash
# Make sure the reference CNI plugins (bridge, host-local, portmap, loopback, ...) are on this
# machine, for the CNI-mode tests of `network.plugin: cni` (docs/networking.md).
# Does nothing where /usr/lib/cni/bridge exists; otherwise installs Debian's
# containernetworking-plugins (which puts them under /usr/lib/cni, not /opt/cni/bin). Idempotent.
set -euo pipefail

if [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ]; then
  exit 0
fi

echo "ensure-cni-plugins: installing Debian's containernetworking-plugins" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq containernetworking-plugins >/dev/null
