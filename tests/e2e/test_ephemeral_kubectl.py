"""`kubectl debug` end to end: `vk-provider sandbox` as a subprocess, the real kubectl adding an
ephemeral container through pods/ephemeralcontainers, then its status and `kubectl logs -c`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.polling import until
from tests.support.sandbox_process import Sandbox, pod_manifest, running_sandbox

pytestmark = [pytest.mark.kubectl, pytest.mark.docker]


@pytest.fixture(scope="module")
def sandbox(
    tmp_path_factory: pytest.TempPathFactory,
    docker_client: Any,
    test_images: dict[str, str],
    control_plane: str,
) -> Iterator[Sandbox]:
    with running_sandbox(
        tmp_path_factory.mktemp("ephemeral-kubectl"), test_images["pause"], docker_client, control_plane
    ) as sb:
        yield sb


def _ephemeral_statuses(sandbox: Sandbox, pod: str) -> dict[str, Any]:
    got = json.loads(sandbox.kubectl("get", "pod", pod, "-o", "json").stdout)
    return {s["name"]: s for s in got["status"].get("ephemeralContainerStatuses") or []}


def test_kubectl_debug_runs_in_the_target_s_pid_namespace(sandbox: Sandbox) -> None:
    main = {"name": "c", "image": "vk-test/busybox:1", "command": ["sleep", "3600"]}
    sandbox.apply(pod_manifest("debuggee", sandbox.node, [main], terminationGracePeriodSeconds=1))
    sandbox.kubectl("wait", "--for=condition=Ready", "pod/debuggee", "--timeout=120s", timeout=150)
    # --profile=baseline: the default (general) adds SYS_PTRACE, which this node does not allow
    sandbox.kubectl(
        "debug", "debuggee", "-c", "dbg", "--image=vk-test/busybox:1", "--image-pull-policy=Never",
        "--target=c", "--profile=baseline", "--", "sh", "-c", "ps -o args; echo hi",
    )  # fmt: skip
    status = until(
        "dbg terminated",
        lambda: (
            (s := _ephemeral_statuses(sandbox, "debuggee").get("dbg")) and "terminated" in s["state"] and s
        ),
    )
    assert status["state"]["terminated"]["exitCode"] == 0 and status["ready"] is False
    logs = sandbox.kubectl("logs", "debuggee", "-c", "dbg").stdout
    assert "sleep 3600" in logs and logs.endswith("hi\n")
    described = sandbox.kubectl("describe", "pod", "debuggee").stdout
    assert "Ephemeral Containers:" in described and "dbg:" in described
