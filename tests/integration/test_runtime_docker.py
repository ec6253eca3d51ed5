"""DockerRuntime against the real engine: pods as sandbox + containers, stop, state, events, images."""

from __future__ import annotations

import asyncio
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench.docker_engine import DockerCountingProxy
from tests.support.docker_kwargs import sandbox_create_kwargs
from tests.support.engine import engine_under_test
from tests.support.images import BUSYBOX_IMAGE
from tests.support.polling import eventually, until
from tests.support.runtime_calls import engine_runtime, engine_socket, ensure_sandbox, start_container
from vk_common.ports import free_port
from vk_provider.config import DockerConfig
from vk_provider.kube.keyring import Keyring
from vk_provider.kuberuntime.container_config import ContainerLaunch
from vk_provider.kuberuntime.resources import linux_resources
from vk_provider.runtime.docker import DockerRuntime
from vk_provider.runtime.types import (
    ContainerInstance,
    ContainerNotFound,
    ContainerRole,
    ContainerRunState,
    ContainerStartError,
    ImagePullError,
    PodSandboxState,
    PodSpecRefused,
    RuntimeEvent,
    RuntimeUnavailable,
    StreamError,
)

pytestmark = pytest.mark.asyncio

DEADLINE = 60.0


def make_pod(name: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {"containers": containers, **spec},
    }


