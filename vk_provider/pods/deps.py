"""The parts a pod sync is built from, in one object.

What lives here: `SyncDeps`, what the pod sync (`pods/sync.py`) and the steps it calls (images,
resize) are built from: the runtime, the status and Event sinks, the probe manager,
the crash-loop / image backoff, the object getter, the node's addresses, allocatable
and Node object, the TokenRequest poster, the services (for the service environment
variables), the RuntimeClasses' handlers, the node's DNS settings, the Docker allowances pods
are admitted against and the metrics image pulls are counted in. PodWorkers builds it once.
Must not: act on anything; it only holds the parts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vk_provider.config import DockerConfig
from vk_provider.kuberuntime.dns import NO_CLUSTER_DNS, NodeDNS
from vk_provider.metrics import ProviderMetrics
from vk_provider.pods.backoff import Backoff
from vk_provider.pods.env import ObjectGetter
from vk_provider.pods.pod_certificates import PodCertificateApi
from vk_provider.pods.service_env import ServiceSource
from vk_provider.pods.volume_writer import TokenRequester, TrustBundleLister
from vk_provider.pods.work import EventSink, StatusSink
from vk_provider.probes.manager import ProbeManager
from vk_provider.runtime.protocol import Runtime


@dataclass(frozen=True)
class SyncDeps:
    """`request_token` posts a TokenRequest, for projected service account token volumes."""

    runtime: Runtime
    status: StatusSink
    recorder: EventSink
    probes: ProbeManager
    backoff: Backoff
    getter: ObjectGetter
    host_ip: Callable[[], str]
    node_allocatable: Callable[[], Mapping[str, str]]
    request_token: TokenRequester | None = None
    trust_bundles: TrustBundleLister | None = None  # clusterTrustBundle projections
    pod_certificate_api: PodCertificateApi | None = None  # podCertificate projections
    services: ServiceSource | None = None  # None: no service environment variables
    # A RuntimeClass name -> its handler (raises RuntimeClassNotFound); None: every pod runs
    # under the default handler.
    runtime_classes: Callable[[str], str] | None = None
    node_object: Callable[[], Mapping[str, Any]] = dict  # the Node as last seen, for admission
    active_pods: Callable[[], Sequence[Mapping[str, Any]]] = tuple  # admitted and not terminated
    dns: NodeDNS = NO_CLUSTER_DNS  # clusterDNS, clusterDomain, resolvConf
    # The allowances (docker.allow) and the Localhost seccomp profiles' root pods are admitted
    # and compiled against (kuberuntime).
    docker: DockerConfig = field(default_factory=DockerConfig)
    metrics: ProviderMetrics | None = None  # image pulls are counted here
