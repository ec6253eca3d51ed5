#!/usr/bin/env bash
# Writes tools/conformance/go.mod for the Kubernetes version in the repository's
# KUBE_VERSION: requires k8s.io/kubernetes and replaces every staging module (which
# k8s.io/kubernetes requires at v0.0.0 and resolves from ./staging) with its published
# v0.<minor>.<patch> release, as tools/kube/gen-gomod.sh does for the control plane. The
# replace list is read from the upstream go.mod, never typed by hand, so a version bump
# is: edit KUBE_VERSION, run this, then `go mod tidy` (tools.go names the packages whose
# dependencies go.sum must hold; scripts/build-conformance.sh checks the result builds).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
# shellcheck source=tools/upstream-gomod.sh
. "$here/../upstream-gomod.sh"
{
  gomod_header vk-provider.dev/tools/conformance
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  gomod_staging_replaces
} > go.mod
echo "gen-gomod: go.mod for k8s.io/kubernetes $version (staging $staging)"