def container(name: str, *command: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": BUSYBOX_IMAGE, "command": list(command), **fields}


async def start(
    rt: DockerRuntime,
    pod: dict[str, Any],
    sandbox: PodSandboxState,
    index: int,
    env: dict[str, str] | None = None,
    attempt: int = 0,
) -> ContainerInstance:
    c = pod["spec"]["containers"][index]
    assert await rt.image_id(c["image"]) is not None
    return await start_container(
        rt,
        ContainerLaunch(
            pod=pod,
            container=c,
            role=ContainerRole.APP,
            attempt=attempt,
            env=tuple((env or {}).items()),
            command=tuple(c["command"]) if c.get("command") else None,
            args=None,
            sandbox=sandbox,
        ),
    )


async def wait_exited(
    rt: DockerRuntime, uid: str, name: str, attempt: int | None = None
) -> ContainerInstance:

    async def exited() -> ContainerInstance | None:
        state = await rt.pod_state(uid)
        found = [c for c in state.containers if c.name == name] if state else []
        if attempt is not None:
            found = [c for c in found if c.attempt == attempt]
        inst = max(found, key=lambda c: c.attempt) if found else None
        return inst if inst is not None and inst.state == ContainerRunState.EXITED else None

    inst: ContainerInstance = await eventually(exited, within=DEADLINE, interval=0.2, what=f"{name} to exit")
    return inst


async def read_logs(rt: DockerRuntime, container_id: str) -> bytes:
    stream = await rt.container_logs(container_id, follow=False, timestamps=False, tail=None, since=None)
    return b"".join([chunk async for chunk in stream])


def http_get(url: str) -> str:
    """The body at `url`, retried while nothing answers there yet."""
    failure: OSError | None = None

    def answered() -> str | None:
        nonlocal failure
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return str(resp.read().decode())
        except OSError as exc:
            failure = exc
            return None

    body: str = until(lambda: f"an answer from {url} (last error: {failure})", answered, DEADLINE, 0.2)
    return body


async def test_pod_shares_localhost_and_is_reachable_from_the_host(runtime: DockerRuntime) -> None:
    probe = "for i in $(seq 1 100); do wget -qO- http://localhost:8080/ && exit 0; sleep 0.2; done; exit 1"
    pod = make_pod(
        "web",
        [
            container("server", "httpd", "-f", "-p", "8080", "-h", "/var/www"),
            container("client", "sh", "-c", f'echo "greeting=$GREETING"; {probe}'),
        ],
    )
    sandbox = await ensure_sandbox(runtime, pod)
    assert sandbox.running and sandbox.ip
    server = await start(runtime, pod, sandbox, 0)
    client = await start(runtime, pod, sandbox, 1, env={"GREETING": "hello-env"})
    assert server.state == ContainerRunState.RUNNING

    done = await wait_exited(runtime, pod["metadata"]["uid"], "client")
    assert done.exit_code == 0
    logs = await read_logs(runtime, client.container_id)
    assert b"greeting=hello-env" in logs
    assert b"hello from vk-test/busybox" in logs

    body = await asyncio.to_thread(http_get, f"http://{sandbox.ip}:8080/")
    assert "hello from vk-test/busybox" in body

    again = await ensure_sandbox(runtime, pod)
    assert again.container_id == sandbox.container_id  # reused, not recreated


async def test_a_sandbox_created_but_never_started_is_replaced_and_removed(
    runtime: DockerRuntime, docker_client: Any, node_name: str
) -> None:
    """What a provider killed between `docker create` and `docker start` of a sandbox leaves:
    the next ensure_sandbox starts a new one and the pod keeps that one alone (as the kubelet's
    container GC, evictSandboxes, keeps only a live pod's latest sandbox)."""
    pod = make_pod("half-made", [container("main", "sleep", "3600")])
    kwargs = sandbox_create_kwargs(
        pod, node_name=node_name, config=runtime.config, attempt=0, dns=None, cluster_domain="cluster.local"
    )
    half_made = await asyncio.to_thread(docker_client.containers.create, **kwargs)
    sandbox = await ensure_sandbox(runtime, pod)
    assert sandbox.running and sandbox.container_id != half_made.id
    uid = pod["metadata"]["uid"]
    left = docker_client.containers.list(all=True, filters={"label": f"io.vk-provider.pod.uid={uid}"})
    assert [c.id for c in left] == [sandbox.container_id]


async def test_memory_and_cpu_limits_are_applied(runtime: DockerRuntime, docker_client: Any) -> None:
    pod = make_pod(
        "limited",
        [
            container(
                "app",
                "sleep",
                "300",
                resources={"limits": {"memory": "64Mi", "cpu": "500m"}, "requests": {"cpu": "250m"}},
            )
        ],
    )
    sandbox = await ensure_sandbox(runtime, pod)
    inst = await start(runtime, pod, sandbox, 0)
    host_config = docker_client.api.inspect_container(inst.container_id)["HostConfig"]
    assert host_config["Memory"] == 64 * 1024 * 1024
    assert host_config["CpuQuota"] == 50000 and host_config["CpuPeriod"] == 100000
    assert host_config["CpuShares"] == 256
    code, out = await runtime.exec_in_container(
        inst.container_id,
        [
            "sh",
            "-c",
            "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
        ],
        10,
    )
    assert code == 0
    assert out.strip() == str(64 * 1024 * 1024).encode()


async def test_stop_kills_after_grace_and_trapping_process_exits_with_its_code(
    runtime: DockerRuntime,
) -> None:
    pod = make_pod(
        "stoppers",
        [
            container("stubborn", "sh", "-c", 'trap "" TERM; while true; do sleep 0.2; done'),
            container("polite", "sh", "-c", 'trap "exit 7" TERM; while true; do sleep 0.2; done'),
        ],
    )
    sandbox = await ensure_sandbox(runtime, pod)
    stubborn = await start(runtime, pod, sandbox, 0)
    polite = await start(runtime, pod, sandbox, 1)
    await asyncio.sleep(0.5)  # let the shells install their traps

    began = time.monotonic()
    await runtime.stop_container(stubborn.container_id, 2.0)
    assert time.monotonic() - began >= 1.5
    state = await runtime.pod_state(pod["metadata"]["uid"])
    assert state is not None
    gone = state.latest("stubborn")
    assert gone is not None and gone.state == ContainerRunState.EXITED and gone.exit_code == 137

    await runtime.stop_container(polite.container_id, 30.0)
    state = await runtime.pod_state(pod["metadata"]["uid"])
    assert state is not None
    done = state.latest("polite")
    assert done is not None and done.state == ContainerRunState.EXITED and done.exit_code == 7


async def test_fresh_runtime_rebuilds_the_same_state_from_labels(
    runtime: DockerRuntime, node_name: str, test_images: dict[str, str]
) -> None:
    pod = make_pod("rebuild", [container("app", "sleep", "300"), container("once", "true")])
    sandbox = await ensure_sandbox(runtime, pod)
    app = await start(runtime, pod, sandbox, 0)
    await start(runtime, pod, sandbox, 1)
    await wait_exited(runtime, pod["metadata"]["uid"], "once")
    before = (await runtime.list_pods())[pod["metadata"]["uid"]]

    fresh = engine_runtime(DockerConfig(sandbox_image=test_images["pause"]), node_name)
    await fresh.start()
    try:
        after = (await fresh.list_pods())[pod["metadata"]["uid"]]
    finally:
        await fresh.close()
    assert (after.name, after.namespace) == ("rebuild", "default")
    assert after.sandbox == before.sandbox
    assert after.containers == before.containers
    latest = after.latest("app")
    assert latest is not None and latest.container_id == app.container_id and latest.attempt == 0


async def test_events_report_start_and_die_with_exit_code(runtime: DockerRuntime) -> None:
    events = runtime.events()
    pod = make_pod("events", [container("quitter", "sh", "-c", "sleep 0.5; exit 3")])
    sandbox = await ensure_sandbox(runtime, pod)
    inst = await start(runtime, pod, sandbox, 0)
    seen: list[RuntimeEvent] = []

    async def collect() -> None:
        async for ev in events:
            if ev.container_id == inst.container_id:
                seen.append(ev)
                if ev.action == "die":
                    return

    await asyncio.wait_for(collect(), DEADLINE)
    assert [e.action for e in seen] == ["start", "die"]
    assert seen[-1].exit_code == 3
    assert seen[-1].pod_uid == pod["metadata"]["uid"] and seen[-1].container_name == "quitter"


async def test_image_failures_have_kubelet_reasons(runtime: DockerRuntime) -> None:
    missing = f"vk-test/not-there-{uuid.uuid4().hex[:6]}:1"
    assert await runtime.image_id(missing) is None

    with pytest.raises(ImagePullError) as invalid:
        await runtime.image_id("Not A/Valid Image")
    assert invalid.value.reason == "InvalidImageName"

    with pytest.raises(ImagePullError) as pull:
        await asyncio.wait_for(runtime.pull_image(missing, Keyring()), DEADLINE)
    assert pull.value.reason == "ErrImagePull"
    # the engine's own words, as the CRI's (no registry here: Docker Hub unreachable; else denied)
    message = pull.value.message
    assert "registry-1.docker.io" in message or "vk-test/not-there" in message, message
    assert not message.startswith("Failed to pull image")  # the pods layer's Event adds that

    assert (await runtime.image_id(BUSYBOX_IMAGE) or "").startswith("sha256:")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"hostNetwork": True}, "spec.hostNetwork"),
        (
            {"containers": [container("p", "true", securityContext={"privileged": True})]},
            "spec.containers[0].securityContext.privileged",
        ),
    ],
)
async def test_refused_specs_create_nothing(runtime: DockerRuntime, spec: dict[str, Any], field: str) -> None:
    pod = make_pod("refused", [container("x", "true")])
    pod["spec"].update(spec)
    with pytest.raises(PodSpecRefused) as info:
        await ensure_sandbox(runtime, pod)
    assert info.value.message.startswith(f"{field}: ")
    assert await runtime.pod_state(pod["metadata"]["uid"]) is None


