#!/usr/bin/env bash
# `make release`: everything a user installs vk-provider from, into dist/, with sha256 sums.
#
#   vk_provider-V-py3-none-any.whl, vk_provider-V.tar.gz   the package (python -m build)
#   vk-provider-V.tgz, index.yaml      the Helm chart (`helm package`) and a chart repository
#                                      index of dist/ (serve dist/ over HTTP to `helm repo add` it)
#   vk-provider-image-V.tar.gz         the image, `docker save | gzip` (a Docker archive, which
#                                      `docker load` of every Docker version reads; not OCI),
#                                      built by scripts/build-image.sh from requirements/image.lock
#   vk-provider-image-V.cdx.json       the image's SBOM (CycloneDX JSON): its Python packages
#                                      from cyclonedx-py run in the image, and its Debian
#                                      packages from dpkg-query in the image (the Debian base is
#                                      not pinned to a snapshot; this records what it holds)
#   SHA256SUMS                         `sha256sum -c SHA256SUMS` in dist/ checks them all
#
# V is vk_provider/__init__.py's __version__ (scripts/version.sh); the chart's version and
# appVersion must equal it. The tools (build, cyclonedx-bom) come from requirements/release-tools.lock,
# installed with --require-hashes into build/release-tools. Needs Docker, helm ($HELM or
# .venv/bin/helm, `make helm`) and python3 3.11. dist/'s earlier files are removed first;
# dist/wheels is scripts/build-image.sh's and stays. Progress on stderr, the artifacts on stdout.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

log() { echo "release: $*" >&2; }
fail() { log "$*"; exit 1; }

version="$(bash scripts/version.sh)"
for key in version appVersion; do
  found="$(sed -n "s/^$key: \"\?\([^\"]*\)\"\?$/\1/p" charts/vk-provider/Chart.yaml)"
  [[ "$found" == "$version" ]] || fail "charts/vk-provider/Chart.yaml's $key is '$found', the package's $version"
done
helm="${HELM:-$root/.venv/bin/helm}"
[[ -x "$helm" ]] || fail "no helm at $helm (make helm, or set HELM)"
image="vk-provider:$version"
dist="$root/dist"
mkdir -p "$dist"
find "$dist" -maxdepth 1 -type f -delete
start=$SECONDS

# --- the release tools, pinned with hashes ---------------------------------------------------
tools="$root/build/release-tools"
tools_key="$(sha256sum requirements/release-tools.lock | cut -c1-16)"
if [[ "$(cat "$tools/.lock-key" 2>/dev/null)" != "$tools_key" ]]; then
  log "installing the release tools (requirements/release-tools.lock) into build/release-tools"
  rm -rf "$tools"
  python3 -m venv "$tools"
  PIP_FIND_LINKS= "$tools/bin/pip" install -q --require-hashes -r requirements/release-tools.lock >&2
  echo "$tools_key" >"$tools/.lock-key"
fi

# --- the package ------------------------------------------------------------------------------
log "python -m build: the sdist, and the wheel built from it"
PIP_FIND_LINKS= "$tools/bin/python" -m build --outdir "$dist" . >"$tools/build.log" 2>&1 ||
  { tail -n 30 "$tools/build.log" >&2; fail "python -m build failed"; }

# --- the chart --------------------------------------------------------------------------------
log "helm lint --strict and helm package charts/vk-provider"
"$helm" lint --strict charts/vk-provider >/dev/null || fail "helm lint --strict charts/vk-provider failed"
"$helm" package charts/vk-provider --destination "$dist" >/dev/null
"$helm" repo index "$dist"

# --- the image --------------------------------------------------------------------------------
IMAGE="$image" bash scripts/build-image.sh >/dev/null
archive="vk-provider-image-$version.tar.gz"
log "docker save $image into dist/$archive"
docker save "$image" | gzip -n >"$dist/$archive"

# --- the SBOM ---------------------------------------------------------------------------------
# cyclonedx-py runs in the image (the image's python reads the image's virtualenv), from the
# release tools' site-packages mounted read-only. The environment it describes is the one
# /sbom/python reports: the image's virtualenv without the tool's PYTHONPATH.
log "SBOM: cyclonedx-py and dpkg-query in $image"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
site="$("$tools/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
printf '#!/bin/sh\nunset PYTHONPATH\nexec /opt/vk-provider/bin/python "$@"\n' >"$work/python"
chmod 755 "$work" "$work/python"
docker run --rm --network none --entrypoint /opt/vk-provider/bin/python \
  -e PYTHONPATH=/sbom-tools -v "$site:/sbom-tools:ro" -v "$work/python:/sbom/python:ro" "$image" \
  -m cyclonedx_py environment --output-reproducible /sbom/python >"$work/python.cdx.json" ||
  fail "cyclonedx-py in $image failed"
docker run --rm --network none --entrypoint dpkg-query "$image" \
  -W -f '${Package}\t${Version}\t${Architecture}\n' >"$work/dpkg.tsv"
debian="$(docker run --rm --network none --entrypoint cat "$image" /etc/debian_version)"
"$tools/bin/python" scripts/sbom-debian.py "$work/python.cdx.json" "$work/dpkg.tsv" "$debian" "$image" \
  >"$dist/vk-provider-image-$version.cdx.json"

# --- the sums ---------------------------------------------------------------------------------
(cd "$dist" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort |
  xargs sha256sum >SHA256SUMS)
log "dist/ in $((SECONDS - start)) s:"
(cd "$dist" && ls -l --time-style=+ $(cat SHA256SUMS | awk '{ print $2 }') SHA256SUMS | awk '{ print $5, $NF }')
