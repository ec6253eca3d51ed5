#!/usr/bin/env bash
# Build the upstream Kubernetes conformance suite offline, at the version in KUBE_VERSION:
#
#   1. e2e.test: `go test -c k8s.io/kubernetes/test/e2e` from the Go module in
#      tools/conformance (generated go.mod, as tools/kube), plus the agnhost and nnp
#      binaries of the test images, built with CGO_ENABLED=0 from the same module.
#      They go to a cache directory keyed by the version and the hash of tools/conformance
#      ($VK_CONFORMANCE_CACHE, default ~/.cache/vk-provider/conformance), so a second run
#      is a no-op; <cache>/<version> links to the newest build of the version.
#   2. The test images the SIG Node specs use, tagged locally with the exact names the
#      built suite asks for (`e2e.test --list-images`), so that no pull is needed: no
#      container registry is reachable from the project's machines. Each is a root
#      filesystem brought in with `docker import`: Debian trixie's busybox-static 1.37 (the
#      version of the suite's busybox image; bookworm's 1.35 as a fallback) for the shell
#      and applets, the binaries of step 1, pause compiled from the upstream pause.c, and
#      Debian's nginx on a debootstrap root filesystem.
#      An image whose tag exists is left as it is (FORCE=1 rebuilds them all).
#
# Prints the directory holding e2e.test on stdout; progress goes to stderr.
#   scripts/build-conformance.sh              # build what is missing, print the bin directory
#   scripts/build-conformance.sh --print      # print the directory it would use, build nothing
#   scripts/build-conformance.sh --no-images  # the binaries only
#   scripts/build-conformance.sh --images     # print the image names it builds, build nothing
# A cold build of e2e.test takes long (see docs/conformance.md); on a shared machine run it
# as `GOFLAGS=-p=1 nice -n 19 scripts/build-conformance.sh`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/tools/conformance"
version="$(tr -d '[:space:]' < "$root/KUBE_VERSION")"

log() { echo "build-conformance: $*" >&2; }
fail() { log "$*"; exit 1; }
# shellcheck source=scripts/lib/kube-go.sh
. "$root/scripts/lib/kube-go.sh"
# Bumped when the images change (3: busybox 1.37 from Debian trixie, agnhost on Debian with
# curl): a tag built before is rebuilt.
IMAGES_REV=3
have_image() {
  [[ "$(docker image inspect -f '{{index .Config.Labels "io.vk-provider.images-rev"}}' "$1" 2>/dev/null)" == "$IMAGES_REV" ]]
}

mode="${1-}"
case "$mode" in
  "" | --print | --no-images | --images) ;;
  *) fail "unknown argument $mode (usage: $0 [--print|--no-images|--images])" ;;
esac

key="$(cat "$src/go.mod" "$src/go.sum" "$src/tools.go" | sha256sum | cut -c1-12)"
cache="${VK_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vk-provider/conformance}"
out="$cache/$version-$key"
bin="$out/bin"
if [[ "$mode" == "--print" ]]; then echo "$bin"; exit 0; fi
link_current() { ln -sfn "$(basename "$out")" "$cache/$version"; }

# --- 1. the binaries ---------------------------------------------------------------------
build_binaries() {
  kube_go_ready "$src" "the suite"
  log "building e2e.test, agnhost and nnp of Kubernetes $version into $out (a cold build takes about 25 minutes on one core)"
  local start=$SECONDS tmp="$out.partial" ldflags
  cd "$src"
  ldflags="$(kube_ldflags "$version")"
  rm -rf "$tmp"; mkdir -p "$tmp/bin"
  # A line a minute, so that a long cold build shows it is alive.
  (while sleep 60; do log "still compiling e2e.test, $((SECONDS - start)) s"; done) &
  local ticker=$!
  # shellcheck disable=SC2064  # expand now: $ticker is local
  trap "kill $ticker 2>/dev/null || true" EXIT
  CGO_ENABLED=0 go test -c -vet=off -trimpath -ldflags "$ldflags" -o "$tmp/bin/e2e.test" k8s.io/kubernetes/test/e2e >&2 ||
    fail "go test -c k8s.io/kubernetes/test/e2e failed (see the lines above)"
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/bin/agnhost" k8s.io/kubernetes/test/images/agnhost >&2 ||
    fail "go build of agnhost failed (see the lines above)"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/bin/nnp" k8s.io/kubernetes/test/images/nonewprivs >&2 ||
    fail "go build of nnp failed (see the lines above)"
  kill "$ticker" 2>/dev/null || true
  trap - EXIT
  "$tmp/bin/e2e.test" --version >/dev/null || fail "the built e2e.test does not run"
  touch "$tmp/bin/.complete"
  rm -rf "$out"; mv "$tmp" "$out"
  log "built in $((SECONDS - start)) s ($(du -sh "$bin" | cut -f1)): e2e.test $("$bin/e2e.test" --version)"
}

