#!/usr/bin/env bash
# Make sure Podman's API service answers on $PODMAN_SOCKET, with the test images in its store,
# for the Podman engine tests (docs/runtime.md#podman). Installs Debian's podman when missing
# (with catatonit and the CNI plugins, no recommends); writes /etc/containers/containers.conf for a
# machine without systemd as PID 1 (cgroup_manager cgroupfs, events_logger file) and for this
# sandbox's limits (default_ulimits at the hard limits a container may still get: Podman's own
# defaults ask for more than the sandbox allows, and crun's setrlimit is refused); moves the
# bridge network the package drops into /etc/cni/net.d out of it, into $PODMAN_CNI_DIR, so that
# no CNI network of Podman's is ever taken for the pods' network (network.cniConfDir); starts
# `podman system service` in the background (log: $PODMAN_LOG) and waits up to 60 s for it; loads
# the local test images of the Docker engine (scripts/build-test-images.sh) into Podman's store.
# Idempotent. Needs root and the Docker engine (scripts/ensure-docker.sh).
set -euo pipefail

PODMAN_SOCKET=${PODMAN_SOCKET:-/run/podman/podman.sock}
PODMAN_LOG=${PODMAN_LOG:-/var/log/vk-provider-podman.log}
PODMAN_CNI_DIR=${PODMAN_CNI_DIR:-/etc/vk-provider/podman-cni}
CONF=/etc/containers/containers.conf
IMAGES=(vk-test/busybox:1 vk-test/pause:1)

answers() {
  curl -sf --max-time 5 --unix-socket "$PODMAN_SOCKET" http://podman/_ping >/dev/null 2>&1
}

if ! command -v podman >/dev/null 2>&1; then
  echo "ensure-podman: installing Debian's podman" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends podman catatonit containernetworking-plugins >/dev/null
fi

mkdir -p "$PODMAN_CNI_DIR"
for conflist in /etc/cni/net.d/*podman*.conflist; do
  [ -e "$conflist" ] || continue
  echo "ensure-podman: moving $conflist to $PODMAN_CNI_DIR (not a pod network)" >&2
  mv "$conflist" "$PODMAN_CNI_DIR/"
done

# Podman lowers its own RLIMIT_NPROC to 32768 (conmon and crun inherit it): no container may
# ask for more.
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
[ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
wanted=$(cat <<EOF
# Written by vk-provider's scripts/ensure-podman.sh.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"

[network]
network_backend = "cni"
network_config_dir = "$PODMAN_CNI_DIR"
EOF
)
if [ "$(cat "$CONF" 2>/dev/null)" != "$wanted" ]; then
  mkdir -p "$(dirname "$CONF")"
  printf '%s\n' "$wanted" >"$CONF"
  pkill -f 'podman system service' 2>/dev/null || true
  sleep 1
fi

if ! answers; then
  echo "ensure-podman: starting podman system service on $PODMAN_SOCKET (log: $PODMAN_LOG)" >&2
  mkdir -p "$(dirname "$PODMAN_SOCKET")"
  rm -f "$PODMAN_SOCKET"
  (
    for fd in /proc/self/fd/*; do
      n=${fd##*/}
      [ "$n" -gt 2 ] && { eval "exec $n>&-" 2>/dev/null || true; }
    done
    exec setsid podman system service --time=0 "unix://$PODMAN_SOCKET"
  ) </dev/null >"$PODMAN_LOG" 2>&1 &
  for _ in $(seq 1 60); do
    answers && break
    sleep 1
  done
  answers || { echo "ensure-podman: the service did not answer within 60 s (log: $PODMAN_LOG)" >&2; exit 1; }
fi

missing=()
for image in "${IMAGES[@]}"; do
  podman image exists "localhost/$image" || missing+=("$image")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "ensure-podman: loading ${missing[*]} into Podman's store" >&2
  docker save "${missing[@]}" | podman load -q >/dev/null
fi
echo "ensure-podman: the service answers on $PODMAN_SOCKET" >&2
