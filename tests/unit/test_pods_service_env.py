"""Service environment variables as the kubelet builds them (envvars.FromServices, getServiceEnvVarMap)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import manifests
from vk_provider.pods.env import PodAddresses, resolve_container_env
from vk_provider.pods.service_env import NOT_SYNCED_MESSAGE, from_services, pod_service_env, service_env
from vk_provider.runtime.types import ContainerConfigError


def service(ns: str, name: str, ip: str, *ports: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name}, "spec": {"clusterIP": ip, "ports": list(ports)}}


KUBERNETES = service("default", "kubernetes", "10.96.0.1", {"name": "https", "port": 443, "protocol": "TCP"})
WEB = service(
    "ns1",
    "my-web",
    "10.96.3.4",
    {"port": 80},
    {"name": "metrics", "port": 9090, "protocol": "UDP"},
)
OTHER_NS = service("ns2", "db", "10.96.5.5", {"port": 5432})
HEADLESS = service("ns1", "headless", "None", {"port": 80})


def pod(ns: str = "ns1", **spec: Any) -> dict[str, Any]:
    return manifests.pod("p", [], namespace=ns, uid="u", **spec)


def test_from_services_gives_the_kubelets_names_and_values() -> None:
    assert from_services([WEB]) == {
        "MY_WEB_SERVICE_HOST": "10.96.3.4",
        "MY_WEB_SERVICE_PORT": "80",
        "MY_WEB_SERVICE_PORT_METRICS": "9090",
        "MY_WEB_PORT": "tcp://10.96.3.4:80",
        "MY_WEB_PORT_80_TCP": "tcp://10.96.3.4:80",
        "MY_WEB_PORT_80_TCP_PROTO": "tcp",
        "MY_WEB_PORT_80_TCP_PORT": "80",
        "MY_WEB_PORT_80_TCP_ADDR": "10.96.3.4",
        "MY_WEB_PORT_9090_UDP": "udp://10.96.3.4:9090",
        "MY_WEB_PORT_9090_UDP_PROTO": "udp",
        "MY_WEB_PORT_9090_UDP_PORT": "9090",
        "MY_WEB_PORT_9090_UDP_ADDR": "10.96.3.4",
    }


def test_ipv6_cluster_ip_is_bracketed_like_join_host_port() -> None:
    env = from_services([service("ns1", "v6", "fd00::10", {"port": 80})])
    assert env["V6_PORT"] == "tcp://[fd00::10]:80"
    assert env["V6_SERVICE_HOST"] == "fd00::10"


def test_namespace_services_and_the_master_service_but_not_headless_or_other_namespaces() -> None:
    env = service_env(pod(), [KUBERNETES, WEB, OTHER_NS, HEADLESS])
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    assert env["KUBERNETES_SERVICE_PORT"] == "443"
    assert env["KUBERNETES_SERVICE_PORT_HTTPS"] == "443"
    assert env["KUBERNETES_PORT"] == "tcp://10.96.0.1:443"
    assert env["MY_WEB_SERVICE_HOST"] == "10.96.3.4"
    assert not any(k.startswith(("DB_", "HEADLESS_")) for k in env)


def test_enable_service_links_false_keeps_only_the_master_service() -> None:
    env = service_env(pod(enableServiceLinks=False), [KUBERNETES, WEB])
    assert env and all(k.startswith("KUBERNETES_") for k in env)


class Source:
    def __init__(self, synced: bool, services: list[dict[str, Any]]) -> None:
        self._synced, self._services = synced, services

    def synced(self) -> bool:
        return self._synced

    def services(self) -> list[dict[str, Any]]:
        return list(self._services)


def test_an_api_pod_waits_for_the_first_list_a_static_pod_does_not() -> None:
    with pytest.raises(ContainerConfigError, match=NOT_SYNCED_MESSAGE):
        pod_service_env(pod(), Source(False, []))
    static = pod()
    static["metadata"]["annotations"] = {"kubernetes.io/config.source": "file"}
    assert pod_service_env(static, Source(False, [])) == {}
    assert pod_service_env(pod(), None) == {}
    assert pod_service_env(pod(), Source(True, [KUBERNETES]))["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"


async def test_container_env_wins_and_can_reference_service_vars() -> None:
    async def getter(kind: str, namespace: str, name: str) -> None:
        return None

    container = {
        "name": "c",
        "env": [
            {"name": "MY_WEB_SERVICE_PORT", "value": "override"},
            {"name": "URL", "value": "http://$(MY_WEB_SERVICE_HOST):$(MY_WEB_SERVICE_PORT)"},
        ],
        "args": ["$(KUBERNETES_SERVICE_HOST)"],
    }
    got = await resolve_container_env(
        pod(),
        container,
        getter=getter,
        addresses=PodAddresses(),
        service_env=service_env(pod(), [KUBERNETES, WEB]),
    )
    env = dict(got.env)
    assert env["MY_WEB_SERVICE_PORT"] == "override"
    assert env["URL"] == "http://10.96.3.4:override"
    assert env["MY_WEB_SERVICE_HOST"] == "10.96.3.4"
    assert [k for k, _ in got.env][:2] == ["MY_WEB_SERVICE_PORT", "URL"]  # declared first, services after
    assert got.args == ("10.96.0.1",)
