"""`kubernetes.credentials: node` on the real control plane: the kubelet's TLS bootstrap.

The provider runs with a token of a service account that has exactly the chart's node-mode
RBAC (`helm template --set credentials=node`, under a release name of its own so the session's
shared provider identity is left alone). It must send a kube-apiserver-client-kubelet CSR that
the real kube-controller-manager approves (csrapproving, nodeclient) and signs, register its
Node and run a pod with that certificate, be held by the Node authorizer to what a kubelet may
read, reuse the certificate at a restart and renew it through a second CSR without restarting.
With less than the chart grants it must stop with one line: the 403 without CSR rights, the
pending CSR's name and the fix without the nodeclient rule (which shows that rule is needed).
Real plane only: the emulator has no csrapproving controller.
"""

from __future__ import annotations

import dataclasses
import logging
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from tests.support.images import BUSYBOX_IMAGE
from tests.support.planes import RealPlane
from tests.support.pod_status import condition, phase
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness
from vk_provider.app import run_provider
from vk_provider.config import Config, DockerConfig, KubernetesConfig, NodeConfig
from vk_provider.kube import node_credentials
from vk_provider.kube.client import (
    ApiStatusError,
    KubeClient,
    client_certificate_configuration,
    load_configuration,
    make_kube_client,
)
from vk_sandbox.kubeconfig import write_kubeconfig
from vk_sandbox.real import identities

pytestmark = [pytest.mark.docker, pytest.mark.real_only]
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"


class NodeModeHarness(ProviderHarness):
    """The default harness, with the provider in `credentials: node`."""

    def config(self) -> Config:
        config = super().config()
        return dataclasses.replace(
            config, kubernetes=dataclasses.replace(config.kubernetes, credentials="node")
        )


@dataclasses.dataclass
class Bootstrap:
    kubeconfig: Path
    account: str  # the CSRs' spec.username
    objects: list[dict[str, Any]]


@pytest.fixture
async def bootstrap(node_name: str, tmp_path: Path, plane: RealPlane) -> AsyncIterator[Bootstrap]:
    """The chart's node-mode RBAC applied, and a kubeconfig with a token of its service account."""
    tools = identities.find_chart_tools()
    if tools is None:
        pytest.skip("no helm binary: run scripts/ensure-helm.sh")
    fullname = f"nc-{node_name}"
    values = {"credentials": "node", "node.name": node_name, "fullnameOverride": fullname}
    objects = identities.render_chart_rbac(tools, values)
    assert sorted(o["kind"] for o in objects) == ["ClusterRole", "ClusterRoleBinding", "ServiceAccount"]
    async with plane.cluster.admin() as admin:
        credentials = await identities.chart_identity(admin, objects, plane.ca_file)
    kubeconfig = tmp_path / "bootstrap.kubeconfig"
    write_kubeconfig(kubeconfig, plane.cluster.url, credentials)
    account = f"system:serviceaccount:{identities.CHART_NAMESPACE}:{fullname}"
    try:
        yield Bootstrap(kubeconfig, account, objects)
    finally:
        async with plane.cluster.admin() as admin:
            for csr in await _csrs_of(admin, account):
                await admin.request("DELETE", f"{CSRS}/{csr['metadata']['name']}")
            for obj in objects:
                await admin.request("DELETE", identities._object_path(obj))


async def _csrs_of(admin: Any, username: str) -> list[dict[str, Any]]:
    answer = await admin.call("GET", CSRS)
    return [c for c in answer.get("items") or [] if c["spec"].get("username") == username]


async def _node_ready(h: ProviderHarness) -> bool:
    node = await h.api.get(f"/api/v1/nodes/{h.node_name}")
    return condition(node, "Ready").get("status") == "True"


async def _as_the_node(plane: RealPlane, pem: Path) -> KubeClient:
    """A client with the provider's certificate file, as anyone on its host could use it."""
    base = await load_configuration(KubernetesConfig(kubeconfig=str(plane.admin_kubeconfig)))
    configuration = client_certificate_configuration(base, pem)
    return await make_kube_client(KubernetesConfig(), configuration=configuration)


async def _status(client: KubeClient, path: str) -> int:
    try:
        await client.get(path)
    except ApiStatusError as exc:
        return exc.status
    return 200


