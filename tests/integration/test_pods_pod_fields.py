"""Pod-level fields on real Docker through the API, as the containers see them: the kubelet-managed
/etc/hosts (hostname, subdomain, hostAliases), setHostnameAsFQDN and its 64-character limit,
shareProcessNamespace, the service environment variables and terminationMessagePolicy
FallbackToLogsOnError."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.support.etc_hosts import MANAGED_HOSTS_PREAMBLE
from tests.support.manifests import sh
from tests.support.planes import Plane
from tests.support.pod_status import container_status, phase
from tests.support.polling import eventually
from tests.support.provider_harness import NAMESPACE, ProviderHarness, harness_allowing

pytestmark = pytest.mark.docker


async def terminated_message(harness: ProviderHarness, name: str, container: str = "main") -> str:
    def done(pod: dict[str, Any]) -> bool:
        state = (container_status(pod, container) or {}).get("state") or {}
        return "terminated" in state

    pod = await harness.wait_for(name, done)
    return str(container_status(pod, container)["state"]["terminated"].get("message", ""))


async def test_managed_etc_hosts_fqdn_hostname_and_shared_process_namespace(harness: ProviderHarness) -> None:
    script = (
        "until ps | grep -q '[s]leep 3601'; do sleep 0.1; done; "
        '{ cat /etc/hosts; echo "HOSTNAME=$(hostname)"; echo "PID1=$(tr "\\0" " " < /proc/1/cmdline)"; '
        "} > /dev/termination-log"
    )
    manifest = harness.manifest(
        "fields",
        [sh("main", script), sh("sidecar", "exec sleep 3601")],
        restartPolicy="Never",
        hostname="h1",
        subdomain="sub",
        setHostnameAsFQDN=True,
        shareProcessNamespace=True,
        hostAliases=[
            {"ip": "10.1.2.3", "hostnames": ["foo.local", "bar.local"]},
            {"ip": "10.9.9.9", "hostnames": ["z.local"]},
        ],
        terminationGracePeriodSeconds=1,
    )
    await harness.create(manifest)
    message = await terminated_message(harness, "fields")
    pod = await harness.get("fields")
    assert pod is not None
    ip = pod["status"]["podIP"]
    fqdn = f"h1.sub.{NAMESPACE}.svc.cluster.local"
    hosts, _, rest = message.partition("HOSTNAME=")
    assert hosts == (
        MANAGED_HOSTS_PREAMBLE + f"{ip}\t{fqdn}\th1\n"
        "\n"
        "# Entries added by HostAliases.\n"
        "10.1.2.3\tfoo.local\tbar.local\n"
        "10.9.9.9\tz.local\n"
    )
    hostname, _, pid1 = rest.partition("\nPID1=")
    assert hostname == fqdn
    assert "/pause" in pid1  # the sandbox is PID 1 of the shared namespace


async def test_too_long_fqdn_fails_the_sandbox_with_the_kubelets_event(harness: ProviderHarness) -> None:
    hostname = "h" * 40
    manifest = harness.manifest(
        "longfqdn", [sh("main", "sleep 1")], hostname=hostname, subdomain="sub", setHostnameAsFQDN=True
    )
    await harness.create(manifest)
    event = await harness.wait_event("longfqdn", "FailedCreatePodSandBox")
    fqdn = f"{hostname}.sub.{NAMESPACE}.svc.cluster.local"
    assert event["message"] == (
        "Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, "
        f"FQDN {fqdn} is too long (64 characters is the max, {len(fqdn)} characters requested)"
    )
    pod = await harness.get("longfqdn")
    assert pod is not None and phase(pod) == "Pending"


async def test_a_sandbox_the_engine_cannot_start_is_retried_on_its_timer_not_on_its_own_events(
    harness: ProviderHarness,
) -> None:
    """The hostPort is held by a process of the host, so the engine cannot start the sandbox.
    The attempt's own engine events (its container created, then removed) must not start the
    next one: the kubelet retries a failed sync after about 10 s, not ten times a second."""
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = {"containerPort": 8080, "hostPort": taken.getsockname()[1]}
        main = {**sh("main", "sleep 3600"), "ports": [port]}
        await harness.create(harness.manifest("portbusy", [main]))
        await harness.wait_event("portbusy", "FailedCreatePodSandBox")
        await asyncio.sleep(6)
        events = [e for e in await harness.events("portbusy") if e["reason"] == "FailedCreatePodSandBox"]
        attempts = sum(int(e.get("count") or 1) for e in events)
    assert 1 <= attempts <= 2, events


async def test_service_env_vars_reach_a_later_pod_and_enable_service_links_hides_them(
    harness: ProviderHarness,
) -> None:
    svc = await harness.create_object(
        "services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web-svc"},
            "spec": {"ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]},
        },
    )
    ip = svc["spec"]["clusterIP"]
    kubernetes = await harness.api.get("/api/v1/namespaces/default/services/kubernetes")
    api_ip, api_port = kubernetes["spec"]["clusterIP"], kubernetes["spec"]["ports"][0]["port"]
    # The provider's service informer sees it (the kubelet's race between a service and a pod).
    provider = harness.provider
    assert provider is not None and provider.services is not None
    services = provider.services
    await eventually(lambda: any(s["metadata"]["name"] == "web-svc" for s in services.services()))

    script = "env | grep -E '^(WEB_SVC|KUBERNETES)_' | sort > /dev/termination-log"
    await harness.create(harness.manifest("linked", [sh("main", script)], restartPolicy="Never"))
    await harness.create(
        harness.manifest("unlinked", [sh("main", script)], restartPolicy="Never", enableServiceLinks=False)
    )
    linked = dict(line.split("=", 1) for line in (await terminated_message(harness, "linked")).splitlines())
    assert {k: v for k, v in linked.items() if k.startswith("WEB_SVC_")} == {
        "WEB_SVC_SERVICE_HOST": ip,
        "WEB_SVC_SERVICE_PORT": "8080",
        "WEB_SVC_SERVICE_PORT_HTTP": "8080",
        "WEB_SVC_PORT": f"tcp://{ip}:8080",
        "WEB_SVC_PORT_8080_TCP": f"tcp://{ip}:8080",
        "WEB_SVC_PORT_8080_TCP_PROTO": "tcp",
        "WEB_SVC_PORT_8080_TCP_PORT": "8080",
        "WEB_SVC_PORT_8080_TCP_ADDR": ip,
    }
    assert linked["KUBERNETES_SERVICE_HOST"] == api_ip
    assert linked["KUBERNETES_SERVICE_PORT"] == str(api_port)
    assert linked["KUBERNETES_PORT"] == f"tcp://{api_ip}:{api_port}"
    unlinked = dict(
        line.split("=", 1) for line in (await terminated_message(harness, "unlinked")).splitlines()
    )
    assert not any(k.startswith("WEB_SVC_") for k in unlinked)
    assert unlinked["KUBERNETES_SERVICE_HOST"] == api_ip


async def test_fallback_to_logs_on_error_shows_the_log_tail_as_the_message(harness: ProviderHarness) -> None:
    script = "for i in $(seq 1 100); do echo line-$i; done; exit 3"
    failing = sh("main", script, terminationMessagePolicy="FallbackToLogsOnError")
    await harness.create(harness.manifest("fallback", [failing], restartPolicy="Never"))
    message = await terminated_message(harness, "fallback")
    assert message.splitlines() == [f"line-{i}" for i in range(21, 101)]  # the last 80 lines

    succeeding = sh("main", "echo only-in-the-log", terminationMessagePolicy="FallbackToLogsOnError")
    await harness.create(harness.manifest("fallback-ok", [succeeding], restartPolicy="Never"))
    assert await terminated_message(harness, "fallback-ok") == ""  # not on success


async def test_observed_generation_follows_spec_updates(harness: ProviderHarness) -> None:
    """status.observedGeneration and the kubelet's conditions report the pod generation the
    node has acted on, and a spec update that changes nothing else is reported too (the
    upstream "Pod Generation" conformance spec waits 20 s for it)."""
    name = "generation"
    await harness.create(harness.manifest(name, [sh("main", "exec sleep 3600")], activeDeadlineSeconds=5000))

    def observed(generation: int) -> Any:
        def check(pod: dict[str, Any]) -> bool:
            status = pod.get("status") or {}
            conditions = {c["type"]: c.get("observedGeneration") for c in status.get("conditions") or []}
            kubelet_owned = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
            return (
                phase(pod) == "Running"
                and status.get("observedGeneration") == generation
                and all(conditions.get(t) == generation for t in kubelet_owned)
            )

        return check

    await harness.wait_for(name, observed(1))
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"
    patched = await harness.api.patch(path, {"spec": {"activeDeadlineSeconds": 4000}})
    assert patched["metadata"]["generation"] == 2
    await harness.wait_for(name, observed(2), within=20)
    toleration = {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}
    patched = await harness.api.patch(path, {"spec": {"tolerations": [toleration]}})
    assert patched["metadata"]["generation"] == 3
    await harness.wait_for(name, observed(3), within=20)


HostNetworkHarness = harness_allowing(host_network=True)  # `docker.allow.hostNetwork: true`


async def test_a_host_network_pod_gets_the_nodes_hosts_file_aliases_and_ip(
    node_name: str, tmp_path: Path, plane: Plane
) -> None:
    """nodeHostsFileContent (the upstream "should write entries to /etc/hosts when hostNetwork
    is enabled" spec): this host's /etc/hosts after the kubelet's header, then the aliases."""
    async with HostNetworkHarness.running(node_name, tmp_path / "h", plane=plane) as harness:
        manifest = harness.manifest(
            "hostnet",
            [
                sh(
                    "main",
                    'cat /etc/hosts > /dev/termination-log; [ "${POD_IP:?}" = "${HOST_IP:?}" ]',
                    env=[
                        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                    ],
                )
            ],
            restartPolicy="Never",
            hostNetwork=True,
            hostAliases=[{"ip": "123.45.67.89", "hostnames": ["foo", "bar"]}],
        )
        await harness.create(manifest)
        written = await terminated_message(harness, "hostnet", "main")
        # status.podIP is the node's IP in the downward API too (the upstream "host IP and pod
        # IP as an env var if pod uses host network" spec).
        pod = await harness.get("hostnet")
        assert pod is not None
        assert container_status(pod, "main")["state"]["terminated"]["exitCode"] == 0
    expected = await asyncio.to_thread(Path("/etc/hosts").read_text)
    assert written == (
        "# Kubernetes-managed hosts file (host network).\n"
        + expected
        + "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n"
    )
