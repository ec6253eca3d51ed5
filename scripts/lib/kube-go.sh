# shellcheck shell=bash
# Sourced by scripts/ensure-kube.sh and scripts/build-conformance.sh, which build upstream
# Kubernetes from a Go module in tools/.
# What lives here: kube_go_ready (Go installed, the module proxy on, the module's dependencies
# downloaded), kube_go_build (one static binary of a module, checked that it runs) and kube_ldflags (the -ldflags that stamp the version into the binaries, as
# upstream's hack/lib/version.sh does). The sourcing script defines `fail MESSAGE`.
# Must not: build anything, or change the directory of the script that sources it.

# kube_go_ready SRC WHAT: fails, naming WHAT ("the control plane"), unless SRC's module can be built.
kube_go_ready() {
  local src=$1 what=$2
  command -v go >/dev/null 2>&1 || fail "Go is not installed (need Go >= $(sed -n 's/^go //p' "$src/go.mod")); install it and retry"
  go env GOPROXY | grep -qv '^off$' || fail "GOPROXY is off; the Go module proxy is needed to build $what"
  (cd "$src" && go mod download >/dev/null 2>&1) ||
    fail "cannot download the Go modules (is the Go module proxy reachable? try: cd $src && go mod download)"
}

# kube_go_build SRC OUT BINARY PACKAGE LDFLAGS CHECK_ARG: PACKAGE of the module in SRC built as
# the static binary OUT/BINARY (in OUT.partial first, so an interrupted build leaves nothing in
# OUT), which must run with CHECK_ARG (`--help`, `-version`).
kube_go_build() {
  local src=$1 out=$2 binary=$3 package=$4 ldflags=$5 check=$6
  kube_go_ready "$src" "$binary"
  rm -rf "$out.partial"
  mkdir -p "$out.partial"
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out.partial/$binary" "$package") ||
    fail "go build of $package failed (see the lines above)"
  "$out.partial/$binary" "$check" >/dev/null 2>&1 || fail "the built $binary does not run"
  rm -rf "$out"
  mv "$out.partial" "$out"
}

# kube_ldflags VERSION: stripped binaries that report VERSION (vX.Y.Z) from component-base's and
# client-go's version packages, a clean tree and this build's date.
kube_ldflags() {
  local version=$1 minor stamp ldflags="-s -w" pkg
  minor="${version#v1.}"; minor="${minor%%.*}"
  stamp="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$stamp"
  done
  printf '%s\n' "$ldflags"
}
