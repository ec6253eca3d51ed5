#!/usr/bin/env bash
# Build the vk-provider image from the repo's Dockerfile without any container registry.
#
#   1. The base image: a Debian bookworm root filesystem made with debootstrap from the
#      Debian mirror this machine's apt uses (scripts/lib/debian-mirror.sh), with python3 (3.11, the minor of the Dockerfile's default
#      python:3.11-slim) and python3-venv, brought in with `docker import` as
#      $BASE_IMAGE. Cached: rebuilt only when its recipe (below) changes.
#   2. Into dist/wheels: the project's wheel, built on the host with the host's pip, and
#      the wheels of its dependencies pinned with hashes in requirements/image.lock
#      (`pip download --require-hashes`; PyPI is reachable here). The host's python must
#      have the base's minor, so that compiled wheels match the image's ABI; otherwise
#      this runs in a container of the base image instead.
#   3. `docker build --build-arg PYTHON_IMAGE=$BASE_IMAGE`: the Dockerfile installs the
#      locked wheels with `pip install --no-index --require-hashes`, so the build checks
#      the lock and needs no index and no registry.
#
# The image is labelled with a hash of everything that goes into it (Dockerfile, sources,
# pyproject.toml, requirements/image.lock, the base image); when an image with that label exists nothing is built
# (FORCE=1 rebuilds). Prints the image reference on stdout; progress goes to stderr.
#   scripts/build-image.sh               # build if needed, print e.g. vk-provider:0.1.0
#   IMAGE=vk-provider:dev scripts/build-image.sh
#   scripts/build-image.sh --print       # print the reference it would build, build nothing
# On a machine with a registry the same Dockerfile also builds from python:3.11-slim:
#   pip wheel --no-deps . -w dist/wheels
#   pip download --no-deps --only-binary=:all: --require-hashes -r requirements/image.lock -d dist/wheels
#   docker build -t vk-provider:0.1.0 .
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