async def test_other_nodes_containers_are_invisible_and_untouched(
    runtime: DockerRuntime, docker_client: Any, test_labels: dict[str, str]
) -> None:
    other_uid = str(uuid.uuid4())
    foreign = docker_client.containers.run(
        BUSYBOX_IMAGE,
        ["sleep", "300"],
        detach=True,
        labels={
            **test_labels,
            "io.vk-provider.node": "some-other-node",
            "io.vk-provider.pod.uid": other_uid,
            "io.vk-provider.role": "app",
            "io.vk-provider.container.name": "app",
        },
    )
    assert other_uid not in await runtime.list_pods()
    assert await runtime.pod_state(other_uid) is None
    assert await runtime.container_role(foreign.id) is None
    await runtime.stop_container(foreign.id, 0)
    await runtime.remove_pod(other_uid)
    await runtime.prune_pod(other_uid)
    foreign.reload()
    assert foreign.status == "running"


async def test_termination_message_is_read_back(runtime: DockerRuntime, tmp_path: Path) -> None:
    pod = make_pod(
        "messages",
        [
            container("default", "sh", "-c", "printf bye > /dev/termination-log; exit 1"),
            container("custom", "sh", "-c", "printf done > /tmp/msg", terminationMessagePath="/tmp/msg"),
            container(  # as the conformance spec "... as non-root user and at a non-default path"
                "nonroot",
                "sh",
                "-c",
                "printf DONE > /dev/termination-custom-log",
                terminationMessagePath="/dev/termination-custom-log",
                securityContext={"runAsUser": 1000},
            ),
        ],
    )
    sandbox = await ensure_sandbox(runtime, pod)
    await start(runtime, pod, sandbox, 0)
    await start(runtime, pod, sandbox, 1)
    await start(runtime, pod, sandbox, 2)
    nonroot = await wait_exited(runtime, pod["metadata"]["uid"], "nonroot")
    assert (nonroot.exit_code, nonroot.termination_message) == (0, "DONE")
    failed = await wait_exited(runtime, pod["metadata"]["uid"], "default")
    assert (failed.exit_code, failed.termination_message) == (1, "bye")
    done = await wait_exited(runtime, pod["metadata"]["uid"], "custom")
    assert (done.exit_code, done.termination_message) == (0, "done")
    await runtime.remove_pod(pod["metadata"]["uid"])
    assert await runtime.pod_state(pod["metadata"]["uid"]) is None
    assert not await asyncio.to_thread(lambda: any(tmp_path.rglob("termination-log")))


