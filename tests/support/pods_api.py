"""A fake apiserver for the pod sources: the node's pods listed once, then one deletion.

`pod(uid, **annotations)` builds a minimal pod; `ListOnlyClient` answers the pods list with
`a`, the mirror pod `m` and `b` (recording each list's parameters), and its watch sends the
deletion of `b` and then stays open.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

MIRROR = {"kubernetes.io/config.mirror": "hash"}


def pod(uid: str, **annotations: str) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "name": uid, "namespace": "d", "annotations": annotations}, "spec": {}}


class ListOnlyClient:
    """Answers the list with fixed pods; the watch sends one deletion and then stays open."""

    def __init__(self) -> None:
        self.params: list[Mapping[str, Any] | None] = []

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        self.params.append(params)
        items = [pod("a"), pod("m", **MIRROR), pod("b")]
        return {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"}, "items": items}

    async def watch(
        self, path: str, params: Mapping[str, Any] | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        yield {
            "type": "DELETED",
            "object": {**pod("b"), "metadata": {**pod("b")["metadata"], "resourceVersion": "6"}},
        }
        await asyncio.Event().wait()
