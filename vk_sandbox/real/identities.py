"""The credentials the sandbox's providers run with on the real control plane.

What lives here: `chart_identity(...)`, which renders the Helm chart's RBAC (ServiceAccount,
ClusterRole/Role and their bindings, from `charts/vk-provider` with `helm template`, never a
copy of its rules; `chart_values(config)` gives the values that decide them for a provider
configuration), applies it and returns a token of that service account, so a provider
has exactly the permissions `helm install` grants; `node_identity(...)`, a kubelet's own
client certificate (`system:node:<name>` in `system:nodes`) under the Node authorizer and
NodeRestriction; and `find_chart_tools()`, which says whether the chart and helm are here.
Must not: decide which identity to use (command.py does) or start providers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vk_common.kube_version import KUBE_VERSION
from vk_sandbox.kubeconfig import Credentials
from vk_sandbox.real.admin import AdminAPI
from vk_sandbox.real.pki import ClusterPKI

RBAC_KINDS = {
    "ServiceAccount": ("api/v1", "serviceaccounts", True),
    "ClusterRole": ("apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
}
CHART_NAMESPACE = "vk-provider"
RELEASE = "vk"
# Tokens of a TokenRequest are bound and expire; the sandbox asks for a long one since its
# providers read the token once from their kubeconfig (a pod's projected token is refreshed).
TOKEN_SECONDS = 7 * 24 * 3600


# In a source checkout: the Helm chart beside this package.
CHART_DIR = Path(__file__).resolve().parents[2] / "charts" / "vk-provider"


class IdentityError(Exception):
    """The chart's RBAC could not be rendered or applied."""


@dataclass(frozen=True)
class ChartTools:
    chart: Path
    helm: Path


def find_chart_tools() -> ChartTools | None:
    """The chart of this source tree and a helm binary (PATH, or next to this Python)."""
    chart = CHART_DIR
    helm = shutil.which("helm") or str(Path(sys.executable).parent / "helm")
    if (chart / "Chart.yaml").is_file() and os.access(helm, os.X_OK):
        return ChartTools(chart, Path(helm))
    return None


def chart_values(user_config: dict[str, Any]) -> dict[str, str]:
    """The chart values that decide its RBAC, as the providers will be configured: one
    service account for every node (`rbac.shared`: any node name, mirror pods allowed)."""
    server = user_config.get("kubeletServer") or {}
    tls = server.get("tls") or {}
    return {
        "config.kubeletServer.auth": str(server.get("auth") or "webhook"),
        "config.kubeletServer.tls.mode": str(tls.get("mode") or "selfSigned"),
        "rbac.shared": "true",
    }


def render_chart_rbac(tools: ChartTools, values: dict[str, Any]) -> list[dict[str, Any]]:
    """The chart's RBAC objects for `values` (helm --set pairs), as `helm install` would create them."""
    args = [str(tools.helm), "template", RELEASE, str(tools.chart), "--namespace", CHART_NAMESPACE]
    args += ["--kube-version", KUBE_VERSION]  # the chart's kubeVersion; helm's default is older
    for key, value in values.items():
        args += ["--set", f"{key}={value}"]
    result = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
    if result.returncode != 0:
        raise IdentityError(f"helm template failed: {result.stderr.strip()}")
    objects = [doc for doc in yaml.safe_load_all(result.stdout) if isinstance(doc, dict)]
    # Hooks (the uninstall Job's own account and rules) are not created by `helm install`.
    installed = [o for o in objects if "helm.sh/hook" not in (o["metadata"].get("annotations") or {})]
    return [obj for obj in installed if obj.get("kind") in RBAC_KINDS]


def _object_path(obj: dict[str, Any]) -> str:
    group_version, plural, namespaced = RBAC_KINDS[obj["kind"]]
    meta = obj["metadata"]
    where = f"/namespaces/{meta.get('namespace') or CHART_NAMESPACE}" if namespaced else ""
    return f"/{group_version}{where}/{plural}/{meta['name']}"


async def apply_objects(admin: AdminAPI, objects: list[dict[str, Any]]) -> None:
    await admin.apply(
        f"/api/v1/namespaces/{CHART_NAMESPACE}",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CHART_NAMESPACE}},
    )
    for obj in objects:
        await admin.apply(_object_path(obj), obj)


async def chart_identity(admin: AdminAPI, objects: list[dict[str, Any]], ca_file: Path) -> Credentials:
    """Apply the rendered RBAC and return a token of its ServiceAccount."""
    accounts = [o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"]
    if len(accounts) != 1:
        raise IdentityError(f"the chart rendered {len(accounts)} service accounts, expected 1")
    await apply_objects(admin, objects)
    answer = await admin.call(
        "POST",
        f"/api/v1/namespaces/{CHART_NAMESPACE}/serviceaccounts/{accounts[0]}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        },
    )
    return Credentials(ca_file, token=str(answer["status"]["token"]))


def node_identity(pki: ClusterPKI, node: str) -> Credentials:
    """A kubelet's credentials: a client certificate for `system:node:<node>`."""
    cert, key = pki.node_identity(node)
    return Credentials(pki.ca_cert_path, cert, key)
