"""Pure parts of the kubelet API: query rules, channel Status documents, stats arithmetic, TLS, PodList."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography import x509
from multidict import MultiDict

from vk_provider.config import KubeletServerConfig, KubeletTLS
from vk_provider.kubeletapi.channels import (
    dialect,
    error_status,
    exit_status,
    parse_resize,
    parse_stream_options,
)
from vk_provider.kubeletapi.csr import kubelet_serving_csr
from vk_provider.kubeletapi.logs import LogOptions, parse_log_options
from vk_provider.kubeletapi.lookup import BadRequest, NotFound, find_container
from vk_provider.kubeletapi.metrics import resource_metrics
from vk_provider.kubeletapi.pods import pod_list
from vk_provider.kubeletapi.server import parse_listen
from vk_provider.kubeletapi.stats import cpu_memory, summary_document
from vk_provider.kubeletapi.tls import KubeletTLSError, self_signed, server_ssl_context
from vk_provider.runtime.docker.stats import container_stats
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerRole,
    ContainerRunState,
    PodRuntimeState,
    PodSandboxState,
)


def test_log_options_follow_the_kubelet_rules() -> None:
    assert parse_log_options({}, now=1000.0) == LogOptions()
    opts = parse_log_options(
        {
            "follow": "true",
            "previous": "1",
            "timestamps": "T",
            "tailLines": "0",
            "limitBytes": "5",
            "sinceSeconds": "10",
        },
        now=1000.0,
    )
    assert opts == LogOptions(follow=True, previous=True, timestamps=True, tail=0, limit_bytes=5, since=990.0)
    assert (
        parse_log_options({"sinceTime": "2024-01-02T03:04:05Z"}, now=0).since
        == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()
    )
    for bad in (
        {"tailLines": "-1"},
        {"limitBytes": "0"},
        {"sinceSeconds": "0"},
        {"follow": "yes"},
        {"sinceTime": "yesterday"},
        {"sinceTime": "2024-01-02T03:04:05Z", "sinceSeconds": "3"},
    ):
        with pytest.raises(BadRequest):
            parse_log_options(bad, now=0)


def test_stream_options_accept_kubelet_and_api_names() -> None:
    q = MultiDict(
        [("command", "sh"), ("command", "-c"), ("command", "echo hi"), ("input", "1"), ("output", "1")]
    )
    opts = parse_stream_options(q, needs_command=True)
    assert opts.command == ("sh", "-c", "echo hi") and opts.stdin and opts.stdout and not opts.stderr
    assert parse_stream_options(MultiDict(stdout="true"), needs_command=False).stdout
    with pytest.raises(BadRequest, match="at least 1"):
        parse_stream_options(MultiDict(command="ls"), needs_command=True)
    with pytest.raises(BadRequest, match="tty"):
        parse_stream_options(MultiDict(command="ls", tty="1", output="1", error="1"), needs_command=True)
    with pytest.raises(BadRequest, match="command"):
        parse_stream_options(MultiDict(output="1"), needs_command=True)


def test_exit_statuses_are_what_kubectl_reads() -> None:
    assert exit_status(0, ("true",)) == {"metadata": {}, "status": "Success"}
    failed = exit_status(2, ("sh", "-c", "exit 2"))
    assert failed["reason"] == "NonZeroExitCode"
    assert failed["details"] == {"causes": [{"reason": "ExitCode", "message": "2"}]}
    assert failed["message"].startswith("command terminated with non-zero exit code: ")
    assert error_status("boom")["status"] == "Failure" and "ExitCode" not in str(error_status("boom"))
    v4, v1 = dialect("v4.channel.k8s.io"), dialect("channel.k8s.io")
    assert v4.status({"status": "Success"}) == b'\x03{"status":"Success"}'
    assert v1.status({"status": "Success"}) is None
    assert v1.status(exit_status(2, ("false",))) == b"\x03" + exit_status(2, ("false",))["message"].encode()
    assert dialect("base64.channel.k8s.io").encode(1, b"hi") == "1aGk="
    assert dialect("v4.base64.channel.k8s.io").decode("0aGk=") == (0, b"hi")
    assert dialect("base64.channel.k8s.io").decode("0!!") is None
    assert dialect("channel.k8s.io").decode("0aGk=") is None and dialect(None) == dialect("")
    assert dialect(None).decode(b"\x00hi") == (0, b"hi") and not dialect(None).close_channel
    assert parse_resize(b'{"Width":80,"Height":24}') == (80, 24)
    assert parse_resize(b"nonsense") is None and parse_resize(b'{"Width":0,"Height":2}') is None


def _inst(
    name: str, attempt: int, state: ContainerRunState, role: ContainerRole = ContainerRole.APP
) -> ContainerInstance:
    return ContainerInstance(name, role, attempt, f"id-{name}-{attempt}", "busybox", "sha256:x", state)


def test_find_container_latest_previous_and_errors() -> None:
    pod = PodRuntimeState(
        "u1",
        "default",
        "web",
        PodSandboxState("sb", True, "172.17.0.9"),
        (
            _inst("app", 0, ContainerRunState.EXITED),
            _inst("app", 1, ContainerRunState.RUNNING),
            _inst("init", 0, ContainerRunState.EXITED, ContainerRole.INIT),
        ),
    )
    assert find_container(pod, "app").attempt == 1
    assert find_container(pod, "app", previous=True).attempt == 0
    assert find_container(pod, "init").role == ContainerRole.INIT
    with pytest.raises(BadRequest, match='previous terminated container "init"'):
        find_container(pod, "init", previous=True)
    with pytest.raises(NotFound, match='container "x" not found in pod "web"'):
        find_container(pod, "x")
    listed = pod_list({"u1": pod}, "node-a")
    [item] = listed["items"]
    assert item["metadata"] == {"name": "web", "namespace": "default", "uid": "u1"}
    assert item["status"]["podIP"] == "172.17.0.9"
    assert [(s["name"], s["restartCount"], s["ready"]) for s in item["status"]["containerStatuses"]] == [
        ("app", 1, True)
    ]


def test_cpu_rate_and_working_set() -> None:
    raw = {
        "cpu_stats": {"cpu_usage": {"total_usage": 3_000_000_000}},
        "memory_stats": {"usage": 10_000, "stats": {"inactive_file": 4_000, "anon": 5_000}},
    }
    cpu, mem = cpu_memory(container_stats(raw), None, now=10.0)
    assert cpu == {"usageCoreNanoSeconds": 3_000_000_000}
    assert mem == {"usageBytes": 10_000, "workingSetBytes": 6_000, "rssBytes": 5_000}
    cpu, _ = cpu_memory(container_stats(raw), (8.0, 2_000_000_000), now=10.0)
    assert cpu["usageNanoCores"] == 500_000_000  # 1 s of CPU over 2 s
    v1 = {"memory_stats": {"usage": 100, "stats": {"total_inactive_file": 30}}}
    assert cpu_memory(container_stats(v1), None, 1.0)[1]["workingSetBytes"] == 70


def test_summary_node_is_the_sum_of_pods() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    containers = [
        {
            "name": n,
            "cpu": {"usageNanoCores": c, "usageCoreNanoSeconds": c},
            "memory": {"workingSetBytes": m, "usageBytes": m},
        }
        for n, c, m in (("a", 10, 100), ("b", 5, 50))
    ]
    doc = summary_document("n1", now, now, [{"podRef": {"name": "p"}, "containers": containers}])
    assert doc["node"]["cpu"] == {
        "time": "2026-01-01T00:00:00Z",
        "usageNanoCores": 15,
        "usageCoreNanoSeconds": 15,
    }
    assert doc["node"]["memory"]["workingSetBytes"] == 150 and "rssBytes" not in doc["node"]["memory"]
    assert doc["pods"][0]["memory"]["usageBytes"] == 150


def test_self_signed_certificate_names_the_node(tmp_path: Path) -> None:
    cert_pem, key_pem = self_signed("node-a", "10.1.2.3")
    cert = x509.load_pem_x509_certificate(cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["node-a"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.1.2.3")]
    assert b"PRIVATE KEY" in key_pem
    assert self_signed("node-b", "not-an-ip")[0]  # the name alone
    server_ssl_context(KubeletServerConfig(auth="none"), "node-a", "10.1.2.3", tmp_path)
    # csr serves a self-signed certificate until the cluster's arrives
    server_ssl_context(KubeletServerConfig(tls=KubeletTLS(mode="csr")), "node-a", "10.1.2.3", tmp_path)
    key_pem, csr_pem = kubelet_serving_csr("node-a", "10.1.2.3")
    csr = x509.load_pem_x509_csr(csr_pem)
    assert csr.subject.rfc4514_string() == "CN=system:node:node-a,O=system:nodes"
    csr_sans = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert csr_sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.1.2.3")]
    assert b"PRIVATE KEY" in key_pem
    for bad in (
        KubeletServerConfig(auth="x509"),  # no CA
        KubeletServerConfig(auth="magic"),
        KubeletServerConfig(tls=KubeletTLS(mode="magic")),
        KubeletServerConfig(tls=KubeletTLS(mode="files")),
        KubeletServerConfig(tls=KubeletTLS(mode="files", cert_file=str(tmp_path / "no.crt"), key_file="x")),
    ):
        with pytest.raises(KubeletTLSError):
            server_ssl_context(bad, "node-a", "10.1.2.3", tmp_path)


def test_parse_listen() -> None:
    assert parse_listen("0.0.0.0:10250") == ("0.0.0.0", 10250)
    assert parse_listen(":10250") == ("0.0.0.0", 10250)
    assert parse_listen("[::1]:8443") == ("::1", 8443)
    with pytest.raises(ValueError):
        parse_listen("10250")


def test_resource_metrics_have_the_series_metrics_server_reads() -> None:
    stamp = "2026-01-01T00:00:00Z"
    summary = {
        "node": {
            "cpu": {"time": stamp, "usageCoreNanoSeconds": 2_500_000_000},
            "memory": {"time": stamp, "workingSetBytes": 300},
        },
        "pods": [
            {
                "podRef": {"name": "web", "namespace": "default", "uid": "u"},
                "cpu": {"time": stamp, "usageCoreNanoSeconds": 2_500_000_000},
                "memory": {"time": stamp, "workingSetBytes": 300},
                "containers": [
                    {
                        "name": "app",
                        "startTime": "2025-12-31T23:00:00Z",
                        "cpu": {"time": stamp, "usageCoreNanoSeconds": 2_500_000_000},
                        "memory": {"time": stamp, "workingSetBytes": 300},
                    }
                ],
            }
        ],
    }
    text = resource_metrics(summary)
    ms = 1767225600000
    assert f"node_cpu_usage_seconds_total 2.5 {ms}" in text
    assert f"node_memory_working_set_bytes 300 {ms}" in text
    assert f'pod_memory_working_set_bytes{{namespace="default",pod="web"}} 300 {ms}' in text
    assert (
        f'container_cpu_usage_seconds_total{{container="app",namespace="default",pod="web"}} 2.5 {ms}' in text
    )
    assert (
        'container_start_time_seconds{container="app",namespace="default",pod="web"} 1.76722e+09' not in text
    )
    assert (
        f'container_start_time_seconds{{container="app",namespace="default",pod="web"}} 1767222000 {ms}'
        in text
    )
    assert "# TYPE container_cpu_usage_seconds_total counter" in text
    assert text.endswith("scrape_error 0\n")