async def test_fallback_to_logs_on_error(runtime: DockerRuntime) -> None:
    pod = make_pod(
        "fallback",
        [
            container(
                "app",
                "sh",
                "-c",
                "echo first; echo last words; exit 2",
                terminationMessagePolicy="FallbackToLogsOnError",
            )
        ],
    )
    sandbox = await ensure_sandbox(runtime, pod)
    await start(runtime, pod, sandbox, 0)
    done = await wait_exited(runtime, pod["metadata"]["uid"], "app")
    assert done.exit_code == 2
    assert done.termination_message == "first\nlast words\n"


async def test_prune_keeps_latest_and_previous_instance(runtime: DockerRuntime) -> None:
    pod = make_pod("prune", [container("app", "true")])
    uid = pod["metadata"]["uid"]
    sandbox = await ensure_sandbox(runtime, pod)
    for attempt in range(3):
        await start(runtime, pod, sandbox, 0, attempt=attempt)
        await wait_exited(runtime, uid, "app", attempt)
    await runtime.prune_pod(uid)
    state = await runtime.pod_state(uid)
    assert state is not None
    assert sorted(c.attempt for c in state.containers) == [1, 2]
    previous = state.previous("app")
    assert previous is not None and previous.attempt == 1
    assert state.sandbox is not None and state.sandbox.container_id == sandbox.container_id


