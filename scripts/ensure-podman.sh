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
# Writes /etc/containers/storage.conf too: Podman's default storage with skip_mount_home (below).
#
# Without skip_mount_home each podman process mounts the storage's overlay directory onto itself
# at start and unmounts it as it exits, and a container layer the service mounted can end up
# hidden under such a mount. Its removal then fails (unlinkat .../merged: device or resource
# busy), the layer stays "incomplete", and every later store operation of the service fails on it
# (the CI of 2d28de7). Besides that setting, nothing here runs the podman command once the service
# runs: the images are checked and loaded through the service's API. Before the service starts, a
# container layer mount whose layer is gone (an orphan of such a failure, or of a killed service)
# is unmounted, so that the service's start-up deletes the incomplete layer.
set -euo pipefail

PODMAN_SOCKET=${PODMAN_SOCKET:-/run/podman/podman.sock}
PODMAN_LOG=${PODMAN_LOG:-/var/log/vk-provider-podman.log}
PODMAN_CNI_DIR=${PODMAN_CNI_DIR:-/etc/vk-provider/podman-cni}
CONF=/etc/containers/containers.conf
STORAGE=/var/lib/containers/storage
STORAGE_CONF=/etc/containers/storage.conf
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
# The storage as Podman's defaults make it, but for skip_mount_home: no podman process (the
# service, or the `container cleanup` one conmon runs as each container exits) bind-mounts the
# overlay directory onto itself, so none can hide the container layers another one mounted.
wanted_storage=$(cat <<EOF
# Written by vk-provider's scripts/ensure-podman.sh.
[storage]
driver = "overlay"
runroot = "/run/containers/storage"
graphroot = "$STORAGE"

[storage.options.overlay]
skip_mount_home = "true"
EOF
)

# Write $2 to the file $1 unless it holds it already; true when it was written.
write_conf() {
  [ "$(cat "$1" 2>/dev/null)" != "$2" ] || return 1
  mkdir -p "$(dirname "$1")"
  printf '%s\n' "$2" >"$1"
}

changed=
write_conf "$CONF" "$wanted" && changed=yes
write_conf "$STORAGE_CONF" "$wanted_storage" && changed=yes
if [ -n "$changed" ]; then
  pkill -f 'podman system service' 2>/dev/null || true
  sleep 1
fi

# The mounts of container layers whose layer directory has lost its diff (the layer was deleted
# around its mount).
orphan_mounts() {
  awk -v root="$STORAGE/overlay/" 'index($5, root) == 1 && $5 ~ /\/merged$/ {print $5}' /proc/self/mountinfo |
    while read -r merged; do [ -d "${merged%/merged}/diff" ] || echo "$merged"; done
}

# With no service running: unmount the orphans (under every mount of the overlay directory that
# hides them) so that the service's start deletes their incomplete layers.
repair_store() {
  local orphans
  orphans=$(orphan_mounts)
  [ -n "$orphans" ] || return 0
  echo "ensure-podman: unmounting orphaned container layer mounts: $(echo "$orphans" | wc -l)" >&2
  while mountpoint -q "$STORAGE/overlay"; do umount -l "$STORAGE/overlay"; done
  for merged in $(orphan_mounts); do umount -l "$merged" || true; done
}

if ! answers; then
  repair_store
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
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 --unix-socket "$PODMAN_SOCKET" \
    "http://podman/v4.0.0/libpod/images/localhost/$image/exists")
  case $code in
    204) ;;
    404) missing+=("$image") ;;
    *) echo "ensure-podman: asking the service for $image gave HTTP $code (log: $PODMAN_LOG)" >&2; exit 1 ;;
  esac
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "ensure-podman: loading ${missing[*]} into Podman's store" >&2
  docker save "${missing[@]}" | curl -sf --max-time 600 --unix-socket "$PODMAN_SOCKET" -X POST \
    -H 'Content-Type: application/x-tar' --upload-file - http://podman/v4.0.0/libpod/images/load >/dev/null
fi
echo "ensure-podman: the service answers on $PODMAN_SOCKET" >&2
