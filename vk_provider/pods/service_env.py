"""Service environment variables, as the kubelet gives every container (pure).

What lives here: `service_env(pod, services)`, the `<SVC>_SERVICE_HOST` / `_SERVICE_PORT` /
docker-link `<SVC>_PORT_<port>_<PROTO>...` variables of the services of the pod's namespace
(when spec.enableServiceLinks, the default) and always of the `kubernetes` service of the
`default` namespace; `pod_service_env(pod, source)` over a `ServiceSource` (what the services are read from),
with the kubelet's error while they were never listed.
Must not: talk to the apiserver (the source is a reflector's view) or decide the order of the
container's own variables (pods/env.py merges them).

Upstream: pkg/kubelet/kubelet_pods.go (getServiceEnvVarMap, makeEnvironmentVariables),
pkg/kubelet/envvars/envvars.go (FromServices, makeLinkVariables).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from vk_common.objects import is_static, meta, spec
from vk_provider.runtime.types import ContainerConfigError

# kubelet_pods.go masterServices: their variables reach every pod, whatever its links setting.
MASTER_SERVICES = frozenset({"kubernetes"})
MASTER_NAMESPACE = "default"
NOT_SYNCED_MESSAGE = "services have not yet been read at least once, cannot construct envvars"


class ServiceSource(Protocol):
    def synced(self) -> bool:
        """Whether the services were listed at least once."""
        ...

    def services(self) -> list[dict[str, Any]]:
        """Every Service of every namespace, as last seen."""
        ...


def _ip_set(service: Mapping[str, Any]) -> bool:
    """pkg/apis/core/v1/helper IsServiceIPSet: a cluster IP that is neither empty nor None."""
    ip = str(spec(service).get("clusterIP") or "")
    return ip not in ("", "None")


def _var_name(name: str) -> str:
    return name.replace("-", "_").upper()


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"  # net.JoinHostPort


def from_services(services: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """envvars.FromServices over services that have a cluster IP."""
    out: dict[str, str] = {}
    for service in services:
        if not _ip_set(service):
            continue
        prefix = _var_name(str(meta(service).get("name", "")))
        ip = str(spec(service)["clusterIP"])
        ports = list(spec(service).get("ports") or [])
        if not ports:
            continue  # validation requires a port of a service with a cluster IP
        out[f"{prefix}_SERVICE_HOST"] = ip
        out[f"{prefix}_SERVICE_PORT"] = str(int(ports[0]["port"]))
        for port in ports:
            if port.get("name"):
                out[f"{prefix}_SERVICE_PORT_{_var_name(str(port['name']))}"] = str(int(port["port"]))
        for index, port in enumerate(ports):
            number = int(port["port"])
            protocol = str(port.get("protocol") or "TCP")
            url = f"{protocol.lower()}://{_host_port(ip, number)}"
            if index == 0:
                out[f"{prefix}_PORT"] = url
            port_prefix = f"{prefix}_PORT_{number}_{protocol.upper()}"
            out[port_prefix] = url
            out[f"{port_prefix}_PROTO"] = protocol.lower()
            out[f"{port_prefix}_PORT"] = str(number)
            out[f"{port_prefix}_ADDR"] = ip
    return out


def service_env(pod: Mapping[str, Any], services: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """getServiceEnvVarMap: the master services always, the namespace's own with enableServiceLinks."""
    namespace = str(meta(pod).get("namespace") or "")
    links = spec(pod).get("enableServiceLinks") is not False  # the API defaults it to true
    chosen: dict[str, Mapping[str, Any]] = {}
    for service in services:
        if not _ip_set(service):
            continue
        name = str(meta(service).get("name", ""))
        ns = meta(service).get("namespace")
        if ns == MASTER_NAMESPACE and name in MASTER_SERVICES:
            chosen.setdefault(name, service)
        elif ns == namespace and links:
            chosen[name] = service
    return from_services(chosen.values())


def pod_service_env(pod: Mapping[str, Any], source: ServiceSource | None) -> dict[str, str]:
    """The service variables of `pod` from `source` (none without one, as a kubelet without an
    apiserver). An API pod waits for the first list of services, so it never starts without
    KUBERNETES_SERVICE_HOST; a static pod need not (it runs without the API).
    Raises ContainerConfigError with the kubelet's message."""
    if source is None:
        return {}
    if not is_static(pod) and not source.synced():
        raise ContainerConfigError(NOT_SYNCED_MESSAGE)
    return service_env(pod, source.services())
