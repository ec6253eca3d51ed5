"""The real kubectl (1.37, `KUBECTL`) against the sandbox API server: what a user types, and what they see."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.kubectl import run_kubectl, streaming_kubectl
from tests.support.polling import eventually
from tests.support.sandbox import RunningSandbox, running_sandbox
from vk_common.kube_version import KUBE_VERSION

pytestmark = pytest.mark.kubectl

POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  nodeSelector:
    kubernetes.io/hostname: node-1
  containers:
  - name: web
    image: vk-test/busybox:1
    command: ["httpd", "-f"]
"""
# Tolerations, one without an operator; DefaultTolerationSeconds adds the not-ready and
# unreachable ones on create.
TOLERANT_POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: tolerant
spec:
  nodeSelector:
    kubernetes.io/hostname: node-1
  tolerations:
  - {key: virtual-kubelet.io/provider, operator: Equal, value: docker, effect: NoSchedule}
  - {key: example.com/dedicated, value: batch, effect: NoSchedule}
  containers:
  - name: web
    image: vk-test/busybox:1
"""


def cache_env(tmp: Path) -> dict[str, str]:
    """kubectl's HOME and discovery cache in the test's own directory."""
    return {"KUBECACHEDIR": str(tmp / "kubecache"), "HOME": str(tmp)}


@dataclass
class Result:
    rc: int
    out: str
    err: str


Kubectl = Callable[..., Awaitable[Result]]


@dataclass
class Env:
    sandbox: RunningSandbox
    kubectl: Kubectl
    tmp: Path


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with running_sandbox(tmp_path) as sandbox:

        async def kubectl(*args: str, stdin: str | None = None) -> Result:
            return Result(*await run_kubectl(sandbox.kubeconfig, *args, stdin=stdin, env=cache_env(tmp_path)))

        yield Env(sandbox, kubectl, tmp_path)


async def _ready_node(sandbox: RunningSandbox, name: str) -> None:
    await sandbox.store.create(
        "nodes",
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}
                ],
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "nodeInfo": {"kubeletVersion": f"{KUBE_VERSION}-vk"},
            },
        },
    )


async def _set_status(sandbox: RunningSandbox, name: str, **status: Any) -> None:
    pod = await sandbox.store.get("pods", "default", name)
    pod["status"].update(status)
    await sandbox.store.update("pods", pod, subresource="status")


async def _wait_for(check: Callable[[], Awaitable[bool]]) -> None:
    await eventually(check, within=20, interval=0.1, what="what the scheduler changes")


@contextlib.asynccontextmanager
async def _kubelet(sandbox: RunningSandbox) -> AsyncIterator[None]:
    """Plays the node's part in deletion: removes terminating pods with grace 0 and a uid precondition."""

    async def finish_deletions() -> None:
        async for event in sandbox.store.watch("pods", resource_version=sandbox.store.resource_version):
            meta = event.object["metadata"]
            if event.type == "MODIFIED" and meta.get("deletionTimestamp"):
                with contextlib.suppress(Exception):
                    await sandbox.store.delete(
                        "pods",
                        meta["namespace"],
                        meta["name"],
                        grace_period_seconds=0,
                        preconditions={"uid": meta["uid"]},
                    )

    task = asyncio.create_task(finish_deletions())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_apply_pod_with_node_selector_and_get_wide(env: Env) -> None:
    manifest = env.tmp / "pod.yaml"
    manifest.write_text(POD_YAML)
    result = await env.kubectl("apply", "-f", str(manifest))
    assert result.rc == 0, result.err
    assert result.out.strip() == "pod/web created"
    pod = await env.sandbox.store.get("pods", "default", "web")
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "node-1"}

    await _ready_node(env.sandbox, "node-1")

    async def bound() -> bool:
        return bool((await env.sandbox.store.get("pods", "default", "web"))["spec"].get("nodeName"))

    await _wait_for(bound)  # the scheduler binds it to the matching node
    await _set_status(env.sandbox, "web", phase="Running", podIP="10.1.2.3", podIPs=[{"ip": "10.1.2.3"}])
    result = await env.kubectl("get", "pods", "-o", "wide")
    assert result.rc == 0, result.err
    header, row = result.out.splitlines()
    assert header.split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    cells = row.split()
    assert (cells[0], cells[2], cells[5], cells[6]) == ("web", "Running", "10.1.2.3", "node-1")

    again = await env.kubectl("apply", "-f", str(manifest))
    assert again.rc == 0 and again.out.strip() == "pod/web unchanged", again.err


