import io
import re
import tarfile
from typing import Any

import pytest

from tests.support import docker_kwargs, launches
from vk_provider.config import DockerAllow, DockerConfig
from vk_provider.kuberuntime import hosts as kuberuntime_hosts
from vk_provider.kuberuntime import resources
from vk_provider.kuberuntime.admission import check_pod_allowed
from vk_provider.kuberuntime.container_config import ContainerLaunch, spec_hash
from vk_provider.kuberuntime.sandbox_config import emptydir_root, sandbox_config
from vk_provider.runtime.configs import ResolvConf
from vk_provider.runtime.docker import spec
from vk_provider.runtime.types import (
    ContainerConfigError,
    ContainerCreateError,
    PodSpecRefused,
)


def make_pod(**spec_fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox:1"}]}
    base.update(spec_fields)
    return {"metadata": {"name": "web", "namespace": "ns", "uid": "u1"}, "spec": base}


def launch(pod: dict[str, Any], index: int = 0, **kw: Any) -> ContainerLaunch:
    return launches.launch(pod, index, **{"attempt": 1, "env": (("A", "1"),), "ip": "10.0.0.2", **kw})


def test_container_joins_sandbox_namespaces_and_carries_labels() -> None:
    pod = make_pod()
    kw = docker_kwargs.container_create_kwargs(launch(pod), node_name="n1", termination_file=None)
    assert kw["name"] == "k8s_app_web_ns_u1_1"
    assert kw["network_mode"] == "container:sb"
    assert kw["ipc_mode"] == "container:sb"
    assert "pid_mode" not in kw
    assert kw["environment"] == ["A=1"]
    assert kw["labels"]["io.vk-provider.node"] == "n1"
    assert kw["labels"]["io.vk-provider.container.attempt"] == "1"
    assert kw["labels"]["io.vk-provider.spec-hash"] == spec_hash(pod["spec"]["containers"][0])
    assert "entrypoint" not in kw and "command" not in kw


def test_command_overrides_entrypoint_and_clears_cmd_args_only_replace_cmd() -> None:
    pod = make_pod()
    kw = docker_kwargs.container_create_kwargs(
        launch(pod, command=("sh", "-c")), node_name="n", termination_file=None
    )
    assert kw["entrypoint"] == ["sh", "-c"] and kw["command"] == []
    kw = docker_kwargs.container_create_kwargs(launch(pod, args=("x",)), node_name="n", termination_file=None)
    assert "entrypoint" not in kw and kw["command"] == ["x"]


def test_resources_follow_kubelet_formulas() -> None:
    pod = make_pod(
        containers=[
            {
                "name": "app",
                "image": "b",
                "resources": {"limits": {"memory": "64Mi", "cpu": "500m"}, "requests": {"cpu": "250m"}},
            }
        ]
    )
    kw = docker_kwargs.container_create_kwargs(launch(pod), node_name="n", termination_file=None)
    assert kw["mem_limit"] == 64 * 1024 * 1024
    assert kw["cpu_quota"] == 50000 and kw["cpu_period"] == 100000
    assert kw["cpu_shares"] == 256


def test_cpu_shares_defaults() -> None:
    assert resources.cpu_shares(0) == 2
    assert resources.cpu_shares(1) == 2
    assert resources.cpu_shares(1000) == 1024
    assert resources.cpu_quota(1) == 1000
    kw = docker_kwargs.resource_kwargs({"resources": {"limits": {"cpu": "2"}}}, "spec.containers[0]")
    assert kw["cpu_shares"] == 2048  # requests default to limits
    assert docker_kwargs.resource_kwargs({}, "x")["cpu_shares"] == 2


def test_bad_quantity_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ContainerConfigError, match=r"spec.containers\[0\].resources"):
        docker_kwargs.resource_kwargs({"resources": {"limits": {"memory": "lots"}}}, "spec.containers[0]")


def test_security_context_merges_pod_and_container() -> None:
    pod = make_pod(
        securityContext={"runAsUser": 1000, "runAsGroup": 3000, "supplementalGroups": [4000]},
        containers=[
            {
                "name": "app",
                "image": "b",
                "securityContext": {
                    "runAsUser": 2000,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
                    "allowPrivilegeEscalation": False,
                },
            }
        ],
    )
    kw = docker_kwargs.container_create_kwargs(launch(pod), node_name="n", termination_file=None)
    assert kw["user"] == "2000:3000"
    assert kw["group_add"] == ["4000"]
    assert kw["read_only"] is True
    assert kw["cap_drop"] == ["ALL"] and kw["cap_add"] == ["NET_BIND_SERVICE"]
    assert kw["security_opt"] == ["no-new-privileges"]


