"""A namespace's deletion as the namespace controller runs it, on both planes: its pods first,
the rest of its content only once no pod is left, and the deleter's five status conditions
(upstream's OrderedNamespaceDeletion conformance spec, KEP-5080; pkg/controller/namespace/
deletion). The official `kubernetes` client in threads.
"""

from __future__ import annotations

import asyncio
from typing import Any

import kubernetes

from tests.support.planes import Plane
from tests.support.polling import eventually

DEADLINE = 90.0  # the real controller requeues a namespace held by finalizers after ~15 s
NAME = "ordered-deletion"
OK = {
    "NamespaceDeletionDiscoveryFailure": (
        "False",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "False",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    "NamespaceDeletionContentFailure": (
        "False",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    "NamespaceContentRemaining": ("False", "ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": (
        "False",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
}


def _conditions(core: Any) -> dict[str, tuple[str, str, str]]:
    ns = core.read_namespace(NAME)
    return {c.type: (c.status, c.reason, c.message) for c in ns.status.conditions or []}


async def _until(core: Any, wanted: dict[str, tuple[str, str, str]]) -> None:
    seen: dict[str, tuple[str, str, str]] = {}

    async def reached() -> bool:
        seen.clear()
        seen.update(await asyncio.to_thread(_conditions, core))
        return seen == wanted

    await eventually(reached, within=DEADLINE, interval=0.5, what=lambda: f"conditions {wanted}, last {seen}")


def _gone(read: Any, *args: str) -> Any:
    async def check() -> bool:
        try:
            await asyncio.to_thread(read, *args)
        except kubernetes.client.ApiException as exc:
            return exc.status == 404
        return False

    return check


async def test_pods_go_first_and_the_conditions_say_what_holds_the_namespace(plane: Plane) -> None:
    await plane.start()
    api = kubernetes.config.new_client_from_config(config_file=str(plane.admin_kubeconfig))
    core = kubernetes.client.CoreV1Api(api)
    hold = {"finalizers": ["example.com/hold"]}
    try:
        await asyncio.to_thread(core.create_namespace, {"metadata": {"name": NAME}})
        pod = {
            "metadata": {"name": "held", **hold},
            "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "busybox"}]},
        }
        await asyncio.to_thread(core.create_namespaced_pod, NAME, pod)
        await asyncio.to_thread(core.create_namespaced_config_map, NAME, {"metadata": {"name": "kept"}})
        await asyncio.to_thread(
            core.create_namespaced_config_map, NAME, {"metadata": {"name": "held-cm", **hold}}
        )
        await asyncio.to_thread(core.delete_namespace, NAME)

        # a pod is left (its finalizer: a normal condition): the rest waits, the totals too
        await _until(core, OK)
        assert (await asyncio.to_thread(core.read_namespaced_pod, "held", NAME)).metadata.deletion_timestamp
        kept = await asyncio.to_thread(core.read_namespaced_config_map, "kept", NAME)
        assert kept.metadata.deletion_timestamp is None

        await asyncio.to_thread(core.patch_namespaced_pod, "held", NAME, {"metadata": {"finalizers": None}})
        # no pod left: the other content goes, and what a finalizer holds is counted
        await _until(
            core,
            {
                **OK,
                "NamespaceContentRemaining": (
                    "True",
                    "SomeResourcesRemain",
                    "Some resources are remaining: configmaps. has 1 resource instances",
                ),
                "NamespaceFinalizersRemaining": (
                    "True",
                    "SomeFinalizersRemain",
                    "Some content in the namespace has finalizers remaining: "
                    "example.com/hold in 1 resource instances",
                ),
            },
        )
        assert await eventually(_gone(core.read_namespaced_config_map, "kept", NAME), within=DEADLINE)

        await asyncio.to_thread(
            core.patch_namespaced_config_map, "held-cm", NAME, {"metadata": {"finalizers": None}}
        )
        assert await eventually(_gone(core.read_namespace, NAME), within=DEADLINE, interval=0.5)
    finally:
        api.close()
        await plane.stop()
