"""The objects a fresh cluster has, and the controllers that keep them in every namespace.

What lives here: `SYSTEM_NAMESPACES` and `ensure_system_namespaces(store)` (default,
kube-system, kube-public, kube-node-lease, as the apiserver's system-namespaces controller
creates them), `ensure_kubernetes_service(store, port)` (the `default/kubernetes` Service the
apiserver's endpoint reconciler keeps), and `NamespaceContent`, the two small
kube-controller-manager loops that put a `default` ServiceAccount (serviceaccounts-controller)
and the `kube-root-ca.crt` ConfigMap (root-ca-cert-publisher) into every active namespace
and recreate them when deleted.
Must not: create anything else.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from vk_common.logging import get_logger
from vk_common.tasks import cancel_and_wait
from vk_sandbox.api.errors import ApiError
from vk_sandbox.storage.store import Store

log = get_logger("sandbox.bootstrap")

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
KUBERNETES_SERVICE_IP = "10.96.0.1"


async def ensure_system_namespaces(store: Store) -> None:
    for name in SYSTEM_NAMESPACES:
        with contextlib.suppress(ApiError):
            await store.get("namespaces", None, name)
            continue
        await store.create(
            "namespaces",
            {
                "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            },
        )


async def ensure_kubernetes_service(store: Store, port: int) -> None:
    try:
        service = await store.get("services", "default", "kubernetes")
    except ApiError:
        service = None
    if service is not None:
        if service["spec"]["ports"][0].get("targetPort") != port:
            service["spec"]["ports"][0]["targetPort"] = port
            await store.update("services", service)
        return
    await store.create(
        "services",
        {
            "metadata": {
                "name": "kubernetes",
                "namespace": "default",
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "clusterIP": KUBERNETES_SERVICE_IP,
                "clusterIPs": [KUBERNETES_SERVICE_IP],
                "internalTrafficPolicy": "Cluster",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
                "sessionAffinity": "None",
                "type": "ClusterIP",
            },
            "status": {"loadBalancer": {}},
        },
    )


class NamespaceContent:
    """Keeps the default ServiceAccount and the root CA ConfigMap in every active namespace."""

    def __init__(self, store: Store, ca_pem: str) -> None:
        self._store = store
        self._ca_pem = ca_pem
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        await self._ensure_all()
        self._tasks = [
            asyncio.create_task(self._follow(resource), name=f"sandbox-namespace-content-{resource}")
            for resource in ("namespaces", "serviceaccounts", "configmaps")
        ]

    async def stop(self) -> None:
        await cancel_and_wait(*self._tasks)
        self._tasks = []

    async def _ensure_all(self) -> None:
        namespaces, _ = await self._store.list("namespaces")
        for ns in namespaces:
            await self.ensure(ns)

    async def _follow(self, resource: str) -> None:
        rv = self._store.resource_version
        while True:
            try:
                async for event in self._store.watch(resource, resource_version=rv):
                    await self._on_event(resource, event.type, event.object)
            except ApiError as e:
                log.warning("watch failed", extra={"resource": resource, "err": e.message})
            await asyncio.sleep(0.5)  # closed (fault injection): catch up, then watch again
            rv = self._store.resource_version
            await self._ensure_all()

    async def _on_event(self, resource: str, type_: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if resource == "namespaces":
            if type_ != "DELETED":
                await self.ensure(obj)
            return
        if type_ == "DELETED" and meta.get("name") in ("default", ROOT_CA_CONFIGMAP):
            with contextlib.suppress(ApiError):
                await self.ensure(await self._store.get("namespaces", None, meta.get("namespace", "")))

    async def ensure(self, namespace: dict[str, Any]) -> None:
        meta = namespace.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return
        name = meta["name"]
        wanted = (
            ("serviceaccounts", {"metadata": {"name": "default", "namespace": name}}),
            (
                "configmaps",
                {
                    "metadata": {
                        "name": ROOT_CA_CONFIGMAP,
                        "namespace": name,
                        "annotations": {
                            "kubernetes.io/description": "Contains a CA bundle that can be used to verify "
                            "the kube-apiserver when using internal endpoints such as the internal service "
                            "IP or kubernetes.default.svc. No other usage is guaranteed across distributions "
                            "of Kubernetes clusters."
                        },
                    },
                    "data": {"ca.crt": self._ca_pem},
                },
            ),
        )
        for resource, obj in wanted:
            try:
                await self._store.get(resource, name, obj["metadata"]["name"])
            except ApiError:
                with contextlib.suppress(ApiError):  # created meanwhile, or the namespace went away
                    await self._store.create(resource, obj)
