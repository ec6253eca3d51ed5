#!/usr/bin/env bash
# Build the small local images the tests, the demo and the benchmarks use, offline
# (no registry is reachable here): a root filesystem made from Debian's
# busybox-static, brought in with `docker import`.
#   vk-test/busybox:1  a shell and the usual applets (sh, httpd, nc, sleep, ...)
#   vk-test/pause:1    /pause: sleeps until SIGTERM or SIGINT, then exits 0
# Idempotent: an image that already exists is left as it is (FORCE=1 rebuilds).
set -euo pipefail

BUSYBOX_IMAGE=vk-test/busybox:1
PAUSE_IMAGE=vk-test/pause:1

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

if [ "${FORCE:-0}" != 1 ] && have_image "$BUSYBOX_IMAGE" && have_image "$PAUSE_IMAGE"; then
  exit 0
fi

busybox_bin=/bin/busybox
if ! "$busybox_bin" --list 2>/dev/null | grep -qx httpd || ! file "$busybox_bin" 2>/dev/null | grep -q static; then
  if [ ! -x /usr/bin/busybox ] || ! dpkg -s busybox-static >/dev/null 2>&1; then
    echo "build-test-images: installing Debian's busybox-static" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq busybox-static >/dev/null
  fi
  busybox_bin=$(dpkg -L busybox-static | grep -E '/bin/busybox$' | head -n 1)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
mkdir -p "$root"/{bin,sbin,etc,tmp,proc,sys,dev,root,var/www,usr/bin,usr/sbin}
chmod 1777 "$root/tmp"
cp "$busybox_bin" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
  [ "$applet" = busybox ] || ln -sf /bin/busybox "$root/bin/$applet"
done
cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP
echo "hello from vk-test/busybox" >"$root/var/www/index.html"

tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["sh"]' \
  - "$BUSYBOX_IMAGE" >/dev/null
echo "build-test-images: built $BUSYBOX_IMAGE" >&2

# The pause image: the same busybox, with /pause trapping TERM/INT and exiting 0.
cat >"$root/pause" <<'PAUSE'
#!/bin/sh
trap 'exit 0' TERM INT
while :; do sleep 3600 & wait $!; done
PAUSE
chmod 755 "$root/pause"
tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENTRYPOINT ["/pause"]' \
  - "$PAUSE_IMAGE" >/dev/null
echo "build-test-images: built $PAUSE_IMAGE" >&2
