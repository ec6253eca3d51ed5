"""Pods on real Docker driven through the sandbox API, as a user would: the issue 5 "Must show" list.

Each test runs the sandbox control plane and the provider in-process for a unique node
(tests/support/provider_harness.py); containers carry that node's label and are
removed by the `node_name` fixture.
"""

from __future__ import annotations

import time
from typing import Any

import aiohttp
import pytest

from tests.support.containers import labelled
from tests.support.images import BUSYBOX_IMAGE
from tests.support.manifests import sh
from tests.support.pod_status import condition, container_status, phase, waiting_reason
from tests.support.polling import eventually
from tests.support.provider_harness import ProviderHarness

pytestmark = pytest.mark.docker
HTTPD = ["httpd", "-f", "-p", "8080", "-h", "/var/www"]
POLITE = "trap 'sleep 1; exit 0' TERM; while true; do sleep 0.2; done"


async def test_init_then_two_app_containers_share_localhost_and_serve_on_the_pod_ip(
    harness: ProviderHarness, docker_client: Any
) -> None:
    await harness.create(
        harness.manifest(
            "web",
            [
                sh("loop", "while true; do wget -qO- http://localhost:8080/ && echo reached; sleep 1; done"),
                {
                    "name": "httpd",
                    "image": BUSYBOX_IMAGE,
                    "command": ["httpd", "-f", "-p", "8080", "-h", "/var/www"],
                },
            ],
            initContainers=[sh("init", "sleep 3")],
        )
    )
    pending = await harness.wait_for(
        "web", lambda p: phase(p) == "Pending" and waiting_reason(p, "httpd") == "PodInitializing"
    )
    assert condition(pending, "Initialized")["status"] == "False"
    running = await harness.wait_for(
        "web",
        lambda p: (
            phase(p) == "Running"
            and container_status(p, "loop").get("ready") is True
            and container_status(p, "httpd").get("ready") is True
        ),
    )
    assert condition(running, "Ready")["status"] == "True"
    assert container_status(running, "init")["state"]["terminated"]["reason"] == "Completed"
    pod_ip = running["status"]["podIP"]
    async with aiohttp.ClientSession() as session, session.get(f"http://{pod_ip}:8080/") as answer:
        assert answer.status == 200
        assert "hello" in await answer.text()
    loop_id = container_status(running, "loop")["containerID"].removeprefix("docker://")
    logs = b""

    def reached() -> bool:
        nonlocal logs
        logs = docker_client.containers.get(loop_id).logs()
        return b"reached" in logs

    await eventually(reached, within=30, interval=0.5, what=lambda: f"'reached' in the loop's log ({logs!r})")
    assert b"reached" in logs, logs


async def test_never_exit_1_fails_and_on_failure_exit_0_succeeds(harness: ProviderHarness) -> None:
    await harness.create(harness.manifest("fails", [sh("main", "exit 1")], restartPolicy="Never"))
    await harness.create(harness.manifest("works", [sh("main", "exit 0")], restartPolicy="OnFailure"))
    failed = await harness.wait_for("fails", lambda p: phase(p) == "Failed")
    terminated = container_status(failed, "main")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (1, "Error")
    assert container_status(failed, "main")["restartCount"] == 0
    succeeded = await harness.wait_for("works", lambda p: phase(p) == "Succeeded")
    assert container_status(succeeded, "main")["state"]["terminated"]["reason"] == "Completed"


async def test_delete_is_done_as_soon_as_containers_stop_and_sigkill_after_grace(
    harness: ProviderHarness,
) -> None:
    await harness.create(
        harness.manifest(
            "polite", [sh("main", "trap 'sleep 1; exit 0' TERM; while true; do sleep 0.2; done")]
        )
    )
    await harness.create(
        harness.manifest(
            "stubborn",
            [sh("main", "trap '' TERM; while true; do sleep 0.2; done")],
            terminationGracePeriodSeconds=3,
        )
    )
    for name in ("polite", "stubborn"):
        await harness.wait_for(name, lambda p: phase(p) == "Running")
    began = time.monotonic()
    await harness.delete("polite")  # default grace: 30 s
    gone = await harness.wait_gone("polite", within=25)
    assert gone - began < 25  # well before the 30 s grace period
    began = time.monotonic()
    await harness.delete("stubborn")
    gone = await harness.wait_gone("stubborn", within=30)
    assert gone - began >= 2.5  # SIGKILL only when the 3 s grace period ran out
    killing = await harness.wait_event("stubborn", "Killing")
    assert killing["message"] == "Stopping container main"