if [[ ! -x "$bin/e2e.test" || ! -x "$bin/agnhost" || ! -x "$bin/nnp" || ! -f "$bin/.complete" ]]; then
  [[ "$mode" == "--images" ]] && fail "e2e.test is not built yet: run $0 first"
  build_binaries
fi
link_current
if [[ "$mode" == "--no-images" ]]; then echo "$bin"; exit 0; fi

# --- 2. the images -----------------------------------------------------------------------
# The names are the suite's own, after any KUBE_TEST_REPO_LIST remapping in the environment.
mapfile -t suite_images < <("$bin/e2e.test" --list-images 2>/dev/null | LC_ALL=C sort)
[[ ${#suite_images[@]} -gt 0 ]] || fail "e2e.test --list-images printed nothing"
# Every image of the suite whose repository is named $1 (the last path element), one a line;
# none from the private registry, whose specs are about failing to pull from it.
images_of() {
  local ref found=0
  for ref in "${suite_images[@]}"; do
    [[ "$ref" == gcr.io/k8s-authenticated-test/* ]] && continue
    local name="${ref%:*}"
    if [[ "${name##*/}" == "$1" ]]; then echo "$ref"; found=1; fi
  done
  [[ $found == 1 ]]
}
mapfile -t AGNHOST < <(images_of agnhost)      # 2.66.1 (Agnhost) and 2.55 (AgnhostPrev)
mapfile -t BUSYBOX < <(images_of busybox)
mapfile -t PAUSE < <(images_of pause)
mapfile -t NONROOT < <(images_of nonroot)
mapfile -t NONEWPRIVS < <(images_of nonewprivs)
mapfile -t KITTEN < <(images_of kitten)
mapfile -t NAUTILUS < <(images_of nautilus)
mapfile -t NGINX < <(images_of nginx)          # 1.27.0-2 (Nginx) and 1.28.0-2 (NginxNew)
mapfile -t GLIBC_DNS < <(images_of glibc-dns-testing)
for list in AGNHOST BUSYBOX PAUSE NONROOT NONEWPRIVS KITTEN NAUTILUS NGINX GLIBC_DNS; do
  declare -n refs="$list"
  [[ ${#refs[@]} -gt 0 ]] || fail "e2e.test --list-images has no ${list,,} image"
  unset -n refs
done
suite_pause="${PAUSE[0]}"
# vk-provider's default sandbox image (docker.sandboxImage), so that a node configured with
# the defaults finds it too.
PAUSE+=(registry.k8s.io/pause:3.10)

all_images=("${AGNHOST[@]}" "${BUSYBOX[@]}" "${PAUSE[@]}" "${NONROOT[@]}" "${NONEWPRIVS[@]}" "${KITTEN[@]}" "${NAUTILUS[@]}" "${NGINX[@]}" "${GLIBC_DNS[@]}")
if [[ "$mode" == "--images" ]]; then printf '%s\n' "${all_images[@]}"; exit 0; fi

missing=()
for ref in "${all_images[@]}"; do
  if [[ "${FORCE:-0}" == 1 ]] || ! have_image "$ref"; then missing+=("$ref"); fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "$bin"
  exit 0
fi
command -v docker >/dev/null 2>&1 || fail "docker is not installed (scripts/ensure-docker.sh installs it)"
want() { local ref; for ref in "${missing[@]}"; do [[ "$ref" == "$1" ]] && return 0; done; return 1; }

upstream="$(cd "$src" && go list -m -f '{{ .Dir }}' k8s.io/kubernetes)"
[[ -d "$upstream/test/images" ]] || fail "no k8s.io/kubernetes source in the module cache (cd tools/conformance && go mod download)"

busybox_bin=""
# Debian trixie's busybox-static (1.37, the version the suite's busybox:1.37.0 image names),
# fetched from the Debian mirror and checked against the trixie release's signed index:
# InRelease (gpgv, debian-archive-keyring) -> Packages.xz's SHA256 -> the .deb's SHA256.
# Cached in $cache/debs. Prints the busybox binary's path, or fails (the caller falls back).
trixie_busybox() {
  local mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}" debs="$cache/debs" keyring
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [[ -r "$keyring" ]] && command -v gpgv >/dev/null 2>&1 || return 1
  mkdir -p "$debs" "$work/trixie"
  curl -fsS --max-time 60 -o "$work/trixie/InRelease" "$mirror/dists/trixie/InRelease" || return 1
  gpgv --keyring "$keyring" --output "$work/trixie/Release" "$work/trixie/InRelease" 2>/dev/null || return 1
  local index_sum deb_path deb_sum deb
  index_sum="$(awk '/^SHA256:/{s=1; next} /^[^ ]/{s=0} s && $3 == "main/binary-amd64/Packages.xz" {print $1}' "$work/trixie/Release")"
  [[ -n "$index_sum" ]] || return 1
  curl -fsS --max-time 300 -o "$work/trixie/Packages.xz" "$mirror/dists/trixie/main/binary-amd64/Packages.xz" || return 1
  echo "$index_sum  $work/trixie/Packages.xz" | sha256sum -c --status || return 1
  read -r deb_path deb_sum < <(xz -dc "$work/trixie/Packages.xz" | awk '
    /^Package: busybox-static$/ {p=1} p && /^Filename:/ {f=$2} p && /^SHA256:/ {h=$2} p && /^$/ {print f, h; exit}')
  [[ -n "$deb_path" && -n "$deb_sum" ]] || return 1
  deb="$debs/$(basename "$deb_path")"
  if ! echo "$deb_sum  $deb" | sha256sum -c --status 2>/dev/null; then
    curl -fsS --max-time 300 -o "$deb.partial" "$mirror/$deb_path" || return 1
    echo "$deb_sum  $deb.partial" | sha256sum -c --status || return 1
    mv "$deb.partial" "$deb"
  fi
  dpkg-deb -x "$deb" "$work/trixie/root" || return 1
  local found
  found="$(find "$work/trixie/root" -path '*/bin/busybox' -type f | head -n 1)"
  [[ -x "$found" ]] || return 1
  log "busybox from Debian trixie: $(basename "$deb")"
  echo "$found"
}

find_busybox() {
  if busybox_bin="$(trixie_busybox)"; then return; fi
  log "Debian trixie's busybox-static is out of reach; using bookworm's (1.35)"
  if ! dpkg -s busybox-static >/dev/null 2>&1; then
    log "installing Debian's busybox-static"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq busybox-static >/dev/null
  fi
  busybox_bin="$(dpkg -L busybox-static | grep -E '/bin/busybox$' | head -n 1)"
  [[ -x "$busybox_bin" ]] || fail "busybox-static installed no bin/busybox"
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A root filesystem like the docker library's busybox image: every applet linked to the
# static busybox, root, daemon and nobody, /tmp sticky.
busybox_rootfs() {
  local dir="$1" applet
  [[ -n "$busybox_bin" ]] || find_busybox
  mkdir -p "$dir"/{bin,sbin,etc,tmp,proc,sys,dev,root,home,var/www,usr/bin,usr/sbin}
  chmod 1777 "$dir/tmp"
  cp "$busybox_bin" "$dir/bin/busybox"
  for applet in $("$dir/bin/busybox" --list); do
    [[ "$applet" == busybox ]] || ln -sf /bin/busybox "$dir/bin/$applet"
  done
  cat >"$dir/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
PASSWD
  cat >"$dir/etc/group" <<'GROUP'
root:x:0:
daemon:x:1:
nogroup:x:65534:
GROUP
}

# docker import of a root filesystem, tagged with every name given after the changes.
import_rootfs() {
  local dir="$1"; shift
  local changes=() ref
  while [[ $# -gt 0 && "$1" != -- ]]; do changes+=(--change "$1"); shift; done
  shift
  local id
  id="$(tar -C "$dir" --numeric-owner -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "LABEL io.vk-provider.conformance=$version io.vk-provider.images-rev=$IMAGES_REV" "${changes[@]}" - )"
  for ref in "$@"; do
    docker tag "$id" "$ref"
    log "built $ref"
  done
}

start=$SECONDS

# The names among $@ that are to be built, one a line.
missing_of() { local ref; for ref in "$@"; do if want "$ref"; then echo "$ref"; fi; done; }

# busybox: the suite's busybox images (one image, every tag the suite names).
mapfile -t refs < <(missing_of "${BUSYBOX[@]}")
if [[ ${#refs[@]} -gt 0 ]]; then
  busybox_rootfs "$work/busybox"
  import_rootfs "$work/busybox" 'CMD ["sh"]' -- "${refs[@]}"
fi

# nonroot: busybox run as user 1234 (test/images/nonroot).
mapfile -t refs < <(missing_of "${NONROOT[@]}")
if [[ ${#refs[@]} -gt 0 ]]; then
  busybox_rootfs "$work/nonroot"
  import_rootfs "$work/nonroot" 'CMD ["sh"]' 'USER 1234' -- "${refs[@]}"
fi

# nonewprivs: busybox with a setuid nnp that prints its effective uid (test/images/nonewprivs).
mapfile -t refs < <(missing_of "${NONEWPRIVS[@]}")
if [[ ${#refs[@]} -gt 0 ]]; then
  busybox_rootfs "$work/nonewprivs"
  mkdir -p "$work/nonewprivs/usr/local/bin"
  install -m 4755 "$bin/nnp" "$work/nonewprivs/usr/local/bin/nnp"
  import_rootfs "$work/nonewprivs" 'CMD ["nnp"]' -- "${refs[@]}"
fi

# A Debian bookworm root filesystem (debootstrap minbase) with the packages given, without
# package caches, lists and documentation.
debian_rootfs() {
  local dir="$1" packages="$2" mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
  if ! command -v debootstrap >/dev/null 2>&1; then
    log "installing Debian's debootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq debootstrap >/dev/null
  fi
  log "debootstrap bookworm (+ $packages) from $mirror"
  debootstrap --variant=minbase --include="$packages" bookworm "$dir" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 30 "$work/debootstrap.log" >&2; fail "debootstrap bookworm (+ $packages) failed"; }
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/cache/apt/*.bin "$dir"/var/lib/apt/lists/* \
    "$dir"/debootstrap "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/locale/*
  echo "deb http://deb.debian.org/debian bookworm main" >"$dir/etc/apt/sources.list"
}

# agnhost (test/images/agnhost/Dockerfile) on Debian bookworm instead of alpine: curl (the
# lifecycle hook specs' handlers are called with it), bash, dig, iproute2, netcat, socat and
# wget as in upstream's image, and busybox for every applet Debian lacks, as alpine's busybox
# provides them; /agnhost and its agnhost-2 link, porter's certificate, /uploads for netexec,
# and the user and group the SupplementalGroups specs expect in the image. Not there: iperf
# and the fake registry's content (/var/registry), which its image pulls come from.
agnhost_base=""
agnhost_rootfs() {
  local dir="$1" applet
  if [[ -z "$agnhost_base" ]]; then
    agnhost_base="$work/agnhost-base"
    debian_rootfs "$agnhost_base" curl,wget,bash,dnsutils,iproute2,netcat-openbsd,socat,procps,iputils-ping,ca-certificates
    [[ -n "$busybox_bin" ]] || find_busybox
    cp "$busybox_bin" "$agnhost_base/bin/busybox"
    for applet in $("$agnhost_base/bin/busybox" --list); do
      # -L too: Debian's alternatives links point at /etc/alternatives, absent outside the chroot.
      local at found=0
      for at in bin usr/bin sbin usr/sbin; do
        if [[ -e "$agnhost_base/$at/$applet" || -L "$agnhost_base/$at/$applet" ]]; then found=1; fi
      done
      [[ $found == 1 ]] || ln -s /bin/busybox "$agnhost_base/usr/bin/$applet"
    done
  fi
  rm -rf "$dir"
  cp -a "$agnhost_base" "$dir"
  install -m 755 "$bin/agnhost" "$dir/agnhost"
  ln -s agnhost "$dir/agnhost-2"
  cp "$upstream/test/images/agnhost/porter/localhost.crt" "$upstream/test/images/agnhost/porter/localhost.key" "$dir/"
  chmod 644 "$dir"/localhost.*
  mkdir -p "$dir/uploads" "$dir/home/user-defined-in-image"
  echo "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh" >>"$dir/etc/passwd"
  echo "user-defined-in-image:x:1000:user-defined-in-image" >>"$dir/etc/group"
  echo "group-defined-in-image:x:50000:user-defined-in-image" >>"$dir/etc/group"
  chown 1000:1000 "$dir/home/user-defined-in-image"
}
mapfile -t refs < <(missing_of "${AGNHOST[@]}")
for ref in "${refs[@]}"; do
  agnhost_rootfs "$work/agnhost-${ref##*:}"
  # Each agnhost tag its own image (the image-update specs tell them apart by image ID).
  import_rootfs "$work/agnhost-${ref##*:}" 'ENTRYPOINT ["/agnhost"]' 'CMD ["pause"]' \
    'EXPOSE 80 8080 8081 9376 5000' "LABEL io.vk-provider.image=$ref" -- "$ref"
done

# kitten and nautilus: agnhost's test-webserver serving a picture (test/images/kitten, nautilus).
for name in kitten nautilus; do
  declare -n named="${name^^}"
  mapfile -t refs < <(missing_of "${named[@]}")
  unset -n named
  [[ ${#refs[@]} -gt 0 ]] || continue
  agnhost_rootfs "$work/$name"
  cp "$upstream/test/images/$name/html/$name.jpg" "$upstream/test/images/$name/html/data.json" "$work/$name/"
  chmod 644 "$work/$name/$name.jpg" "$work/$name/data.json"
  import_rootfs "$work/$name" 'ENTRYPOINT ["/agnhost"]' 'CMD ["test-webserver"]' 'EXPOSE 80' -- "${refs[@]}"
done

# pause: the upstream pause.c (build/pause/linux), linked statically, alone in its image
# and run as 65535 as upstream's; also tagged as vk-provider's default sandbox image.
mapfile -t refs < <(missing_of "${PAUSE[@]}")
if [[ ${#refs[@]} -gt 0 ]]; then
  mkdir -p "$work/pause"
  if ! command -v gcc >/dev/null 2>&1 || [[ ! -f /usr/lib/x86_64-linux-gnu/libc.a && ! -f /usr/lib/libc.a ]]; then
    log "installing Debian's gcc and libc6-dev for pause.c"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq gcc libc6-dev >/dev/null
  fi
  gcc -Os -Wall -Werror -static -DVERSION="v${suite_pause##*:}" -o "$work/pause/pause" \
    "$upstream/build/pause/linux/pause.c" || fail "cannot compile pause.c"
  strip "$work/pause/pause" 2>/dev/null || true
  import_rootfs "$work/pause" 'ENTRYPOINT ["/pause"]' 'USER 65535:65535' -- "${refs[@]}"
fi

# nginx: Debian bookworm's nginx, in the manner of the docker library's nginx image the
# suite's is built on (test/images/nginx): the "Welcome to nginx!" page on port 80, the
# logs to the container's stdout and stderr, `nginx -g 'daemon off;'`, stopped by SIGQUIT.
# Each tag its own image (NginxNew is the image-update specs' second image).
mapfile -t refs < <(missing_of "${NGINX[@]}")
if [[ ${#refs[@]} -gt 0 ]]; then
  debian_rootfs "$work/nginx" nginx
  ln -sf /dev/stdout "$work/nginx/var/log/nginx/access.log"
  ln -sf /dev/stderr "$work/nginx/var/log/nginx/error.log"
  # docker import takes no STOPSIGNAL: a one-line build (the legacy builder, which needs
  # no registry) adds it.
  nginx_base="vk-provider/conformance-nginx-rootfs:$version"
  import_rootfs "$work/nginx" 'CMD ["nginx", "-g", "daemon off;"]' 'EXPOSE 80' -- "$nginx_base"
  for ref in "${refs[@]}"; do
    printf 'FROM %s\nSTOPSIGNAL SIGQUIT\nLABEL io.vk-provider.image=%s io.vk-provider.conformance=%s\n' \
      "$nginx_base" "$ref" "$version" | DOCKER_BUILDKIT=0 docker build -q -t "$ref" - >"$work/build.log" 2>&1 ||
      { cat "$work/build.log" >&2; fail "docker build of $ref failed"; }
    log "built $ref"
  done
  docker rmi "$nginx_base" >/dev/null
fi

# glibc-dns-testing: Debian bookworm with dnsutils (test/images/glibc-dns-testing), for the
# hostname specs' glibc `hostname -f`. Upstream's CoreDNS 1.5.0 binary (/coredns) is not
# there: it comes from no package.
mapfile -t refs < <(missing_of "${GLIBC_DNS[@]}")
if [[ ${#refs[@]} -gt 0 ]]; then
  debian_rootfs "$work/glibc-dns" dnsutils
  import_rootfs "$work/glibc-dns" 'CMD ["bash"]' -- "${refs[@]}"
fi

rm -rf "$work"
trap - EXIT
# The images a FORCE=1 rebuild replaced, untagged now.
docker images -q --filter dangling=true --filter label=io.vk-provider.conformance |
  xargs -r docker rmi >/dev/null 2>&1 || true
log "images built in $((SECONDS - start)) s"
echo "$bin"
