"""The Services of the cluster, followed by a reflector (the kubelet's service informer).

What lives here: `ServiceLister`, a `StoreLister` over `/api/v1/services` in every namespace
whose view the pod workers read for the containers' service environment variables
(pods/service_env.py). Must not: interpret the services (the variables are built elsewhere)
or write anything.

Upstream: pkg/kubelet/kubelet.go (serviceLister, serviceHasSynced).
"""

from __future__ import annotations

from typing import Any

from vk_provider.kube.client import KubeClient
from vk_provider.kube.store_lister import StoreLister

SERVICES_PATH = "/api/v1/services"


class ServiceLister(StoreLister):
    def __init__(self, client: KubeClient) -> None:
        super().__init__(client, SERVICES_PATH, "services")

    def services(self) -> list[dict[str, Any]]:
        return self.items()
