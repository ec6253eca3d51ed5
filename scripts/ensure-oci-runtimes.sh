#!/usr/bin/env bash
# Register Debian's crun and gVisor's runsc with the Docker engine, for the RuntimeClass tests
# (docs/runtime.md#runtimeclass): installs the packages when missing, adds their paths to the
# "runtimes" of /etc/docker/daemon.json (its other keys kept) and has a running dockerd reload
# it (SIGHUP; a dockerd started later reads the file). crun refuses a hybrid cgroup host whose v2
# hierarchy holds controllers ("cgroups in hybrid mode not supported, drop all controllers from
# cgroupv2"): each such controller (hugetlb on these machines) gets a v1 hierarchy of its own, as
# systemd's hybrid layout mounts them. gVisor's runsc is registered too, though it cannot run
# here (docs/runtime.md#runtimeclass). Idempotent. Needs the engine (scripts/ensure-docker.sh)
# and root.
set -euo pipefail

DAEMON_JSON=${DAEMON_JSON:-/etc/docker/daemon.json}

listed() {
  local runtimes
  runtimes=$(docker info --format '{{json .Runtimes}}' 2>/dev/null || true)
  [[ $runtimes == *'"crun"'* && $runtimes == *'"runsc"'* ]]
}

UNIFIED=/sys/fs/cgroup/unified
# (cgroupfs reports every file's size as 0, so the test reads the list rather than `[ -s ]`.)
controllers=""
if [ "$(stat -fc %T /sys/fs/cgroup)" = tmpfs ] && [ -r "$UNIFIED/cgroup.controllers" ]; then
  controllers=$(cat "$UNIFIED/cgroup.controllers")
fi
if [ -n "$controllers" ]; then
  for controller in $controllers; do
    echo "ensure-oci-runtimes: mounting the $controller controller as cgroup v1 (for crun)" >&2
    mkdir -p "/sys/fs/cgroup/$controller"
    mount -t cgroup -o "$controller" cgroup "/sys/fs/cgroup/$controller"
  done
fi

if listed; then
  exit 0
fi

if ! command -v crun >/dev/null 2>&1 || ! command -v runsc >/dev/null 2>&1; then
  echo "ensure-oci-runtimes: installing Debian's crun and runsc" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq crun runsc >/dev/null
fi

mkdir -p "$(dirname "$DAEMON_JSON")"
python3 - "$DAEMON_JSON" "$(command -v crun)" "$(command -v runsc)" <<'EOF'
import json
import os
import sys

path, crun, runsc = sys.argv[1:4]
config = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
config.setdefault("runtimes", {}).update({"crun": {"path": crun}, "runsc": {"path": runsc}})
with open(path + ".tmp", "w", encoding="utf-8") as f:
    json.dump(config, f, indent=2)
    f.write("\n")
os.replace(path + ".tmp", path)
EOF

if pgrep -x dockerd >/dev/null 2>&1; then
  pkill -HUP -x dockerd
fi

for _ in $(seq 1 30); do
  if listed; then
    echo "ensure-oci-runtimes: crun and runsc registered" >&2
    exit 0
  fi
  sleep 1
done
echo "ensure-oci-runtimes: the engine does not list crun and runsc after 30 s (is dockerd running?)" >&2
exit 1
