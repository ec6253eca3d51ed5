#!/usr/bin/env bash
# Make sure the program of tools/NAME is built and print its path: NAME's go.mod names one
# program with a `tool` directive (`go get -tool MODULE/CMD@VERSION`), built as a static binary
# with the version stamped where the project's own Makefile stamps it. Used for the cluster
# add-ons the monitoring tests run beside the real control plane (docs/metrics.md):
#   metrics-server      sigs.k8s.io/metrics-server (`kubectl top`)
#   kube-state-metrics  k8s.io/kube-state-metrics/v2 (kube-prometheus's recording rules)
# Cached like the control plane (scripts/ensure-kube.sh): a directory keyed by the hash of
# NAME's go.mod and go.sum ($VK_GO_TOOL_CACHE, default ~/.cache/vk-provider/go-tools), so a
# second run is a no-op.
#   scripts/ensure-go-tool.sh metrics-server          # build if needed, print the binary's path
#   scripts/ensure-go-tool.sh metrics-server --print  # print the path it would use, build nothing
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fail() { echo "ensure-go-tool: $*" >&2; exit 1; }
name="${1-}"
src="$root/tools/$name"
[[ -n "$name" && -f "$src/go.mod" ]] || fail "usage: $0 NAME [--print], with NAME a directory of tools/ with a go.mod"

program="$(sed -n 's/^tool \(.*\)$/\1/p' "$src/go.mod")"
[[ -n "$program" && "$program" != *" "* ]] || fail "$src/go.mod must name exactly one program with a tool line"
# The program's module: the longest required module path its import path starts with.
read -r module version < <(awk -v p="$program" '
  $1 == "require" && NF >= 3 { $0 = substr($0, index($0, $2)) }
  NF >= 2 && $2 ~ /^v[0-9]/ && (p == $1 || index(p, $1 "/") == 1) && length($1) > length(best) { best = $1; v = $2 }
  END { print best, v }' "$src/go.mod")
[[ -n "${version-}" ]] || fail "no required module of $program in $src/go.mod"
# Where each project stamps its version (their Makefiles: metrics-server's VERSION_LDFLAGS,
# kube-state-metrics' `-X ${PKG}/version.Version`).
case "$name" in
  metrics-server) stamp="k8s.io/client-go/pkg/version.gitVersion" ;;
  kube-state-metrics) stamp="github.com/prometheus/common/version.Version" ;;
  *) fail "no version stamp known for $name: add it to this script" ;;
esac
key="$(cat "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)"
cache="${VK_GO_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vk-provider/go-tools}"
out="$cache/$name-$version-$key"
if [[ "${2-}" == "--print" ]]; then echo "$out/$name"; exit 0; fi

if [[ ! -x "$out/$name" ]]; then
  # shellcheck source=scripts/lib/kube-go.sh
  . "$root/scripts/lib/kube-go.sh"
  echo "ensure-go-tool: building $name $version into $out" >&2
  start=$SECONDS
  kube_go_build "$src" "$out" "$name" "$program" "-s -w -X $stamp=$version" --help
  echo "ensure-go-tool: built $name $version in $((SECONDS - start)) s" >&2
fi
echo "$out/$name"
