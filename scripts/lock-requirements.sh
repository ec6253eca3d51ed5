#!/usr/bin/env bash
# Pin the Python requirements of the image and of the release tools, with hashes:
#   requirements/image.lock          vk-provider's runtime dependencies (pyproject.toml's
#                                    `dependencies`), installed by the Dockerfile with
#                                    `pip install --require-hashes --no-deps`
#   requirements/release-tools.lock  requirements/release-tools.in (build, cyclonedx-bom), the
#                                    tools scripts/release.sh installs with --require-hashes
# pip-compile (pip-tools) resolves with this machine's python, which must be the image's
# minor (3.11: the Debian bookworm base of scripts/build-image.sh), on Linux x86_64.
# Run it (`make lock`) after changing pyproject.toml's dependencies, and to take newer
# versions; commit the result. The lock files are the only output.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
PIP_TOOLS_VERSION=7.6.2
IMAGE_PYTHON=3.11

python="${PYTHON:-python3}"
minor="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[[ "$minor" == "$IMAGE_PYTHON" ]] || { echo "lock-requirements: $python is $minor, the image's is $IMAGE_PYTHON" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
# The machine's PIP_FIND_LINKS must not feed local wheels into the pins: the index only.
export PIP_FIND_LINKS=
"$work/venv/bin/pip" install -q "pip-tools==$PIP_TOOLS_VERSION"
compile=("$work/venv/bin/pip-compile" --quiet --generate-hashes --strip-extras --allow-unsafe
  --no-emit-index-url --no-emit-find-links --newline LF)
"${compile[@]}" --output-file requirements/image.lock pyproject.toml
"${compile[@]}" --output-file requirements/release-tools.lock requirements/release-tools.in
echo "lock-requirements: wrote requirements/image.lock and requirements/release-tools.lock" >&2