async def test_apply_of_an_unchanged_pod_with_tolerations_again_changes_nothing(env: Env) -> None:
    manifest = env.tmp / "pod.yaml"
    manifest.write_text(TOLERANT_POD_YAML)
    result = await env.kubectl("apply", "-f", str(manifest))
    assert result.rc == 0 and result.out.strip() == "pod/tolerant created", result.err
    created = await env.sandbox.store.get("pods", "default", "tolerant")
    assert [(t["key"], t.get("tolerationSeconds")) for t in created["spec"]["tolerations"]] == [
        ("virtual-kubelet.io/provider", None),
        ("example.com/dedicated", None),
        ("node.kubernetes.io/not-ready", 300),
        ("node.kubernetes.io/unreachable", 300),
    ]
    # kubectl's patch sets the (atomic) tolerations list to the manifest's two; the server's
    # DefaultTolerationSeconds admission, which also runs on updates, adds the other two back,
    # so the update is a no-op. kubectl still says "configured": it prints "unchanged" only when
    # its patch is empty (staging/src/k8s.io/kubectl/pkg/cmd/apply/apply.go).
    for _ in range(2):
        again = await env.kubectl("apply", "-f", str(manifest))
        assert again.rc == 0 and again.out.strip() == "pod/tolerant configured", again.err
        assert await env.sandbox.store.get("pods", "default", "tolerant") == created


async def test_get_pods_watch_prints_each_change_once(env: Env) -> None:
    await env.kubectl("run", "web", "--image=vk-test/busybox:1", "--restart=Never")
    lines: list[str] = []
    async with streaming_kubectl(env.sandbox.kubeconfig, "get", "pods", "-w", env=cache_env(env.tmp)) as proc:
        assert proc.stdout is not None
        async with asyncio.timeout(30):
            while len(lines) < 2:  # header + the current row
                lines.append((await proc.stdout.readline()).decode().rstrip())
            await _set_status(env.sandbox, "web", phase="Running")
            lines.append((await proc.stdout.readline()).decode().rstrip())
            await _set_status(env.sandbox, "web", phase="Succeeded")
            lines.append((await proc.stdout.readline()).decode().rstrip())
        # nothing printed twice: no further line within a moment
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.5):
                extra = (await proc.stdout.readline()).decode().rstrip()
                lines.append(extra)
    assert lines[0].split()[:3] == ["NAME", "READY", "STATUS"]
    statuses = [line.split()[2] for line in lines[1:]]
    assert statuses == ["Pending", "Running", "Succeeded"], lines


async def test_describe_pod_shows_its_events(env: Env) -> None:
    await env.kubectl("run", "web", "--image=vk-test/busybox:1", "--restart=Never")
    pod = await env.sandbox.store.get("pods", "default", "web")
    await env.sandbox.store.create(
        "events",
        {
            "metadata": {"name": "web.17f3a2b4c5d6e7f8", "namespace": "default"},
            "involvedObject": {
                "kind": "Pod",
                "namespace": "default",
                "name": "web",
                "uid": pod["metadata"]["uid"],
                "apiVersion": "v1",
                "fieldPath": "spec.containers{web}",
            },
            "reason": "Pulled",
            "message": 'Container image "vk-test/busybox:1" already present on machine',
            "type": "Normal",
            "source": {"component": "kubelet", "host": "node-1"},
            "count": 1,
            "firstTimestamp": pod["metadata"]["creationTimestamp"],
            "lastTimestamp": pod["metadata"]["creationTimestamp"],
        },
    )
    result = await env.kubectl("describe", "pod", "web")
    assert result.rc == 0, result.err
    events = result.out.split("Events:")[1]
    assert "Pulled" in events and 'Container image "vk-test/busybox:1" already present on machine' in events
    assert "kubelet" in events


