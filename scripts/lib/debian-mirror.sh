# shellcheck shell=bash
# Sourced by scripts that fetch from the Debian archive (scripts/build-image.sh).
# What lives here: debian_mirror, the Debian mirror this machine's apt uses, so that no script
# names a mirror of its own: $DEBIAN_MIRROR if set, else the first `URIs:` of a deb822 source
# (/etc/apt/sources.list.d/*.sources) or the first `deb URI` line (sources.list, *.list) that
# serves Debian's main archive (not debian-security, not a third-party repository).
# Must not: change apt's configuration or fetch anything.

debian_mirror() {
  if [[ -n "${DEBIAN_MIRROR:-}" ]]; then echo "$DEBIAN_MIRROR"; return; fi
  local uri
  uri="$(
    {
      cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs:[[:space:]]*//p' | tr ' ' '\n'
      cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p'
    } | grep -E '/debian/?$' | head -n 1
  )"
  [[ -n "$uri" ]] || return 1
  echo "${uri%/}"
}