async def test_the_provider_bootstraps_a_node_certificate_and_runs_pods_with_it(
    node_name: str,
    test_images: dict[str, str],
    tmp_path: Path,
    plane: RealPlane,
    bootstrap: Bootstrap,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(node_credentials, "OLD_CLIENT_GRACE", 1.0)
    node_plane = plane.with_provider_kubeconfig(bootstrap.kubeconfig)
    async with NodeModeHarness.running(node_name, tmp_path, plane=node_plane) as h:
        await eventually(lambda: _node_ready(h), within=90, what="node Ready")
        async with plane.cluster.admin() as admin:
            [csr] = await _csrs_of(admin, bootstrap.account)
        assert csr["spec"]["signerName"] == SIGNER
        assert sorted(csr["spec"]["usages"]) == ["client auth", "digital signature"]
        approved = [c for c in csr["status"]["conditions"] if c["type"] == "Approved"]
        assert approved and approved[0]["reason"] == "AutoApproved", csr["status"]  # kube-controller-manager
        assert csr["status"]["certificate"]

        pem = tmp_path / "state" / "pki" / f"kubelet-client-{node_name}.pem"
        assert stat.S_IMODE(pem.stat().st_mode) == 0o600
        cert = x509.load_pem_x509_certificates(pem.read_bytes())[0]
        assert cert.subject.rfc4514_string() == f"CN=system:node:{node_name},O=system:nodes"

        # A pod bound to the node runs, with a Secret volume it references.
        await h.create_object("secrets", {"metadata": {"name": "mine"}, "stringData": {"k": "v"}})
        await h.create_object("secrets", {"metadata": {"name": "not-mine"}, "stringData": {"k": "v"}})
        container = {
            "name": "c",
            "image": BUSYBOX_IMAGE,
            "command": ["sh", "-c", "cat /s/k; sleep 3600"],
            "volumeMounts": [{"name": "s", "mountPath": "/s"}],
        }
        volumes = [{"name": "s", "secret": {"secretName": "mine"}}]
        await h.create(h.manifest("p", [container], volumes=volumes))
        await h.wait_for("p", lambda p: phase(p) == "Running", within=90)

        # The certificate is a kubelet's: the Node authorizer limits it to the node's own objects.
        node_client = await _as_the_node(plane, pem)
        try:
            secrets = "/api/v1/namespaces/default/secrets"
            assert await _status(node_client, f"/api/v1/nodes/{node_name}") == 200
            assert await _status(node_client, "/api/v1/nodes/some-other-node") == 403
            assert await _status(node_client, f"{secrets}/mine") == 200
            assert await _status(node_client, f"{secrets}/not-mine") == 403
            assert await _status(node_client, secrets) == 403  # no list
        finally:
            await node_client.close()

        # The bootstrap token itself may do nothing but CSRs.
        token_client = await make_kube_client(KubernetesConfig(kubeconfig=str(bootstrap.kubeconfig)))
        try:
            assert await _status(token_client, f"/api/v1/nodes/{node_name}") == 403
            assert await _status(token_client, "/api/v1/namespaces/default/pods") == 403
        finally:
            await token_client.close()

        # A restart reuses the certificate: no second CSR.
        await h.stop_provider()
        await h.start_provider()
        await eventually(lambda: _node_ready(h), within=60, what="node Ready after the restart")
        async with plane.cluster.admin() as admin:
            assert len(await _csrs_of(admin, bootstrap.account)) == 1
        assert x509.load_pem_x509_certificates(pem.read_bytes())[0].serial_number == cert.serial_number

        # Renewal (at 70-90 % of a year on its own; here asked for now): a second CSR, approved
        # and signed, the file replaced, and the running provider carries on with it.
        assert h.provider is not None and h.provider.credentials is not None
        await h.provider.credentials.renew()
        async with plane.cluster.admin() as admin:
            renewed = await _csrs_of(admin, bootstrap.account)
        assert len(renewed) == 2 and all(c["status"].get("certificate") for c in renewed)
        second = x509.load_pem_x509_certificates(pem.read_bytes())[0]
        assert second.serial_number != cert.serial_number
        assert stat.S_IMODE(pem.stat().st_mode) == 0o600
        await h.delete("p")
        await h.wait_gone("p", within=90)  # the status manager's delete, with the new certificate
        lease = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node_name}"
        first = (await h.api.get(lease))["spec"]["renewTime"]
        await eventually(
            lambda: _lease_renewed(h, lease, first), within=60, what="the lease renewed after the renewal"
        )