async def test_logs_follow_tail_and_timestamps(runtime: DockerRuntime) -> None:
    pod = make_pod("logs", [container("app", "sh", "-c", "echo one; echo two; sleep 1; echo three")])
    sandbox = await ensure_sandbox(runtime, pod)
    inst = await start(runtime, pod, sandbox, 0)
    stream = await runtime.container_logs(
        inst.container_id, follow=True, timestamps=False, tail=None, since=None
    )
    followed = b"".join([chunk async for chunk in stream])  # ends when the container exits
    assert followed == b"one\ntwo\nthree\n"
    stream = await runtime.container_logs(
        inst.container_id, follow=False, timestamps=True, tail=1, since=None
    )
    lines = b"".join([chunk async for chunk in stream]).decode().splitlines()
    assert len(lines) == 1
    stamp, text = lines[0].split(" ", 1)
    assert text == "three" and stamp.endswith("Z") and stamp[:4].isdigit()


async def test_exec_returns_code_and_output_and_times_out(runtime: DockerRuntime) -> None:
    pod = make_pod("exec", [container("app", "sleep", "300")])
    sandbox = await ensure_sandbox(runtime, pod)
    inst = await start(runtime, pod, sandbox, 0)
    code, out = await runtime.exec_in_container(
        inst.container_id, ["sh", "-c", "echo out; echo err >&2; exit 4"], 10
    )
    assert code == 4
    assert b"out\n" in out and b"err\n" in out
    with pytest.raises(TimeoutError):
        await runtime.exec_in_container(inst.container_id, ["sleep", "30"], 0.5)


async def test_engine_errors_reach_callers_as_runtime_neutral_errors(runtime: DockerRuntime) -> None:
    """docker-py's errors stay inside runtime/docker/: a vanished container is ContainerNotFound,
    a refused exec or attach a StreamError; a running one has the container URI and stats."""
    missing = "0" * 64
    with pytest.raises(ContainerNotFound, match="not found on this node"):
        await runtime.container_logs(missing, follow=False, timestamps=False, tail=None, since=None)
    with pytest.raises(ContainerNotFound):
        await runtime.exec_in_container(missing, ["true"], 5)
    with pytest.raises(StreamError):
        await runtime.open_exec(missing, ["true"], stdin=False, stdout=True, stderr=True, tty=False)
    with pytest.raises(StreamError):
        await runtime.open_attach(missing, stdin=False, stdout=True, stderr=True)
    assert await runtime.container_stats([missing]) == [None]
    pod = make_pod("seam", [container("app", "sleep", "300")])
    sandbox = await ensure_sandbox(runtime, pod)
    inst = await start(runtime, pod, sandbox, 0)
    assert inst.container_uri == f"docker://{inst.container_id}"
    (stats,) = await runtime.container_stats([inst.container_id])
    assert stats is not None and stats.memory_usage_bytes > 0
    state = await runtime.pod_state(pod["metadata"]["uid"])
    assert state is not None and runtime.pod_address(state) == sandbox.ip != ""


async def test_sandbox_hostname_aliases_hostport_and_shared_emptydir(runtime: DockerRuntime) -> None:
    host_port = free_port()
    pod = make_pod(
        "net-" + "x" * 70,
        [
            container(
                "server",
                "httpd",
                "-f",
                "-p",
                "8080",
                "-h",
                "/var/www",
                ports=[{"containerPort": 8080, "hostPort": host_port}],
                volumeMounts=[{"name": "shared", "mountPath": "/shared"}],
            ),
            container(
                "writer",
                "sh",
                "-c",
                "echo from-writer > /data/file",
                volumeMounts=[{"name": "shared", "mountPath": "/data"}],
            ),
        ],
        hostAliases=[{"ip": "10.9.8.7", "hostnames": ["alias.example"]}],
        volumes=[{"name": "shared", "emptyDir": {}}],
    )
    sandbox = await ensure_sandbox(runtime, pod)
    server = await start(runtime, pod, sandbox, 0)
    await start(runtime, pod, sandbox, 1)
    assert (await wait_exited(runtime, pod["metadata"]["uid"], "writer")).exit_code == 0

    code, out = await runtime.exec_in_container(
        server.container_id, ["sh", "-c", "hostname; cat /etc/hosts; cat /shared/file"], 10
    )
    assert code == 0
    text = out.decode()
    assert text.splitlines()[0] == "net-" + "x" * 59
    assert "10.9.8.7\talias.example" in text
    assert "from-writer" in text
    body = await asyncio.to_thread(http_get, f"http://127.0.0.1:{host_port}/")
    assert "hello from vk-test/busybox" in body


