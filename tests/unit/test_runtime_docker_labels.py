"""The Docker names and labels of a pod's containers and sandbox, and what an inspect of them reads
back as an instance or a sandbox (runtime/docker/labels.py)."""

from datetime import UTC, datetime
from typing import Any

from vk_provider.runtime.configs import PodMetadata
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.types import ContainerInstance, ContainerRole, ContainerRunState

POD = PodMetadata(name="web", namespace="shop", uid="u-1")


def test_container_and_sandbox_names() -> None:
    assert lb.container_name(POD, "app", 2) == "k8s_app_web_shop_u-1_2"
    assert lb.sandbox_name(POD, 0) == "k8s_POD_web_shop_u-1_0"


def test_container_labels_carry_the_design_set() -> None:
    labels = lb.container_labels("node-a", POD, "app", ContainerRole.APP, 3, "busybox:1", "h1")
    assert labels == {
        "io.vk-provider.node": "node-a",
        "io.vk-provider.pod.uid": "u-1",
        "io.vk-provider.pod.name": "web",
        "io.vk-provider.pod.namespace": "shop",
        "io.vk-provider.container.name": "app",
        "io.vk-provider.container.attempt": "3",
        "io.vk-provider.container.image": "busybox:1",
        "io.vk-provider.role": "app",
        "io.vk-provider.spec-hash": "h1",
    }
    assert lb.sandbox_labels("node-a", POD, 0, "pause:1")["io.vk-provider.role"] == "sandbox"


def test_instance_from_inspect_reads_labels_and_exit() -> None:
    inspect = {
        "Id": "abc",
        "Image": "sha256:img",
        "Created": "2026-01-02T03:04:05.123456789Z",
        "Config": {
            "Image": "busybox:1",
            "Labels": lb.container_labels("n", POD, "app", ContainerRole.INIT, 1, "busybox:1", "h"),
        },
        "State": {
            "Status": "exited",
            "ExitCode": 137,
            "OOMKilled": True,
            "StartedAt": "2026-01-02T03:04:06.5Z",
            "FinishedAt": "2026-01-02T03:04:07Z",
            "Error": "",
        },
    }
    inst = lb.instance_from_inspect(inspect, termination_message="bye")
    assert (inst.name, inst.role, inst.attempt) == ("app", ContainerRole.INIT, 1)
    assert inst.state == ContainerRunState.EXITED
    assert inst.exit_code == 137 and inst.oom_killed
    assert inst.created_at == datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    assert inst.finished_at == datetime(2026, 1, 2, 3, 4, 7, tzinfo=UTC)
    assert inst.termination_message == "bye"
    assert inst.spec_hash == "h"


def app_instance(state: dict[str, Any]) -> ContainerInstance:
    """The instance of a docker inspect of the pod's app container `app` (attempt 0) in `state`."""
    labels = lb.container_labels("n", POD, "app", ContainerRole.APP, 0, "b", "")
    return lb.instance_from_inspect({"Id": "abc", "Config": {"Labels": labels}, "State": state})


def test_running_instance_has_no_exit_and_zero_time_is_none() -> None:
    inst = app_instance({"Status": "running", "ExitCode": 0, "FinishedAt": "0001-01-01T00:00:00Z"})
    assert inst.state == ContainerRunState.RUNNING
    assert inst.exit_code is None and inst.finished_at is None


def test_sandbox_from_inspect_takes_ip_of_the_network_it_was_created_on() -> None:
    networks = {"bridge": {"IPAddress": "172.17.0.5"}, "vk-pods-n": {"IPAddress": "10.244.1.2"}}
    inspect: dict[str, Any] = {
        "Id": "s1",
        "State": {"Status": "running"},
        "NetworkSettings": {"Networks": networks},
    }
    assert lb.sandbox_from_inspect({**inspect, "HostConfig": {"NetworkMode": "default"}}).ip == "172.17.0.5"
    assert lb.sandbox_from_inspect({**inspect, "HostConfig": {"NetworkMode": "vk-pods-n"}}).ip == "10.244.1.2"
    assert lb.sandbox_from_inspect({**inspect, "HostConfig": {"NetworkMode": "other"}}).ip == ""


def test_ownership_is_by_node_label() -> None:
    assert lb.is_owned({"io.vk-provider.node": "a", "io.vk-provider.pod.uid": "u"}, "a")
    assert not lb.is_owned({"io.vk-provider.node": "b", "io.vk-provider.pod.uid": "u"}, "a")


def test_container_that_could_not_start_is_a_failed_run() -> None:
    inst = app_instance(
        {"Status": "created", "ExitCode": 127, "Error": 'exec: "/nope": no such file or directory'}
    )
    assert inst.state == ContainerRunState.EXITED
    assert inst.exit_code == 127
    assert "no such file" in inst.error
