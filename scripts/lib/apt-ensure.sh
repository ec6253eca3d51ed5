# shellcheck shell=bash
# Sourced by the scripts/ensure-*.sh that install a tool from Debian's packages.
# What lives here: apt_ensure WHO PATHS PACKAGES...: does nothing when every one of PATHS (a
# space-separated list of command names or absolute paths) exists; otherwise installs the
# PACKAGES with apt-get (CI runs as root on a fresh machine) and checks PATHS again.
# Must not: start services or change anything but the packages.

_apt_present() {
  local path
  for path in $1; do
    if [[ "$path" == /* ]]; then [[ -x "$path" ]] || return 1
    else command -v "$path" >/dev/null 2>&1 || return 1
    fi
  done
}

apt_ensure() {
  local who=$1 paths=$2
  shift 2
  _apt_present "$paths" && return 0
  echo "$who: installing Debian's $*" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  _apt_present "$paths" || { echo "$who: $paths still missing after installing $*" >&2; return 1; }
}
