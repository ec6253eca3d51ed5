#!/usr/bin/env bash
# Writes tools/kube/go.mod for the Kubernetes version in the repository's KUBE_VERSION:
# requires k8s.io/kubernetes and the etcd server it pins, and replaces every staging
# module (which k8s.io/kubernetes requires at v0.0.0 and resolves from ./staging) with
# its published v0.<minor>.<patch> release. The replace list is read from the upstream
# go.mod, never typed by hand, so a version bump is: edit KUBE_VERSION, run this, then
# `go mod tidy` (scripts/ensure-kube.sh checks the result builds).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
# shellcheck source=tools/upstream-gomod.sh
. "$here/../upstream-gomod.sh"
etcd="$(field '[r["Version"] for r in d["Require"] if r["Path"]=="go.etcd.io/etcd/server/v3"][0]')"
{
  gomod_header vk-provider.dev/tools/kube
  echo
  echo "require ("
  echo "	k8s.io/kubernetes $version"
  echo "	go.etcd.io/etcd/server/v3 $etcd"
  echo ")"
  echo
  gomod_staging_replaces
} > go.mod
echo "gen-gomod: go.mod for k8s.io/kubernetes $version (staging $staging, etcd $etcd)"
