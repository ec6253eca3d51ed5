#!/usr/bin/env bash
# Print vk-provider's version: __version__ of vk_provider/__init__.py, the one version source.
# pyproject.toml reads it (setuptools' dynamic version); scripts/build-image.sh tags the image
# with it; Chart.yaml's version and appVersion and the Dockerfile's VERSION default repeat it,
# and tests/unit/test_version.py keeps them equal.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$root/vk_provider/__init__.py")"
[[ -n "$version" ]] || { echo "version.sh: no __version__ = \"...\" line in vk_provider/__init__.py" >&2; exit 1; }
echo "$version"
