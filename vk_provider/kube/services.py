"""The Services of the cluster, followed by a reflector (the kubelet's service informer).

What lives here: `ServiceLister`, a `Reflector` over `/api/v1/services` in every namespace
whose view the pod workers read for the containers' service environment variables
(pods/service_env.py). Must not: interpret the services (the variables are built elsewhere)
or write anything.

Upstream: pkg/kubelet/kubelet.go (serviceLister, serviceHasSynced).
"""

from __future__ import annotations

from typing import Any

from vk_provider.kube.client import KubeClient
from vk_provider.kube.reflector import Reflector

SERVICES_PATH = "/api/v1/services"


class ServiceLister:
    def __init__(self, client: KubeClient) -> None:
        self._reflector = Reflector(client, SERVICES_PATH, self._ignore, name="services")

    @staticmethod
    async def _ignore(_type: str, _obj: dict[str, Any]) -> None:
        return None  # only the store is read

    async def start(self) -> None:
        await self._reflector.start()

    async def stop(self) -> None:
        await self._reflector.stop()

    def synced(self) -> bool:
        return self._reflector.synced.is_set()

    def services(self) -> list[dict[str, Any]]:
        return list(self._reflector.store().values())
