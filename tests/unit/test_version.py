"""One version for the package, the image and the chart: vk_provider/__init__.py's __version__.

pyproject.toml reads it (setuptools' dynamic version, so the wheel, the sdist and
`vk-provider --version` agree), scripts/version.sh prints it for the scripts (the image tag of
scripts/build-image.sh, the artifacts of scripts/release.sh); the copies helm and docker read
directly, Chart.yaml's version and appVersion and the Dockerfile's VERSION default, must equal it.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import yaml

from vk_provider import __version__

REPO = Path(__file__).resolve().parents[2]


def test_pyproject_takes_the_version_from_the_package() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "vk_provider.__version__"}


def test_the_chart_version_and_app_version_are_the_package_version() -> None:
    chart = yaml.safe_load((REPO / "charts" / "vk-provider" / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert (chart["version"], chart["appVersion"]) == (__version__, __version__)


def test_the_dockerfile_default_and_the_scripts_use_the_package_version() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.findall(r"^ARG VERSION=(\S+)$", dockerfile, re.MULTILINE) == [__version__]
    printed = subprocess.run(
        ["bash", str(REPO / "scripts" / "version.sh")], capture_output=True, text=True, check=True
    )
    assert printed.stdout == f"{__version__}\n"
    for script in ("build-image.sh", "release.sh"):
        assert "scripts/version.sh" in (REPO / "scripts" / script).read_text(), script
