"""`vk-provider remove-node`: take a virtual node out of the cluster for good (the chart's pre-delete hook).

What lives here: `remove_node(config, deployment=...)`, in three steps. First, with a
`NAMESPACE/NAME` deployment, the provider is stopped: its Deployment is scaled to 0 through
the scale subresource and its pods (those its ReplicaSets own) are waited for until gone (a
provider still running would register the Node again and keep its containers). Then the node's
pods leave the engine (the containers, volumes and files `vk-provider clean` removes). Last,
the Node object is deleted; its Lease goes with it (the Lease's owner reference) and the pod
garbage collector of the controller manager deletes the pods still bound to the missing node,
as it does for any deleted node. Each step logs one line; a failure is one line naming the
object and the apiserver's answer, exit 1.
Must not: touch a node other than config.node.name, or pods of the API beyond what stopping
the provider's Deployment does.
"""

from __future__ import annotations

import asyncio
import time

from vk_common.logging import ObjectRef, get_logger
from vk_provider.app import clean_node
from vk_provider.config import Config
from vk_provider.kube.client import ApiStatusError, KubeClient, make_kube_client

log = get_logger("node_removal")

STOP_SECONDS = 180.0
POLL_SECONDS = 1.0


class RemovalError(Exception):
    """A step that could not be done; the message says which object and why."""


def parse_deployment(value: str) -> tuple[str, str]:
    """`NAMESPACE/NAME` -> (namespace, name); ValueError when it is not that."""
    namespace, sep, name = value.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise ValueError(f"expected NAMESPACE/NAME, got {value!r}")
    return namespace, name


async def remove_node(config: Config, *, deployment: str | None = None) -> int:
    """Stop the provider's Deployment (if named), clean the engine, delete the Node. Exit code."""
    node = config.node.name
    client = await make_kube_client(config.kubernetes)
    try:
        if deployment is not None:
            await _stop_deployment(client, *parse_deployment(deployment))
        if await clean_node(config) != 0:
            return 1
        await _delete_node(client, node)
    except RemovalError as exc:
        log.error("could not remove the node", extra={"node": node, "err": str(exc)})
        return 1
    finally:
        await client.close()
    return 0


async def _stop_deployment(client: KubeClient, namespace: str, name: str) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    try:
        found = await client.get(path)
    except ApiStatusError as exc:
        if exc.status == 404:
            log.info("deployment is gone already", extra={"deployment": ObjectRef(name, namespace)})
            return
        raise RemovalError(f"get deployment {namespace}/{name}: {exc}") from None
    labels = found.get("spec", {}).get("selector", {}).get("matchLabels", {})
    selector = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
    try:
        await client.patch(f"{path}/scale", {"spec": {"replicas": 0}}, "merge")
    except ApiStatusError as exc:
        raise RemovalError(f"scale deployment {namespace}/{name} to 0: {exc}") from None
    log.info(
        "scaled deployment to 0; waiting for its pods to end",
        extra={"deployment": ObjectRef(name, namespace)},
    )
    deadline = time.monotonic() + STOP_SECONDS
    while True:
        try:
            pods = await client.get(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": selector})
        except ApiStatusError as exc:
            raise RemovalError(f"list the pods of deployment {namespace}/{name}: {exc}") from None
        left = [item["metadata"]["name"] for item in pods.get("items", []) if _owned_by(item, name)]
        if not left:
            log.info(
                "the pods of the deployment have ended", extra={"deployment": ObjectRef(name, namespace)}
            )
            return
        if time.monotonic() > deadline:
            raise RemovalError(
                f"pods of deployment {namespace}/{name} still there after {STOP_SECONDS:.0f} s: "
                + ", ".join(left)
            )
        await asyncio.sleep(POLL_SECONDS)


def _owned_by(pod: dict[str, object], deployment: str) -> bool:
    """Whether a ReplicaSet of `deployment` (named `<deployment>-<hash>`) owns the pod: pods
    of the same labels that are not the Deployment's (a `helm test` pod) do not count."""
    meta = pod.get("metadata")
    owners = meta.get("ownerReferences", []) if isinstance(meta, dict) else []
    return any(
        owner.get("kind") == "ReplicaSet" and str(owner.get("name", "")).startswith(f"{deployment}-")
        for owner in owners
    )


async def _delete_node(client: KubeClient, node: str) -> None:
    try:
        await client.delete(f"/api/v1/nodes/{node}")
    except ApiStatusError as exc:
        if exc.status != 404:
            raise RemovalError(f"delete node {node}: {exc}") from None
        log.info("node is gone already", extra={"node": node})
        return
    log.info("deleted node", extra={"node": node})