async def test_errors_become_status_while_other_pods_keep_running(harness: ProviderHarness) -> None:
    await harness.create(harness.manifest("steady", [sh("main", "sleep 3600")]))
    steady = await harness.wait_for("steady", lambda p: phase(p) == "Running")
    steady_id = container_status(steady, "main")["containerID"]
    await harness.create_object(
        "configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "b"}},
    )
    await harness.create(
        harness.manifest("noimage", [{"name": "main", "image": "127.0.0.1:1/vk-test/missing:1"}])
    )
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "missing"}}}]
    await harness.create(harness.manifest("nokey", [sh("main", "sleep 3600", env=env)]))
    await harness.wait_for("noimage", lambda p: waiting_reason(p, "main") == "ErrImagePull")
    await harness.wait_for("noimage", lambda p: waiting_reason(p, "main") == "ImagePullBackOff")
    failed = await harness.wait_event("noimage", "Failed")
    assert failed["type"] == "Warning"
    await harness.wait_event("noimage", "BackOff")
    nokey = await harness.wait_for(
        "nokey", lambda p: waiting_reason(p, "main") == "CreateContainerConfigError"
    )
    waiting = container_status(nokey, "main")["state"]["waiting"]
    assert waiting["message"] == "couldn't find key missing in ConfigMap default/cfg"
    # Once the key exists, the next retry starts the container.
    await harness.api.patch("/api/v1/namespaces/default/configmaps/cfg", {"data": {"missing": "found"}})
    await harness.wait_for("nokey", lambda p: phase(p) == "Running", within=60)
    steady = await harness.wait_for("steady", lambda p: phase(p) == "Running")
    assert container_status(steady, "main")["containerID"] == steady_id
    assert container_status(steady, "main")["restartCount"] == 0


async def test_crash_loop_restarts_with_growing_backoff(
    harness: ProviderHarness, docker_client: Any, control_plane: str
) -> None:
    # The back-off runs on the node's own clock (10 s, 20 s, 40 s: 71 s); the real tier checks
    # the first one and what reaches the API (CrashLoopBackOff, the BackOff Event), the
    # emulator tier the whole growth.
    restarts = 4 if control_plane == "emulator" else 2
    await harness.create(harness.manifest("crashy", [sh("main", "exit 3")]))
    seen: dict[int, float] = {}
    saw_backoff = False

    async def restarted() -> bool:
        nonlocal saw_backoff
        pod = await harness.get("crashy")
        assert pod is not None
        count = int(container_status(pod, "main").get("restartCount") or 0)
        seen.setdefault(count, time.monotonic())
        saw_backoff = saw_backoff or waiting_reason(pod, "main") == "CrashLoopBackOff"
        return restarts in seen

    await eventually(restarted, within=180, interval=0.2, what=lambda: f"{restarts} restarts (seen {seen})")
    assert set(range(1, restarts + 1)) <= set(seen), seen
    assert saw_backoff
    # Lower bounds of the 10 s, 20 s and 40 s back-offs before the second to fourth restarts.
    for restart, lower in ((2, 8), (3, 18), (4, 36)):
        if restart <= restarts:
            assert seen[restart] - seen[restart - 1] >= lower, seen
    pod = await harness.get("crashy")
    assert pod is not None
    assert container_status(pod, "main")["lastState"]["terminated"]["exitCode"] == 3
    # Only the latest instance and the one before it (for `logs --previous`) are kept.
    labels = [f"io.vk-provider.pod.uid={pod['metadata']['uid']}", "io.vk-provider.role=app"]
    kept = labelled(docker_client, labels)
    assert len(kept) == 2, [c.name for c in kept]
    backoff = await harness.wait_event("crashy", "BackOff")
    assert backoff["message"].startswith("Back-off restarting failed container main in pod crashy_default(")


@pytest.mark.emulator_only("the back-off is the node's own state; the real tier adds only time")
async def test_a_new_image_restarts_a_crash_looping_container_without_the_old_back_off(
    harness: ProviderHarness, docker_client: Any
) -> None:
    """The kubelet keys a container's back-off by its spec hash (GetStableKey, HashContainer):
    after an image update the container starts again at once instead of waiting out the 40 s
    the old image earned (the upstream "back-off timer reset on image update" spec)."""
    repository, tag = "vk-test/busybox-backoff", "1"
    docker_client.images.get(BUSYBOX_IMAGE).tag(repository, tag)
    await harness.create(harness.manifest("reimaged", [sh("main", "exit 3")]))

    def restarts(pod: dict[str, Any]) -> int:
        return int(container_status(pod, "main").get("restartCount") or 0)

    await harness.wait_for("reimaged", lambda p: restarts(p) >= 3, within=120)  # after 10 s + 20 s
    patched_at = time.monotonic()
    path = "/api/v1/namespaces/default/pods/reimaged"
    pod = await harness.api.patch(
        path, {"spec": {"containers": [{"name": "main", "image": f"{repository}:{tag}"}]}}
    )
    before = restarts(pod)
    await harness.wait_for(
        "reimaged",
        lambda p: restarts(p) > before and container_status(p, "main").get("image") == f"{repository}:{tag}",
        within=120,
    )
    # The old image's next back-off was 40 s; the new one restarts without it.
    assert time.monotonic() - patched_at < 30