log() { echo "build-image: $*" >&2; }
fail() { log "$*"; exit 1; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

version="$(bash scripts/version.sh)"
IMAGE="${IMAGE:-vk-provider:$version}"
if [[ "${1-}" == "--print" ]]; then echo "$IMAGE"; exit 0; fi

# --- 1. the base image -------------------------------------------------------------------
SUITE=bookworm
# shellcheck source=lib/debian-mirror.sh
source scripts/lib/debian-mirror.sh
BASE_PACKAGES=python3,python3-venv,ca-certificates
BASE_PYTHON=3.11
BASE_IMAGE="${BASE_IMAGE:-vk-provider/python-base:$BASE_PYTHON-$SUITE}"
base_key="$(printf '%s\n' 1 "$SUITE" "$BASE_PACKAGES" | sha256sum | cut -c1-12)"

base_current() {
  [[ "$(docker image inspect -f '{{ index .Config.Labels "io.vk-provider.base-key" }}' "$BASE_IMAGE" 2>/dev/null)" == "$base_key" ]]
}

build_base() {
  if ! command -v debootstrap >/dev/null 2>&1; then
    log "installing Debian's debootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq debootstrap >/dev/null
  fi
  local work rootfs start=$SECONDS
  work="$(mktemp -d)"
  # shellcheck disable=SC2064  # expand now: $work is local
  trap "rm -rf '$work'" EXIT
  rootfs="$work/rootfs"
  MIRROR="$(debian_mirror)" || fail "no Debian mirror in this machine's apt sources (set DEBIAN_MIRROR)"
  log "debootstrap $SUITE (+ $BASE_PACKAGES) from $MIRROR"
  debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$rootfs" "$MIRROR" \
    >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log" >&2; fail "debootstrap failed"; }
  # What a slim image leaves out: package caches and lists, documentation, locales.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin \
    "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* "$rootfs"/debootstrap \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
    "$rootfs"/usr/share/locale/*
  find "$rootfs" -name __pycache__ -prune -exec rm -rf {} +
  # The mirror it was built from, for whoever extends the image.
  echo "deb $MIRROR $SUITE main" >"$rootfs/etc/apt/sources.list"
  tar -C "$rootfs" --numeric-owner -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "LABEL io.vk-provider.base-key=$base_key" \
    --change 'CMD ["python3"]' \
    - "$BASE_IMAGE" >/dev/null
  rm -rf "$work"
  trap - EXIT
  log "built $BASE_IMAGE in $((SECONDS - start)) s"
}

if [[ "${FORCE:-0}" == 1 ]] || ! base_current; then
  build_base
fi
base_id="$(docker image inspect -f '{{ .Id }}' "$BASE_IMAGE")"

# --- the cache key of the image ----------------------------------------------------------
# Every file the build reads (the .dockerignore keeps the context to these), uncommitted
# changes included, plus the base image.
src_key="$(
  {
    echo "$base_id"
    git ls-files --cached --others --exclude-standard -- Dockerfile .dockerignore pyproject.toml README.md \
      requirements/image.lock vk_provider vk_sandbox vk_common |
      LC_ALL=C sort | while IFS= read -r f; do [[ -f "$f" ]] && sha256sum "$f"; done
  } | sha256sum | cut -c1-16
)"
cached="$(docker images -q --filter "label=io.vk-provider.source-hash=$src_key" | head -n 1)"
if [[ "${FORCE:-0}" != 1 && -n "$cached" ]]; then
  docker tag "$cached" "$IMAGE"
  echo "$IMAGE"
  exit 0
fi

# --- 2. the wheels -----------------------------------------------------------------------
start=$SECONDS
python="${PYTHON:-python3}"
wheels="$root/dist/wheels"
rm -rf "$wheels"; mkdir -p "$wheels"
host_minor="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
# The project's wheel, then the locked wheels (binary only: a wheel built here from an sdist
# would not have the lock's hash). PIP_FIND_LINKS of the machine must not feed foreign wheels
# in: the index only.
fetch_wheels='PIP_FIND_LINKS= "$0" -m pip wheel -q --no-deps -w dist/wheels . \
  && PIP_FIND_LINKS= "$0" -m pip download -q --no-deps --only-binary=:all: --require-hashes \
     -r requirements/image.lock -d dist/wheels'
if [[ "$host_minor" == "$BASE_PYTHON" ]]; then
  log "the project's wheel and the locked wheels with $python ($host_minor) into dist/wheels"
  sh -ec "$fetch_wheels" "$python" >&2 || fail "pip wheel/download failed"
else
  log "host python is ${host_minor:-missing}, the image's is $BASE_PYTHON: building the wheels in a $BASE_IMAGE container"
  mkdir -p "${XDG_CACHE_HOME:-$HOME/.cache}/pip"
  # The host's CA bundle: the path to PyPI may pass a proxy that only the host's CAs trust.
  ca="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"
  ca_args=()
  [[ -f "$ca" ]] && ca_args=(-v "$ca:/etc/ssl/host-ca.crt:ro" -e PIP_CERT=/etc/ssl/host-ca.crt)
  docker run --rm -v "$root:/src:ro" -v "$wheels:/wheels" "${ca_args[@]}" \
    -v "${XDG_CACHE_HOME:-$HOME/.cache}/pip:/root/.cache/pip" "$BASE_IMAGE" \
    sh -ec 'python3 -m venv /tmp/venv && mkdir /tmp/src && cd /src \
      && tar --exclude=./.venv --exclude=./build --exclude=./dist -c . | tar -C /tmp/src -x \
      && mkdir /tmp/src/dist && ln -s /wheels /tmp/src/dist/wheels && cd /tmp/src \
      && sh -ec "$1" /tmp/venv/bin/python && chown -R '"$(id -u):$(id -g)"' /wheels' sh "$fetch_wheels" >&2 ||
    fail "pip wheel/download in the container failed"
fi
log "$(find "$wheels" -name '*.whl' | wc -l) wheels in $((SECONDS - start)) s"

# --- 3. the image ------------------------------------------------------------------------
log "docker build $IMAGE from $BASE_IMAGE"
build_log="$(mktemp)"
# The legacy builder: BuildKit would try to fetch its Dockerfile frontend and metadata
# from a registry.
if ! DOCKER_BUILDKIT=0 docker build \
  --build-arg "PYTHON_IMAGE=$BASE_IMAGE" \
  --build-arg "VERSION=$version" \
  --label "io.vk-provider.source-hash=$src_key" \
  -t "$IMAGE" . >"$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2; rm -f "$build_log"
  fail "docker build failed"
fi
rm -f "$build_log"
# The builds of earlier sources, untagged now: keep the disk from filling up edit by edit.
docker images -q --filter dangling=true --filter label=io.vk-provider.source-hash |
  xargs -r docker rmi >/dev/null 2>&1 || true
log "built $IMAGE in $((SECONDS - start)) s ($(docker image inspect -f '{{ .Size }}' "$IMAGE" | awk '{ printf "%.0f MB", $1 / 1e6 }'))"
echo "$IMAGE"
