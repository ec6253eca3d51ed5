#!/usr/bin/env bash
# Make sure the host tools of the real-plane sandbox's cluster network are installed
# (`vk-provider sandbox --control-plane real --cluster-network`, docs/networking.md): Debian's
# iptables (kube-proxy's iptables mode runs iptables-save/-restore) and iproute2 (`ip`, for the
# routes the sandbox adds). The conntrack tool is not needed: kube-proxy 1.37 clears stale
# conntrack entries over netlink (k8s.io/kubernetes pkg/proxy/conntrack). Does nothing when the
# commands exist; otherwise installs the packages with apt-get (CI runs as root). Idempotent.
set -euo pipefail

# shellcheck source=scripts/lib/apt-ensure.sh
. "$(dirname "$0")/lib/apt-ensure.sh"
apt_ensure ensure-iptables "iptables-restore ip" iptables iproute2