async def test_start_failure_raises_and_shows_as_failed_run(runtime: DockerRuntime) -> None:
    pod = make_pod("nostart", [container("app", "/does-not-exist")])
    sandbox = await ensure_sandbox(runtime, pod)
    with pytest.raises(ContainerStartError) as info:
        await start(runtime, pod, sandbox, 0)
    assert info.value.reason == "RunContainerError"
    assert "/does-not-exist" in info.value.message
    state = await runtime.pod_state(pod["metadata"]["uid"])
    assert state is not None
    failed = state.latest("app")
    assert failed is not None and failed.state == ContainerRunState.EXITED
    assert failed.exit_code == 127 and "/does-not-exist" in failed.error


async def test_info_and_ping(runtime: DockerRuntime) -> None:
    await runtime.ping()
    info = await runtime.info()
    assert info.cpus > 0 and info.memory_bytes > 0 and info.storage_bytes > 0
    assert info.os_type == "linux"
    assert info.architecture in ("amd64", "arm64", "arm", "386", "ppc64le", "s390x", "riscv64")
    assert info.runtime_version.startswith(f"{engine_under_test()}://") and info.kernel_version


async def test_unreachable_engine_is_runtime_unavailable(tmp_path: Path) -> None:
    rt = DockerRuntime(DockerConfig(host=f"unix://{tmp_path}/no.sock"), "vk-test-unreachable")
    with pytest.raises(RuntimeUnavailable) as info:
        await rt.start()
    assert "no.sock" in info.value.message
    with pytest.raises(RuntimeUnavailable):
        await rt.ping()
    await rt.close()


async def test_the_other_engine_on_the_socket_stops_the_start_naming_itself(node_name: str) -> None:
    """`docker.engine` says which engine answers; the socket's own answer is checked at start."""
    actual = engine_under_test()
    other = "docker" if actual == "podman" else "podman"
    rt = DockerRuntime(DockerConfig(engine=other), node_name)
    with pytest.raises(RuntimeUnavailable) as info:
        await rt.start()
    assert f"is {actual} " in info.value.message and f"set docker.engine: {actual}" in info.value.message
    await rt.close()


async def test_volumes_add_no_stray_mounts_and_leave_no_volume_behind(
    runtime: DockerRuntime, docker_client: Any
) -> None:
    """An emptyDir (bind mode `rw,nocopy`) is one mount in the container, at its path only, and
    removing the pod leaves no volume in the engine: no anonymous volume at `/data:rw,nocopy`."""
    pod = make_pod(
        "mounts",
        [
            container(
                "app", "sh", "-c", "ls -d /data*", volumeMounts=[{"name": "scratch", "mountPath": "/data"}]
            )
        ],
        volumes=[{"name": "scratch", "emptyDir": {}}],
    )
    uid = pod["metadata"]["uid"]
    sandbox = await ensure_sandbox(runtime, pod)
    app = await start(runtime, pod, sandbox, 0)
    assert (await wait_exited(runtime, uid, "app")).exit_code == 0
    assert (await read_logs(runtime, app.container_id)).decode().split() == ["/data"]
    mounts = docker_client.api.inspect_container(app.container_id)["Mounts"]
    volumes = [m for m in mounts if m["Type"] == "volume"]
    assert [m["Destination"] for m in volumes] == ["/data"]
    await runtime.remove_pod(uid)
    # Every volume the container had (named or anonymous) is gone; other tests' volumes may come
    # and go meanwhile (make test runs two workers on one engine).
    names = {m["Name"] for m in volumes}
    left = [v.name for v in docker_client.volumes.list() if v.name in names]
    assert left == [], f"volumes left in the engine after the pod was removed: {left}"