async def test_delete_pod(env: Env) -> None:
    await env.kubectl("run", "loose", "--image=vk-test/busybox:1", "--restart=Never")
    await env.kubectl(
        "run",
        "bound",
        "--image=vk-test/busybox:1",
        "--restart=Never",
        "--overrides",
        '{"spec": {"nodeName": "node-1"}}',
    )
    result = await env.kubectl("delete", "pod", "loose")  # unbound: immediate
    # kubectl 1.37 names the namespace (staging/src/k8s.io/kubectl/pkg/cmd/delete/delete.go PrintObj)
    assert result.rc == 0 and result.out.strip() == 'pod "loose" deleted from default namespace', result.err
    async with _kubelet(env.sandbox):  # bound: kubectl waits until the node finishes the deletion
        result = await env.kubectl("delete", "pod", "bound")
    assert result.rc == 0 and result.out.strip() == 'pod "bound" deleted from default namespace', result.err
    listed = await env.kubectl("get", "pods")
    assert "No resources found" in listed.err


async def test_get_nodes(env: Env) -> None:
    await _ready_node(env.sandbox, "node-1")
    result = await env.kubectl("get", "nodes")
    assert result.rc == 0, result.err
    header, row = result.out.splitlines()
    assert header.split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert row.split()[:3] == ["node-1", "Ready", "<none>"] and row.split()[4] == f"{KUBE_VERSION}-vk"


async def test_create_configmap_and_secret(env: Env) -> None:
    result = await env.kubectl("create", "configmap", "settings", "--from-literal=mode=fast")
    assert result.rc == 0 and result.out.strip() == "configmap/settings created", result.err
    result = await env.kubectl("create", "secret", "generic", "creds", "--from-literal=password=s3cret")
    assert result.rc == 0 and result.out.strip() == "secret/creds created", result.err
    cm = await env.sandbox.store.get("configmaps", "default", "settings")
    secret = await env.sandbox.store.get("secrets", "default", "creds")
    assert cm["data"] == {"mode": "fast"}
    assert secret["type"] == "Opaque" and secret["data"] == {"password": "czNjcmV0"}
    got = await env.kubectl("get", "configmap", "settings", "-o", "jsonpath={.data.mode}")
    assert got.out == "fast"


async def test_api_resources(env: Env) -> None:
    result = await env.kubectl("api-resources")
    assert result.rc == 0, result.err
    # The first row of each name: with metrics.k8s.io served, `pods` and `nodes` appear twice,
    # as in a real cluster running metrics-server.
    rows: dict[str, list[str]] = {}
    for line in result.out.splitlines()[1:]:
        rows.setdefault(line.split()[0], line.split())
    for name in (
        "pods",
        "nodes",
        "namespaces",
        "events",
        "configmaps",
        "secrets",
        "serviceaccounts",
        "services",
    ):
        assert name in rows
    assert rows["pods"][1:] == ["po", "v1", "true", "Pod"]
    assert rows["leases"][1:] == ["coordination.k8s.io/v1", "true", "Lease"]


async def test_get_namespaces_lists_the_system_ones(env: Env) -> None:
    result = await env.kubectl("get", "namespaces", "-o", "name")
    assert result.rc == 0, result.err
    assert sorted(result.out.split()) == [
        "namespace/default",
        "namespace/kube-node-lease",
        "namespace/kube-public",
        "namespace/kube-system",
    ]


async def test_unknown_field_is_refused_as_a_validation_error(env: Env) -> None:
    manifest = env.tmp / "bad.yaml"
    manifest.write_text(POD_YAML.replace("  nodeSelector:", "  bogusField: 1\n  nodeSelector:"))
    result = await env.kubectl("apply", "-f", str(manifest))
    assert result.rc != 0
    assert 'unknown field "spec.bogusField"' in result.err, result.err
    assert "Error from server" in result.err
    missing = await env.kubectl("get", "pod", "web")
    assert missing.rc != 0 and 'pods "web" not found' in missing.err