def test_privileged_refused_by_default_with_field_path() -> None:
    pod = make_pod(
        containers=[
            {"name": "a", "image": "b"},
            {"name": "p", "image": "b", "securityContext": {"privileged": True}},
        ]
    )
    with pytest.raises(PodSpecRefused) as info:
        check_pod_allowed(pod, DockerAllow())
    assert info.value.message == (
        "spec.containers[1].securityContext.privileged: privileged containers are not allowed "
        "on this node (docker.allow.privileged)"
    )
    check_pod_allowed(pod, DockerAllow(privileged=True))


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"hostNetwork": True}, "spec.hostNetwork"),
        ({"hostPID": True}, "spec.hostPID"),
        ({"hostIPC": True}, "spec.hostIPC"),
        ({"volumes": [{"name": "h", "hostPath": {"path": "/etc"}}]}, "spec.volumes[0].hostPath"),
    ],
)
def test_host_namespaces_and_hostpath_refused(fields: dict[str, Any], path: str) -> None:
    with pytest.raises(PodSpecRefused, match=f"^{re.escape(path)}: "):
        check_pod_allowed(make_pod(**fields), DockerAllow())


def test_added_capabilities_need_allowance() -> None:
    pod = make_pod(
        initContainers=[
            {"name": "i", "image": "b", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}
        ]
    )
    with pytest.raises(
        PodSpecRefused, match=r"spec.initContainers\[0\].securityContext.capabilities.add\[0\]"
    ):
        check_pod_allowed(pod, DockerAllow())
    check_pod_allowed(pod, DockerAllow(capabilities=("CAP_NET_ADMIN",)))


def test_sandbox_kwargs() -> None:
    pod = make_pod(
        containers=[
            {"name": "a", "image": "b", "ports": [{"containerPort": 80, "hostPort": 8080}]},
            {
                "name": "c",
                "image": "b",
                "ports": [{"containerPort": 53, "hostPort": 5353, "protocol": "UDP"}],
            },
        ],
        hostAliases=[{"ip": "10.1.2.3", "hostnames": ["foo.local", "bar.local"]}],
    )
    config = DockerConfig(sandbox_image="vk-test/pause:1", network="mynet")
    dns = ResolvConf(("1.1.1.1",), (), ("ndots:2", "edns0"))
    kw = docker_kwargs.sandbox_create_kwargs(
        pod, node_name="n", config=config, attempt=0, dns=dns, cluster_domain="cluster.local"
    )
    assert kw["image"] == "vk-test/pause:1"
    assert kw["name"] == "k8s_POD_web_ns_u1_0"
    assert kw["hostname"] == "web"
    assert kw["network_mode"] == "mynet"
    assert kw["ipc_mode"] == "shareable"
    assert kw["ports"] == {"80/tcp": [8080], "53/udp": [5353]}
    assert kw["extra_hosts"] == ["foo.local:10.1.2.3", "bar.local:10.1.2.3"]
    assert kw["dns"] == ["1.1.1.1"]
    assert kw["dns_opt"] == ["ndots:2", "edns0"]
    assert kw["dns_search"] == ["."]  # none: not the engine's
    assert kw["labels"]["io.vk-provider.role"] == "sandbox"


def test_a_runtime_class_handler_runs_under_its_engine_runtime_and_an_unknown_one_fails() -> None:
    config = DockerConfig(sandbox_image="vk-test/pause:1", runtimes={"runc": "runc", "fast": "crun"})
    sandbox = sandbox_config(make_pod(), None, (), "cluster.local", runtime_handler="fast")
    kw = spec.sandbox_create_kwargs(sandbox, node_name="n", docker=config, attempt=0)
    assert kw["runtime"] == "crun"
    assert kw["labels"]["io.vk-provider.runtime-handler"] == "fast"
    default = spec.sandbox_create_kwargs(
        sandbox_config(make_pod(), None, (), "cluster.local"), node_name="n", docker=config, attempt=0
    )
    assert "runtime" not in default and "io.vk-provider.runtime-handler" not in default["labels"]
    with pytest.raises(ContainerCreateError) as refused:
        spec.engine_runtime(config, "kata")
    assert refused.value.message == 'failed to get sandbox runtime: no runtime for "kata" is configured'


def test_the_engines_own_resolver_configuration_is_no_dns_kwargs() -> None:
    assert spec.dns_kwargs(None) == {}
    cluster = ResolvConf(("10.96.0.10",), ("ns.svc.cluster.local", "svc.cluster.local"), ("ndots:5",))
    assert spec.dns_kwargs(cluster) == {
        "dns": ["10.96.0.10"],
        "dns_search": ["ns.svc.cluster.local", "svc.cluster.local"],
        "dns_opt": ["ndots:5"],
    }


def test_hostname_truncated_like_kubelet() -> None:
    pod = make_pod()
    pod["metadata"]["name"] = "a" * 62 + "-b" + "c" * 10
    assert kuberuntime_hosts.kernel_hostname(pod, "cluster.local") == "a" * 62


