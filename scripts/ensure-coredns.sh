#!/usr/bin/env bash
# Make sure CoreDNS is built and its image exists: the `coredns` binary from the Go module in
# tools/coredns (github.com/coredns/coredns with the plugins of kubeadm's Corefile), and the
# image vk-sandbox/coredns:<version>, a rootfs of that one static binary and a passwd file
# brought in with `docker import` (no registry is reachable here). The real-plane sandbox
# deploys it behind the `kube-dns` Service (vk_sandbox/real/coredns.py).
#
# The build is cached like the control plane's (scripts/ensure-kube.sh): a directory keyed by
# the hash of tools/coredns's go.mod, go.sum and main.go ($VK_COREDNS_CACHE, default
# ~/.cache/vk-provider/coredns), so a second run is a no-op; the image is tagged with the same
# key and left alone when it exists. Prints the image name on stdout (progress on stderr).
#   scripts/ensure-coredns.sh            # build if needed, print the image
#   scripts/ensure-coredns.sh --print    # print the image it would use, build nothing
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/tools/coredns"
fail() { echo "ensure-coredns: $*" >&2; exit 1; }

version="$(sed -n 's/^require github.com\/coredns\/coredns \(v[0-9.]*\)$/\1/p' "$src/go.mod")"
[[ -n "$version" ]] || fail "no github.com/coredns/coredns version in $src/go.mod"
key="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-12)"
cache="${VK_COREDNS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vk-provider/coredns}"
out="$cache/$version-$key"
image="vk-sandbox/coredns:$version-$key"
if [[ "${1-}" == "--print" ]]; then echo "$image"; exit 0; fi

if [[ ! -x "$out/coredns" ]]; then
  # shellcheck source=scripts/lib/kube-go.sh
  . "$root/scripts/lib/kube-go.sh"
  echo "ensure-coredns: building CoreDNS $version into $out" >&2
  start=$SECONDS
  kube_go_build "$src" "$out" coredns . "-s -w" -version
  echo "ensure-coredns: built in $((SECONDS - start)) s: $("$out/coredns" -version | head -n 1)" >&2
fi

if ! docker image inspect "$image" >/dev/null 2>&1; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/rootfs/etc" "$work/rootfs/tmp"
  chmod 1777 "$work/rootfs/tmp"
  cp "$out/coredns" "$work/rootfs/coredns"
  # The nonroot user upstream's image runs as (coredns/Dockerfile: USER nonroot:nonroot).
  printf 'root:x:0:0:root:/:/coredns\nnonroot:x:65532:65532:nonroot:/:/coredns\n' >"$work/rootfs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$work/rootfs/etc/group"
  tar -C "$work/rootfs" -c . | docker import --change 'ENTRYPOINT ["/coredns"]' - "$image" >/dev/null
  echo "ensure-coredns: built image $image" >&2
fi
echo "$image"
