"""What only a real cluster can show: the provider under the upstream controllers and scheduler.

Each test runs on the real control plane tier only (the session's kube-apiserver, controller
manager and scheduler; `--control-plane=real` or `both`) with a provider for the test's node,
and acts as a user would: Deployments, Jobs, `kubectl drain` with a PodDisruptionBudget, a
silent node under the node lifecycle controller, a deleted Node, a serving certificate
from the CSR API; and the provider's credentials: a chart RBAC rule taken away makes it fail
visibly, and a kubelet's own identity (Node authorizer + NodeRestriction) is enough.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from tests.support.containers import labelled
from tests.support.images import BUSYBOX_IMAGE
from tests.support.kubectl import KUBECTL
from tests.support.manifests import static_pod_dir
from tests.support.planes import RealPlane
from tests.support.pod_status import condition, phase
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness
from tests.support.sandbox_process import TOLERATION
from vk_provider.app import Provider
from vk_provider.config import KubeletTLS
from vk_sandbox.kubeconfig import Credentials, write_kubeconfig
from vk_sandbox.real import identities
from vk_sandbox.real.components import SERVICE_IP
from vk_sandbox.real.host_network import advertise_address
from vk_sandbox.real.pki import ClusterPKI

pytestmark = [pytest.mark.docker, pytest.mark.real_only]
APPS = "/apis/apps/v1/namespaces/default"
NODE_LABEL = "io.vk-provider.node"
CLOCK = {"name": "c", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}


@pytest.fixture
async def harness(
    node_name: str, test_images: dict[str, str], tmp_path: Path, plane: RealPlane
) -> AsyncIterator[ProviderHarness]:
    async with ProviderHarness.running(node_name, tmp_path, plane=plane) as h:
        await eventually(lambda: node_ready(h), within=60, what="node Ready")
        yield h


async def node(h: ProviderHarness) -> dict[str, Any]:
    return await h.api.get(f"/api/v1/nodes/{h.node_name}")


async def node_ready(h: ProviderHarness, status: str = "True") -> bool:
    return condition(await node(h), "Ready").get("status") == status


async def kubectl(h: ProviderHarness, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The real kubectl, in a thread: the provider under test serves on this event loop."""
    result = await asyncio.to_thread(
        subprocess.run,
        [str(KUBECTL), "--kubeconfig", str(h.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if check:
        assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result


def template(h: ProviderHarness, app: str, script: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": h.node_name},
            "tolerations": [TOLERATION],
            "terminationGracePeriodSeconds": 2,
            "containers": [{"name": "c", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", script]}],
        },
    }


def deployment(h: ProviderHarness, name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template(h, name, "trap 'exit 0' TERM; sleep 3600 & wait"),
        },
    }


async def app_pods(h: ProviderHarness, app: str) -> list[dict[str, Any]]:
    answer = await h.api.get("/api/v1/namespaces/default/pods", {"labelSelector": f"app={app}"})
    return list(answer.get("items") or [])


async def running_on_node(h: ProviderHarness, app: str, count: int) -> list[dict[str, Any]] | None:
    pods = [p for p in await app_pods(h, app) if not p["metadata"].get("deletionTimestamp")]
    if len(pods) == count and all(
        phase(p) == "Running" and p["spec"].get("nodeName") == h.node_name for p in pods
    ):
        return pods
    return None


async def test_a_silent_node_goes_unknown_with_unreachable_taints_and_recovers(
    harness: ProviderHarness,
) -> None:
    await harness.stop_provider()
    await eventually(lambda: node_ready(harness, "Unknown"), within=120, what="Ready=Unknown")

    async def unreachable_taints() -> set[str]:
        taints = (await node(harness))["spec"].get("taints") or []
        return {t["effect"] for t in taints if t["key"] == "node.kubernetes.io/unreachable"}

    # The only node is down: the controller is in "master disruption mode" and adds no
    # NoExecute taint, so nothing is evicted (pkg/controller/nodelifecycle/
    # node_lifecycle_controller.go, handleDisruption, in kubernetes v1.37).
    # Generous deadlines: the controller-manager's passes lag on a loaded machine (the fresh-clone
    # CI of 332e627 missed 60 s here with two real planes side by side; alone it takes seconds).
    assert await eventually(lambda: _equals(unreachable_taints, {"NoSchedule"}), within=180)
    await harness.start_provider()
    await eventually(lambda: node_ready(harness), within=180, what="Ready again")
    assert await eventually(lambda: _equals(unreachable_taints, set()), within=180)


async def _equals(get: Any, wanted: Any) -> bool:
    return bool(await get() == wanted)


async def test_a_deployment_runs_rolls_and_scales_to_zero_on_the_node(
    harness: ProviderHarness, docker_client: Any
) -> None:
    await harness.api.create(f"{APPS}/deployments", deployment(harness, "web", 3))
    first = await eventually(lambda: running_on_node(harness, "web", 3), within=180, what="3 Running")
    first_names = {p["metadata"]["name"] for p in first}

    patch = {
        "spec": {"template": {"spec": {"containers": [{"name": "c", "env": [{"name": "V", "value": "2"}]}]}}}
    }
    await harness.api.patch(f"{APPS}/deployments/web", patch, "strategic")

    async def rolled() -> bool:
        pods = await running_on_node(harness, "web", 3)
        return bool(pods) and not first_names & {p["metadata"]["name"] for p in pods or []}

    await eventually(rolled, within=240, what="the rolling update")

    await harness.api.patch(f"{APPS}/deployments/web", {"spec": {"replicas": 0}}, "merge")

    async def no_app_containers() -> bool:
        gone = not await app_pods(harness, "web")
        containers = labelled(docker_client, [f"{NODE_LABEL}={harness.node_name}", "io.vk-provider.role=app"])
        return gone and not containers

    await eventually(no_app_containers, within=180, what="pods and containers gone")


async def test_a_job_completes(harness: ProviderHarness) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once"},
        "spec": {"backoffLimit": 0, "template": template(harness, "once", "echo done")},
    }
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    await harness.api.create("/apis/batch/v1/namespaces/default/jobs", job)

    async def complete() -> bool:
        status = (await harness.api.get("/apis/batch/v1/namespaces/default/jobs/once")).get("status") or {}
        return any(c["type"] == "Complete" and c["status"] == "True" for c in status.get("conditions") or [])

    await eventually(complete, within=180, what="Job Complete")
    pods = await app_pods(harness, "once")
    assert [phase(p) for p in pods] == ["Succeeded"]
    assert (await kubectl(harness, "logs", "job/once")).stdout.strip() == "done"


async def test_drain_evicts_the_nodes_pods_and_honours_a_disruption_budget(harness: ProviderHarness) -> None:
    await harness.api.create(f"{APPS}/deployments", deployment(harness, "guarded", 2))
    await eventually(lambda: running_on_node(harness, "guarded", 2), within=180, what="2 Running")
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
    }
    await harness.api.create("/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb)

    async def budget_known() -> bool:
        status = await harness.api.get("/apis/policy/v1/namespaces/default/poddisruptionbudgets/guarded")
        return int((status.get("status") or {}).get("disruptionsAllowed", 0)) == 1

    await eventually(budget_known, within=60, what="the PDB to allow one disruption")
    # The node is the only one the pods fit: one eviction is allowed, the second never is.
    blocked = await kubectl(
        harness, "drain", harness.node_name, "--ignore-daemonsets", "--timeout=25s", check=False
    )
    assert blocked.returncode != 0
    assert "disruption budget" in blocked.stderr, blocked.stderr
    assert (await node(harness))["spec"].get("unschedulable") is True
    live = [
        p
        for p in await app_pods(harness, "guarded")
        if phase(p) == "Running" and not p["metadata"].get("deletionTimestamp")
    ]
    assert len(live) == 1

    await harness.api.delete("/apis/policy/v1/namespaces/default/poddisruptionbudgets/guarded")
    await kubectl(harness, "drain", harness.node_name, "--ignore-daemonsets", "--timeout=120s")

    async def none_left_on_node() -> bool:
        pods = await harness.api.get(
            "/api/v1/namespaces/default/pods", {"fieldSelector": f"spec.nodeName={harness.node_name}"}
        )
        return not pods.get("items")

    await eventually(none_left_on_node, within=120, what="the node drained")
    await kubectl(harness, "uncordon", harness.node_name)


@pytest.fixture
async def static_harness(
    node_name: str, test_images: dict[str, str], tmp_path: Path, plane: RealPlane
) -> AsyncIterator[ProviderHarness]:
    static_dir = static_pod_dir(tmp_path, "clock", [CLOCK])
    async with ProviderHarness.running(node_name, tmp_path, plane=plane, static_dir=static_dir) as h:
        yield h


async def test_a_deleted_node_is_registered_again_and_its_mirror_pod_follows_the_new_node(
    static_harness: ProviderHarness,
) -> None:
    h = static_harness
    mirror_name = f"clock-{h.node_name}"

    async def mirror_owned_by(uid: str) -> dict[str, Any] | None:
        pod = await h.get(mirror_name)
        if pod is None or phase(pod) != "Running":
            return None
        owners = pod["metadata"].get("ownerReferences") or []
        return pod if [o.get("uid") for o in owners] == [uid] else None

    old_uid = (await eventually(lambda: _node_or_none(h), within=60))["metadata"]["uid"]
    before = await eventually(lambda: mirror_owned_by(old_uid), within=90, what="the mirror pod")
    container_id = before["status"]["containerStatuses"][0]["containerID"]

    await kubectl(h, "delete", "node", h.node_name, "--wait=true")
    new = await eventually(lambda: _recreated(h, old_uid), within=120, what="the node registered again")
    # The garbage collector deletes the mirror owned by the old Node; the provider makes a new one.
    after = await eventually(lambda: mirror_owned_by(new["metadata"]["uid"]), within=180, what="a new mirror")
    assert after["status"]["containerStatuses"][0]["containerID"] == container_id  # never restarted
    reasons = {
        e.get("reason") for e in (await h.api.get("/api/v1/namespaces/default/events")).get("items") or []
    }
    assert "NodeRecreated" in reasons


async def _node_or_none(h: ProviderHarness) -> dict[str, Any] | None:
    try:
        return await node(h)
    except Exception:
        return None


async def _recreated(h: ProviderHarness, old_uid: str) -> dict[str, Any] | None:
    current = await _node_or_none(h)
    return current if current and current["metadata"]["uid"] != old_uid else None


def node_identity_kubeconfig(plane: RealPlane, node_name: str, directory: Path) -> Path:
    """A kubeconfig with a kubelet's client certificate (system:node:<node>) from the cluster CA."""
    # The advertised address too, or the apiserver's serving certificate is issued again without it.
    pki = ClusterPKI(plane.cluster.state_dir, SERVICE_IP, (advertise_address(),))
    cert, key = pki.node_identity(node_name)
    credentials = Credentials(plane.ca_file, cert, key)
    return write_kubeconfig(directory / "node.kubeconfig", plane.cluster.url, credentials)


async def test_the_serving_certificate_comes_from_the_csr_api_once_an_admin_approves_it(
    node_name: str, test_images: dict[str, str], tmp_path: Path, plane: RealPlane
) -> None:
    # A kubelet's own identity: it may create its serving CSR but not approve it.
    kubeconfig = node_identity_kubeconfig(plane, node_name, tmp_path)
    h = ProviderHarness(node_name, tmp_path, plane=plane)
    await h.start_sandbox()
    try:
        config = h.config()
        config = dataclasses.replace(
            config,
            kubernetes=dataclasses.replace(config.kubernetes, kubeconfig=str(kubeconfig)),
            kubelet_server=dataclasses.replace(config.kubelet_server, tls=KubeletTLS(mode="csr")),
        )
        h.provider = Provider(config)
        await h.provider.start()

        async def pending_csr() -> str | None:
            answer = await h.api.get("/apis/certificates.k8s.io/v1/certificatesigningrequests")
            for csr in answer.get("items") or []:
                if csr["spec"].get("username") == f"system:node:{node_name}" and not csr.get("status"):
                    return str(csr["metadata"]["name"])
            return None

        name = await eventually(pending_csr, within=60, what="the node's CSR")
        await kubectl(h, "certificate", "approve", name)
        port = int((await node(h))["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"])

        async def served_by_the_cluster_ca() -> x509.Certificate | None:
            ctx = ssl.create_default_context(cafile=str(plane.ca_file))
            ctx.check_hostname = False
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
            except (ssl.SSLError, OSError):
                return None  # still the self-signed certificate
            der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
            writer.close()
            return x509.load_der_x509_certificate(der) if der else None

        served = await eventually(served_by_the_cluster_ca, within=90, what="the CA-signed serving cert")
        subject = {a.oid._name: a.value for a in served.subject}
        assert subject == {"commonName": f"system:node:{node_name}", "organizationName": "system:nodes"}
        sans = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert "127.0.0.1" in {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    finally:
        await h.close()


def _without_rule(objects: list[dict[str, Any]], resource: str, suffix: str) -> list[dict[str, Any]]:
    """The chart's RBAC under other names, with the rule granting `resource` taken out."""
    changed = []
    for obj in json.loads(json.dumps(objects)):
        obj["metadata"]["name"] += suffix
        if "roleRef" in obj:
            obj["roleRef"]["name"] += suffix
            for subject in obj.get("subjects") or []:
                subject["name"] += suffix
        if obj["kind"] == "ClusterRole":
            obj["rules"] = [r for r in obj["rules"] if resource not in r.get("resources", [])]
        changed.append(obj)
    return changed


async def test_a_missing_rbac_rule_makes_the_provider_fail_visibly(
    node_name: str,
    test_images: dict[str, str],
    tmp_path: Path,
    plane: RealPlane,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = identities.find_chart_tools()
    assert tools is not None
    rendered = identities.render_chart_rbac(tools, identities.chart_values({}))
    assert any(
        "pods/status" in r["resources"] for o in rendered if o["kind"] == "ClusterRole" for r in o["rules"]
    )
    async with plane.cluster.admin() as admin:
        credentials = await identities.chart_identity(
            admin, _without_rule(rendered, "pods/status", "-lacking"), plane.ca_file
        )
    kubeconfig = write_kubeconfig(tmp_path / "lacking.kubeconfig", plane.cluster.url, credentials)
    async with ProviderHarness.running(
        node_name, tmp_path, plane=plane.with_provider_kubeconfig(kubeconfig)
    ) as h:
        await eventually(lambda: node_ready(h), within=60, what="node Ready")
        await h.create(h.manifest("p", [{"name": "c", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}]))

        async def forbidden_event() -> dict[str, Any] | None:
            answer = await h.api.get(
                "/api/v1/namespaces/default/events",
                {"fieldSelector": f"involvedObject.name={node_name},reason=Forbidden"},
            )
            items = answer.get("items") or []
            return items[0] if items else None

        event = await eventually(forbidden_event, within=90, what="a Forbidden event on the Node")
        assert event["type"] == "Warning"
        assert event["message"].startswith("vk-provider may not patch pods/status: ")
        errors = [r for r in caplog.records if r.levelname == "ERROR"]
        missing = [(r.verb, r.resource) for r in errors if r.getMessage().startswith("permission missing")]
        assert ("patch", "pods/status") in missing, [vars(r) for r in errors]
        pod = await h.get("p")
        assert pod is not None and phase(pod) == "Pending"  # the status could never be written


async def test_as_a_kubelet_identity_pods_mirrors_status_leases_events_and_tokens_work(
    node_name: str, test_images: dict[str, str], tmp_path: Path, plane: RealPlane
) -> None:
    """system:node:<name> in system:nodes, under the Node authorizer and NodeRestriction."""
    kubeconfig = node_identity_kubeconfig(plane, node_name, tmp_path)
    static_dir = static_pod_dir(tmp_path, "clock", [CLOCK])
    node_plane = plane.with_provider_kubeconfig(kubeconfig)
    async with ProviderHarness.running(node_name, tmp_path, plane=node_plane, static_dir=static_dir) as h:
        await eventually(lambda: node_ready(h), within=60, what="node Ready")
        labels = (await node(h))["metadata"]["labels"]
        assert "kubernetes.io/role" not in labels and labels["kubernetes.io/hostname"] == node_name
        await h.create_object("configmaps", {"metadata": {"name": "cfg"}, "data": {"a": "1"}})
        await h.create_object("secrets", {"metadata": {"name": "sec"}, "stringData": {"b": "2"}})
        script = (
            "cat /cfg/a /sec/b; cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; sleep 3600"
        )
        container = {
            "name": "c",
            "image": BUSYBOX_IMAGE,
            "command": ["sh", "-c", script],
            "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}, {"name": "sec", "mountPath": "/sec"}],
        }
        volumes = [
            {"name": "cfg", "configMap": {"name": "cfg"}},
            {"name": "sec", "secret": {"secretName": "sec"}},
        ]
        await h.create(h.manifest("vols", [container], volumes=volumes))
        await h.wait_for("vols", lambda p: condition(p, "Ready").get("status") == "True", within=90)
        logs = await kubectl(h, "logs", "vols")
        assert logs.stdout.split() == ["12default"], logs.stdout  # configmap, secret, token volume
        mirror = await h.wait_for(f"clock-{node_name}", lambda p: phase(p) == "Running", within=90)
        assert mirror["metadata"]["annotations"]["kubernetes.io/config.mirror"]
        lease_path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node_name}"
        first = (await h.api.get(lease_path))["spec"]["renewTime"]
        await eventually(
            lambda: _renewed(h, lease_path, first), within=60, what="the lease renewed by the node identity"
        )
        await h.wait_event("vols", "Started")
        await h.delete("vols")
        await h.wait_gone("vols", within=90)


async def _renewed(h: ProviderHarness, path: str, first: str) -> bool:
    return bool((await h.api.get(path))["spec"]["renewTime"] != first)