def test_volumes_emptydir_and_hostpath_binds_and_termination_file() -> None:
    pod = make_pod(
        volumes=[
            {"name": "scratch", "emptyDir": {}},
            {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
            {"name": "host", "hostPath": {"path": "/srv/data"}},
            {"name": "cfg", "configMap": {"name": "x"}},
        ],
        containers=[
            {
                "name": "app",
                "image": "b",
                "terminationMessagePath": "/tmp/msg",
                "volumeMounts": [
                    {"name": "scratch", "mountPath": "/scratch"},
                    {"name": "mem", "mountPath": "/mem", "readOnly": True},
                    {"name": "host", "mountPath": "/data", "subPath": "sub"},
                    {"name": "cfg", "mountPath": "/cfg"},
                ],
            }
        ],
    )
    kw = docker_kwargs.container_create_kwargs(
        launch(pod),
        node_name="n",
        termination_file="/state/tl",
        resolve_subpath=lambda m: f"{m.source}/{m.sub}",  # the shell's bind, on a local engine
    )
    assert kw["volumes"] == [
        "k8s_u1_scratch:/scratch:rw,nocopy",
        "k8s_u1_mem:/mem:ro,nocopy",
        "/srv/data/sub:/data:rw",
        "k8s_u1_cfg:/cfg:ro,nocopy",  # no volumes_root (a remote engine): the shipped volume
        "/state/tl:/tmp/msg:rw",
    ]
    vols = docker_kwargs.emptydir_volumes(pod, "n")
    assert [v.docker_name for v in vols] == ["k8s_u1_scratch", "k8s_u1_mem"]
    assert vols[1].driver_opts == {
        "type": "tmpfs",
        "device": "tmpfs",
        "o": "size=1048576,mode=777,uid=0,gid=0",
    }
    assert [(v.memory, v.mode, v.gid) for v in vols] == [(False, 0o777, 0), (True, 0o777, 0)]
    assert vols[0].labels["io.vk-provider.node"] == "n"


def test_emptydir_root_is_0777_or_setgid_fsgroup_like_the_kubelet() -> None:
    volumes = [{"name": "scratch", "emptyDir": {}}, {"name": "mem", "emptyDir": {"medium": "Memory"}}]
    pod = make_pod(volumes=volumes)
    assert emptydir_root(pod) == (0o777, 0)
    pod["spec"]["securityContext"] = {"runAsUser": 1234, "runAsGroup": 2345, "fsGroup": 3456}
    assert emptydir_root(pod) == (0o2777, 3456)
    disk, mem = docker_kwargs.emptydir_volumes(pod, "n")
    assert (disk.memory, disk.mode, disk.gid, disk.driver_opts) == (False, 0o2777, 3456, {})
    assert mem.driver_opts["o"] == "mode=2777,uid=0,gid=3456"


def test_the_sandbox_holds_the_memory_emptydirs_only() -> None:
    config = DockerConfig(sandbox_image="vk-test/pause:1")
    volumes = [{"name": "scratch", "emptyDir": {}}, {"name": "mem", "emptyDir": {"medium": "Memory"}}]
    kw = docker_kwargs.sandbox_create_kwargs(
        make_pod(volumes=volumes),
        node_name="n",
        config=config,
        attempt=0,
        dns=None,
        cluster_domain="cluster.local",
    )
    assert kw["volumes"] == [f"k8s_u1_mem:{spec.SANDBOX_MEMORY_PATH}/mem:rw,nocopy"]
    kw = docker_kwargs.sandbox_create_kwargs(
        make_pod(volumes=volumes[:1]),
        node_name="n",
        config=config,
        attempt=0,
        dns=None,
        cluster_domain="cluster.local",
    )
    assert "volumes" not in kw


def test_root_entry_tar_holds_the_volume_root_with_its_mode_and_group() -> None:
    pod = make_pod(volumes=[{"name": "scratch", "emptyDir": {}}])
    pod["spec"]["securityContext"] = {"fsGroup": 3456}
    (vol,) = docker_kwargs.emptydir_volumes(pod, "n")
    with tarfile.open(fileobj=io.BytesIO(spec.root_entry_tar(vol))) as tar:
        (entry,) = tar.getmembers()
    assert (entry.name, entry.isdir(), entry.mode, entry.uid, entry.gid) == (
        spec.VOLUME_ROOT_PATH,
        True,
        0o2777,
        0,
        3456,
    )
    kwargs = spec.volume_root_kwargs(vol, "pause:1")
    assert kwargs["volumes"] == [f"k8s_u1_scratch:/{spec.VOLUME_ROOT_PATH}:rw,nocopy"]
    assert kwargs["labels"] == vol.labels and kwargs["image"] == "pause:1"


def test_mount_of_undefined_volume_is_a_config_error() -> None:
    pod = make_pod(
        containers=[{"name": "app", "image": "b", "volumeMounts": [{"name": "x", "mountPath": "/x"}]}]
    )
    with pytest.raises(ContainerConfigError, match=r"spec.containers\[0\].volumeMounts\[0\].name"):
        docker_kwargs.container_create_kwargs(launch(pod), node_name="n", termination_file=None)