async def test_an_unchanged_pods_state_comes_from_the_relist_and_a_kill_outside_is_seen(
    node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    """While the events are followed, `pod_state` of a pod nothing changed since the latest
    `list_pods` costs the engine nothing (a pod's resync does not grow the idle Docker calls with
    the pods); a container killed behind the provider's back is seen as exited all the same."""
    proxy = DockerCountingProxy(tmp_path / "docker.sock", engine_socket())
    await proxy.start()
    config = DockerConfig(sandbox_image=test_images["pause"], state_dir=str(tmp_path), host=proxy.url)
    rt = engine_runtime(config, node_name)
    await rt.start()
    seen: list[str] = []

    async def follow() -> None:
        async for event in rt.events():
            seen.append(getattr(event, "action", "resumed"))

    follower = asyncio.create_task(follow())
    try:
        pod = make_pod("resynced", [container("app", "sleep", "3600")])
        uid = pod["metadata"]["uid"]
        app_id = (await start(rt, pod, await ensure_sandbox(rt, pod), 0)).container_id
        await asyncio.sleep(1.5)  # past the lag allowed for the events of our own start
        await rt.list_pods()
        proxy.counts.clear()
        for _ in range(5):
            state = await rt.pod_state(uid)
            assert state is not None and state.containers[0].state == ContainerRunState.RUNNING
        assert sum(proxy.counts.values()) == 0, dict(proxy.counts)

        await asyncio.to_thread(docker_client.api.kill, app_id)

        async def exited() -> bool:
            state = await rt.pod_state(uid)
            return state is not None and state.containers[0].state == ContainerRunState.EXITED

        await eventually(exited, within=30, what="the killed container seen as exited")
        assert "die" in seen
    finally:
        follower.cancel()
        await rt.remove_pod(uid)
        await rt.close()
        await proxy.stop()


async def test_a_relist_of_running_pods_is_one_list_call_and_a_resize_is_seen(
    node_name: str, test_images: dict[str, str], tmp_path: Path
) -> None:
    """Nothing changed: `list_pods` costs the engine one list, whatever the number of pods (no
    inspect per container); a container that exits, or whose limits `docker update` changed,
    is read again."""
    proxy = DockerCountingProxy(tmp_path / "docker.sock", engine_socket())
    await proxy.start()
    config = DockerConfig(
        sandbox_image=test_images["pause"], max_concurrency=4, state_dir=str(tmp_path), host=proxy.url
    )
    rt = engine_runtime(config, node_name)
    await rt.start()
    try:
        pods = [
            make_pod(f"idle-{n}", [container("app", "sleep", "3600"), container("side", "sleep", "3600")])
            for n in range(3)
        ]
        ids = {}
        for pod in pods:
            sandbox = await ensure_sandbox(rt, pod)
            ids[pod["metadata"]["uid"]] = (await start(rt, pod, sandbox, 0)).container_id
            await start(rt, pod, sandbox, 1)
        await rt.list_pods()
        proxy.counts.clear()
        for _ in range(3):
            listed = await rt.list_pods()
        assert dict(proxy.counts) == {"GET /containers/json": 3}
        assert all(p.sandbox is not None and p.sandbox.running for p in listed.values())
        assert all(c.state == ContainerRunState.RUNNING for p in listed.values() for c in p.containers)

        uid, app_id = next(iter(ids.items()))
        pod = next(p for p in pods if p["metadata"]["uid"] == uid)
        resized = {**pod["spec"]["containers"][0], "resources": {"limits": {"memory": "64Mi"}}}
        await rt.update_resources(app_id, linux_resources(resized, "spec.containers[0]"))
        app = next(c for c in (await rt.list_pods())[uid].containers if c.container_id == app_id)
        assert app.resources is not None and app.resources.memory_limit == 64 * 1024 * 1024

        await rt.stop_container(app_id, 1)
        app = next(c for c in (await rt.list_pods())[uid].containers if c.container_id == app_id)
        assert app.state == ContainerRunState.EXITED
    finally:
        for uid in await rt.list_pods():
            await rt.remove_pod(uid)
        await rt.close()
        await proxy.stop()


async def test_new_pods_sandboxes_cost_a_create_start_and_inspect_each_and_one_image_check(
    node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    """A new pod's sandbox, right after the node-wide list showed the pod has no container: no
    second list of the pod, and the sandbox image looked up once for the whole burst, not once per
    pod (the start-up bench's Docker calls per pod). A sandbox of a pod that already has one, and
    a create that fails, still look again."""
    proxy = DockerCountingProxy(tmp_path / "docker.sock", engine_socket())
    await proxy.start()
    config = DockerConfig(sandbox_image=test_images["pause"], state_dir=str(tmp_path), host=proxy.url)
    rt = engine_runtime(config, node_name)
    await rt.start()
    follower = asyncio.create_task(anext(rt.events()))  # the listing cache needs the events followed
    try:
        await asyncio.sleep(0.5)
        await rt.list_pods()
        pods = [make_pod(f"burst-{n}", [container("app", "sleep", "3600")]) for n in range(3)]
        proxy.counts.clear()
        for pod in pods:
            assert await rt.pod_state(pod["metadata"]["uid"]) is None
            assert (await ensure_sandbox(rt, pod)).running
        assert dict(proxy.counts) == {
            "GET /images/{name}/json": 1,
            "POST /containers/create": 3,
            "POST /containers/{id}/start": 3,
            "GET /containers/{id}/json": 3,
        }

        proxy.counts.clear()
        again = await ensure_sandbox(rt, pods[0])  # the pod changed: its containers are listed
        assert again.running and proxy.counts["GET /containers/json"] == 1
        assert proxy.counts["POST /containers/create"] == 0
    finally:
        follower.cancel()
        for uid in await rt.list_pods():
            await rt.remove_pod(uid)
        await rt.close()
        await proxy.stop()


async def test_the_start_events_of_its_own_starts_leave_a_pods_state_known(
    node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    """Once the engine's "start" events of a new pod's sandbox and app (starts the runtime made
    and inspected right after) are read, the pod's state (a resync's read) asks for no inspect;
    a death someone else caused is still seen, by one inspect after its event."""
    proxy = DockerCountingProxy(tmp_path / "docker.sock", engine_socket())
    await proxy.start()
    config = DockerConfig(sandbox_image=test_images["pause"], state_dir=str(tmp_path), host=proxy.url)
    rt = engine_runtime(config, node_name)
    await rt.start()
    events = rt.events()
    try:
        pod = make_pod("own-starts", [container("app", "sleep", "3600")])
        uid = pod["metadata"]["uid"]
        sandbox = await ensure_sandbox(rt, pod)
        app = await start(rt, pod, sandbox, 0)

        async def read_until(action: str, ids: set[str]) -> None:
            async for event in events:
                if event.action == action and event.container_id in ids:
                    ids.discard(event.container_id)
                    if not ids:
                        return

        await asyncio.wait_for(read_until("start", {sandbox.container_id, app.container_id}), DEADLINE)
        proxy.counts.clear()
        state = await rt.pod_state(uid)
        assert state is not None and state.sandbox is not None and state.sandbox.running
        assert [c.state for c in state.containers] == [ContainerRunState.RUNNING]
        assert proxy.counts["GET /containers/{id}/json"] == 0, dict(proxy.counts)

        await asyncio.to_thread(docker_client.api.kill, app.container_id)
        await asyncio.wait_for(read_until("die", {app.container_id}), DEADLINE)
        proxy.counts.clear()
        state = await rt.pod_state(uid)
        assert state is not None and [c.state for c in state.containers] == [ContainerRunState.EXITED]
        assert proxy.counts["GET /containers/{id}/json"] == 1, dict(proxy.counts)
    finally:
        await events.aclose()
        for listed in await rt.list_pods():
            await rt.remove_pod(listed)
        await rt.close()
        await proxy.stop()