async def _lease_renewed(h: ProviderHarness, path: str, first: str) -> bool:
    return bool((await h.api.get(path))["spec"]["renewTime"] != first)


async def _provider_start_error(
    node_name: str, tmp_path: Path, kubeconfig: Path, caplog: pytest.LogCaptureFixture
) -> list[str]:
    """`run_provider` in node mode with `kubeconfig` as the bootstrap credentials: its exit code
    must be 1, and the error lines it logged are returned."""
    config = Config(
        node=NodeConfig(name=node_name, internal_ip="127.0.0.1"),
        kubernetes=KubernetesConfig(kubeconfig=str(kubeconfig), credentials="node"),
        docker=DockerConfig(state_dir=str(tmp_path / "state")),
    )
    caplog.clear()
    caplog.set_level(logging.INFO, logger="vk_provider")
    assert await run_provider(config) == 1
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert all(r.exc_info is None for r in errors), "a traceback"
    assert {r.getMessage() for r in errors} <= {"provider failed to start"}
    return [r.err for r in errors]


async def test_bootstrap_credentials_short_of_the_charts_stop_the_provider_with_one_line(
    node_name: str,
    tmp_path: Path,
    plane: RealPlane,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No CSR permission at all: the 403. The chart's rules without `nodeclient`: the real
    csrapproving controller leaves the CSR pending, and the provider names it and the fix."""
    tools = identities.find_chart_tools()
    if tools is None:
        pytest.skip("no helm binary: run scripts/ensure-helm.sh")
    monkeypatch.setattr(node_credentials, "ISSUE_DEADLINE", 8.0)
    bare = f"bare-{node_name}"
    account: dict[str, Any] = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": bare}}
    fullname = f"nn-{node_name}"
    values = {"credentials": "node", "node.name": node_name, "fullnameOverride": fullname}
    partial = identities.render_chart_rbac(tools, values)
    role = next(o for o in partial if o["kind"] == "ClusterRole")
    role["rules"] = [
        r for r in role["rules"] if "certificatesigningrequests/nodeclient" not in r["resources"]
    ]
    assert role["rules"], "the chart's node-mode ClusterRole without its nodeclient rule"
    try:
        async with plane.cluster.admin() as admin:
            bare_kubeconfig = tmp_path / "bare.kubeconfig"
            write_kubeconfig(
                bare_kubeconfig,
                plane.cluster.url,
                await identities.chart_identity(admin, [account], plane.ca_file),
            )
            partial_kubeconfig = tmp_path / "partial.kubeconfig"
            write_kubeconfig(
                partial_kubeconfig,
                plane.cluster.url,
                await identities.chart_identity(admin, partial, plane.ca_file),
            )

        [line] = await _provider_start_error(node_name, tmp_path, bare_kubeconfig, caplog)
        assert line.startswith("cannot request the node certificate (CSR node-client-")
        assert (
            "with the bootstrap credentials: 403 Forbidden: certificatesigningrequests.certificates.k8s.io"
            f' is forbidden: User "system:serviceaccount:{identities.CHART_NAMESPACE}:{bare}" cannot create'
        ) in line

        [line] = await _provider_start_error(node_name, tmp_path, partial_kubeconfig, caplog)
        async with plane.cluster.admin() as admin:
            [csr] = await _csrs_of(admin, f"system:serviceaccount:{identities.CHART_NAMESPACE}:{fullname}")
        name = csr["metadata"]["name"]
        assert not (csr.get("status") or {}).get("conditions"), csr["status"]  # pending: never approved
        assert line == (
            f"CSR {name} not approved within 8s: approve it (kubectl certificate "
            f"approve {name}), or let the csrapproving controller do it: the requester needs create on "
            "certificatesigningrequests/nodeclient"
        )
    finally:
        async with plane.cluster.admin() as admin:
            for user in (bare, fullname):
                for csr in await _csrs_of(
                    admin, f"system:serviceaccount:{identities.CHART_NAMESPACE}:{user}"
                ):
                    await admin.request("DELETE", f"{CSRS}/{csr['metadata']['name']}")
            for obj in [*partial, account]:
                await admin.request("DELETE", identities._object_path(obj))