async def test_invalid_pod_is_refused_with_422_causes(env: Env) -> None:
    manifest = env.tmp / "invalid.yaml"
    manifest.write_text(POD_YAML.replace("name: web\n    image", "name: Web_1\n    image"))
    result = await env.kubectl("apply", "-f", str(manifest))
    assert result.rc != 0
    assert 'The Pod "web" is invalid' in result.err and "spec.containers[0].name" in result.err, result.err


def _serving_csr_yaml() -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "system:node:node-1"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
        ]
    )
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(subject)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("node-1")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    request = base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()
    return (
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\n"
        "metadata: {name: node-1-serving}\n"
        f"spec:\n  request: {request}\n  signerName: kubernetes.io/kubelet-serving\n"
        "  usages: [digital signature, server auth]\n"
    )


async def test_csr_approve_and_issue(env: Env) -> None:
    result = await env.kubectl("create", "-f", "-", stdin=_serving_csr_yaml())
    assert result.rc == 0, result.err
    listed = await env.kubectl("get", "csr")
    assert listed.out.splitlines()[1].split()[-1] == "Pending"
    result = await env.kubectl("certificate", "approve", "node-1-serving")
    assert result.rc == 0 and "approved" in result.out, result.err

    async def issued() -> bool:
        csr = await env.sandbox.store.get(
            "certificatesigningrequests.certificates.k8s.io", None, "node-1-serving"
        )
        return bool((csr.get("status") or {}).get("certificate"))

    await _wait_for(issued)
    listed = await env.kubectl("get", "csr")
    assert listed.out.splitlines()[1].split()[-1] == "Approved,Issued"


async def test_server_dry_run_changes_nothing(env: Env) -> None:
    manifest = env.tmp / "pod.yaml"
    manifest.write_text(POD_YAML)
    assert (await env.kubectl("apply", "-f", str(manifest))).rc == 0
    before = await env.sandbox.store.get("pods", "default", "web")
    manifest.write_text(POD_YAML.replace("app: web", "app: other"))
    result = await env.kubectl("apply", "-f", str(manifest), "--dry-run=server")
    assert result.rc == 0 and result.out.strip() == "pod/web configured (server dry run)", result.err
    result = await env.kubectl("delete", "pod", "web", "--dry-run=server")
    assert result.rc == 0 and "(server dry run)" in result.out, result.err
    result = await env.kubectl("run", "other", "--image=vk-test/busybox:1", "--dry-run=server")
    assert result.rc == 0 and result.out.strip() == "pod/other created (server dry run)", result.err
    after = await env.sandbox.store.get("pods", "default", "web")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    listed, _ = await env.sandbox.store.list("pods", "default")
    assert [p["metadata"]["name"] for p in listed] == ["web"]


async def test_get_all_shows_the_kubernetes_service(env: Env) -> None:
    result = await env.kubectl("get", "services")
    assert result.rc == 0, result.err
    row = result.out.splitlines()[1].split()
    assert row[:4] == ["kubernetes", "ClusterIP", "10.96.0.1", "<none>"]
    assert row[4] == "443/TCP"


async def test_auth_can_i_and_whoami(env: Env) -> None:
    result = await env.kubectl("auth", "can-i", "create", "pods")
    assert result.rc == 0 and result.out.strip() == "yes", result.err
    result = await env.kubectl("auth", "whoami")
    assert result.rc == 0 and "kubernetes-admin" in result.out, result.err


async def test_create_service_and_token(env: Env) -> None:
    result = await env.kubectl("create", "service", "clusterip", "web", "--tcp=80:8080")
    assert result.rc == 0 and result.out.strip() == "service/web created", result.err
    service = await env.sandbox.store.get("services", "default", "web")
    assert service["spec"]["ports"] == [
        {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}
    ]
    assert service["spec"]["clusterIP"].startswith("10.96.")
    result = await env.kubectl("create", "token", "default", "--audience=vk-test", "--duration=20m")
    assert result.rc == 0 and result.out.count(".") == 2, result.err
