"""Rendering the Helm chart (charts/vk-provider) with the real `helm`, for the chart's unit tests.

What lives here: the `helm` fixture (skips without a helm binary: $HELM, .venv/bin/helm or
PATH; scripts/ensure-helm.sh installs it), `helm_template` (the raw `helm template` run),
`render` (its objects, the release's or the hooks', each but a CRD's validated with
kubernetes_validate against the schema of every cluster minor `helm install` supports:
KUBE_VERSION's and the two before it) and `one` (the single rendered object of a kind).
Must not: start a cluster or talk to the network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from vk_common.kube_version import KUBE_MAJOR, KUBE_MINOR, KUBE_VERSION

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "vk-provider"
SUPPORTED_MINORS = [f"{KUBE_MAJOR}.{int(KUBE_MINOR) - back}" for back in (2, 1, 0)]
# Kinds of CRDs (the Prometheus Operator's ServiceMonitor): no Kubernetes schema to validate with.
CUSTOM_API_VERSIONS = {"monitoring.coreos.com/v1"}


def _helm_binary() -> str | None:
    for candidate in (
        os.environ.get("HELM"),
        str(Path(sys.executable).parent / "helm"),
        shutil.which("helm"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="module")
def helm() -> str:
    binary = _helm_binary()
    if binary is None:
        pytest.skip("no helm binary ($HELM, .venv/bin/helm or PATH): run scripts/ensure-helm.sh")
    return binary


def helm_template(helm: str, *sets: str, chart: Path = CHART) -> subprocess.CompletedProcess[str]:
    """`helm template` of release vk in namespace vk-system for a KUBE_VERSION cluster; each
    item of `sets` is a `key=value` for --set, or a whole flag such as `--set-json=key=[]` or
    `--values=FILE`."""
    args = [helm, "template", "vk", str(chart), "--namespace", "vk-system", "--kube-version", KUBE_VERSION]
    for item in sets:
        args += [item] if item.startswith("--") else ["--set", item]
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)


def render(helm: str, *sets: str, chart: Path = CHART, hooks: bool = False) -> list[dict[str, Any]]:
    """The objects rendered for node docker-1, each validated against every supported minor's
    schema: the release's own objects, or with `hooks` the hooks' (`helm.sh/hook`: the
    uninstall Job and its RBAC, the `helm test` pod), which Helm keeps apart from the release."""
    out = helm_template(helm, "node.name=docker-1", *sets, chart=chart)
    assert out.returncode == 0, out.stderr
    objects = [doc for doc in yaml.safe_load_all(out.stdout) if doc]
    for obj in objects:
        if obj["apiVersion"] not in CUSTOM_API_VERSIONS:
            validate(obj)
    return [o for o in objects if ("helm.sh/hook" in o["metadata"].get("annotations", {})) == hooks]


def validate(obj: dict[str, Any]) -> None:
    for minor in SUPPORTED_MINORS:
        kubernetes_validate.validate(obj, minor, strict=True)


def one(objects: list[dict[str, Any]], kind: str, namespace: str | None = None) -> dict[str, Any]:
    found = [
        o
        for o in objects
        if o["kind"] == kind and (namespace is None or o["metadata"].get("namespace") == namespace)
    ]
    assert len(found) == 1, f"{len(found)} objects of kind {kind}"
    return found[0]
