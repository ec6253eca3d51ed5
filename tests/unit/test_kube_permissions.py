"""A missing permission is reported once, with the verb and resource, as a log line and a Node event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from vk_provider.kube.permissions import REPEAT_SECONDS, PermissionReporter, request_attributes


@pytest.mark.parametrize(
    ("method", "path", "params", "wanted"),
    [
        ("PATCH", "/api/v1/namespaces/default/pods/p/status", None, ("patch", "pods/status")),
        ("DELETE", "/api/v1/namespaces/default/pods/p", None, ("delete", "pods")),
        ("GET", "/api/v1/pods", {"fieldSelector": "spec.nodeName=n"}, ("list", "pods")),
        ("GET", "/api/v1/pods", {"watch": True}, ("watch", "pods")),
        ("GET", "/api/v1/namespaces/ns/secrets/s", None, ("get", "secrets")),
        (
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n",
            None,
            ("update", "leases.coordination.k8s.io"),
        ),
        (
            "POST",
            "/api/v1/namespaces/ns/serviceaccounts/default/token",
            None,
            ("create", "serviceaccounts/token"),
        ),
        ("PATCH", "/api/v1/nodes/n/status", None, ("patch", "nodes/status")),
        (
            "GET",
            "/apis/certificates.k8s.io/v1/clustertrustbundles",
            {"fieldSelector": "spec.signerName=example.com/s"},
            ("list", "clustertrustbundles.certificates.k8s.io"),
        ),
        ("POST", "/api/v1/nodes", None, ("create", "nodes")),
        (
            "POST",
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            None,
            ("create", "certificatesigningrequests.certificates.k8s.io"),
        ),
    ],
)
def test_request_attributes(
    method: str, path: str, params: dict[str, Any] | None, wanted: tuple[str, str]
) -> None:
    assert request_attributes(method, path, params) == wanted


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Mapping[str, Any], str, str, str]] = []

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((obj, type_, reason, message))


def test_each_missing_permission_is_reported_once_then_again_after_a_while(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    recorder = Recorder()
    report = PermissionReporter(recorder, "docker-1", clock=lambda: now[0])
    path = "/api/v1/namespaces/default/pods/p/status"
    report("PATCH", path, None, 'pods "p" is forbidden')
    report("PATCH", path, None, 'pods "p" is forbidden')
    report("DELETE", "/api/v1/namespaces/default/pods/p", None, "forbidden")
    assert [(o["metadata"]["name"], t, r) for o, t, r, _ in recorder.events] == [
        ("docker-1", "Warning", "Forbidden"),
        ("docker-1", "Warning", "Forbidden"),
    ]
    assert recorder.events[0][3] == 'vk-provider may not patch pods/status: pods "p" is forbidden'
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 2 and (errors[0].verb, errors[0].resource) == ("patch", "pods/status")
    now[0] = REPEAT_SECONDS + 1
    report("PATCH", path, None, "forbidden")
    assert len(recorder.events) == 3
