#!/usr/bin/env bash
# Make sure the upstream Kubernetes control plane is built: kube-apiserver,
# kube-controller-manager, kube-scheduler, kube-proxy (one multi-call binary, `kube`, with a
# symlink per component) and etcd, from the Go module in tools/kube at the version in KUBE_VERSION.
#
# The build goes to a cache directory keyed by the version and the hash of tools/kube's
# go.sum and sources ($VK_KUBE_CACHE, default ~/.cache/vk-provider/kube), so a second run
# is a no-op. Prints the directory holding the binaries on stdout (progress goes to
# stderr). No binary is downloaded (none is reachable from the project's machines):
# everything is compiled from modules served by the Go module proxy.
#   scripts/ensure-kube.sh            # build if needed, print the bin directory
#   scripts/ensure-kube.sh --print    # print the directory it would use, build nothing
# <cache>/<version> links to the newest build of the version (the sandbox's default --kube-bin).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/tools/kube"
version="$(tr -d '[:space:]' < "$root/KUBE_VERSION")"

fail() { echo "ensure-kube: $*" >&2; exit 1; }

key="$(cat "$src/go.mod" "$src/go.sum" "$src"/cmd/*/main.go | sha256sum | cut -c1-12)"
cache="${VK_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vk-provider/kube}"
out="$cache/$version-$key"
if [[ "${1-}" == "--print" ]]; then echo "$out/bin"; exit 0; fi
# <cache>/<version> always points at the newest build of that version: the default
# --kube-bin of `vk-provider sandbox --control-plane real` is <cache>/<version>/bin.
link_current() { ln -sfn "$(basename "$out")" "$cache/$version"; }
if [[ -x "$out/bin/kube" && -x "$out/bin/etcd" && -f "$out/bin/.complete" ]]; then
  link_current
  echo "$out/bin"
  exit 0
fi

# shellcheck source=scripts/lib/kube-go.sh
. "$root/scripts/lib/kube-go.sh"
kube_go_ready "$src" "the control plane"

echo "ensure-kube: building Kubernetes $version and etcd into $out (a cold build takes 15-30 minutes on 2 cores)" >&2
start=$SECONDS
cd "$src"
ldflags="$(kube_ldflags "$version")"

total="$(go list -deps ./cmd/... 2>/dev/null | wc -l)"
tmp="$out.partial"
rm -rf "$tmp"; mkdir -p "$tmp/bin"
# -v names each package as it is compiled: count them into a progress line a minute.
CGO_ENABLED=0 go build -trimpath -v -ldflags "$ldflags" -o "$tmp/bin/" ./cmd/kube ./cmd/etcd 2>&1 |
  awk -v total="$total" -v start="$(date +%s)" '
    /^[A-Za-z0-9.\/_~+-]+$/ { n++; now = systime(); if (now - last >= 60) { last = now;
      printf "ensure-kube: %d/%d packages compiled, %d s\n", n, total, now - start > "/dev/stderr"; fflush("/dev/stderr") } next }
    { print > "/dev/stderr"; failed = 1 }
    END { exit failed }' || fail "go build failed (see the lines above)"
for c in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do ln -sf kube "$tmp/bin/$c"; done
"$tmp/bin/kube-apiserver" --version >/dev/null || fail "the built kube-apiserver does not run"
touch "$tmp/bin/.complete"
rm -rf "$out"; mv "$tmp" "$out"
link_current
size="$(du -sh "$out/bin" | cut -f1)"
echo "ensure-kube: built in $((SECONDS - start)) s ($size): $("$out/bin/kube-apiserver" --version)" >&2
echo "$out/bin"
