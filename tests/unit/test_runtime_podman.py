"""What the runtime does differently on Podman, in its pure parts: the engine's identity, the
libpod update's body, a failed start's exit code, Podman's container states, its emptyDir
volume options, and the `docker.engine` setting."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import docker_kwargs
from tests.support.manifests import pod as make_pod
from vk_provider.config_load import ConfigError, config_from_mapping
from vk_provider.kuberuntime.dns import DEFAULT_CLUSTER_DOMAIN
from vk_provider.kuberuntime.sandbox_config import sandbox_config
from vk_provider.runtime.docker import labels, spec
from vk_provider.runtime.docker.hostinfo import engine_name
from vk_provider.runtime.podman import libpod
from vk_provider.runtime.podman.runtime import start_exit_code
from vk_provider.runtime.types import ContainerRunState, LinuxResources

PODMAN_VERSION = {
    "Version": "4.3.1",
    "Components": [{"Name": "Podman Engine"}, {"Name": "Conmon"}, {"Name": "OCI Runtime (crun)"}],
}
DOCKER_VERSION = {"Version": "26.1.5", "Components": [{"Name": "Engine"}, {"Name": "containerd"}]}


def test_the_engine_is_told_by_its_own_version_answer() -> None:
    assert engine_name(PODMAN_VERSION) == "podman"
    assert engine_name(DOCKER_VERSION) == "docker"
    assert engine_name({}) == "docker"


def test_the_libpod_update_sets_what_docker_update_sets_and_leaves_no_limit_alone() -> None:
    both = LinuxResources(cpu_shares=512, cpu_quota=50000, cpu_period=100000, memory_limit=64 << 20)
    assert libpod.update_body(both) == {
        "cpu": {"shares": 512, "quota": 50000, "period": 100000},
        "memory": {"limit": 64 << 20, "swap": 64 << 20},
    }
    assert libpod.update_body(LinuxResources(cpu_shares=2)) == {"cpu": {"shares": 2}}


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("crun: executable file `/nope` not found in $PATH: No such file or directory", 127),
        ("crun: open executable: Permission denied: OCI permission denied", 126),
        ("crun: setrlimit `RLIMIT_NPROC`: Operation not permitted", 128),
    ],
)
def test_a_failed_start_gets_the_exit_code_docker_gives_it(message: str, code: int) -> None:
    assert start_exit_code(message) == code


@pytest.mark.parametrize(
    ("status", "state"),
    [
        ("configured", ContainerRunState.CREATED),
        ("stopping", ContainerRunState.RUNNING),
        ("stopped", ContainerRunState.EXITED),
        ("removing", ContainerRunState.EXITED),
        ("exited", ContainerRunState.EXITED),
        ("bogus", ContainerRunState.UNKNOWN),
    ],
)
def test_podmans_container_states_read_as_dockers(status: str, state: ContainerRunState) -> None:
    assert labels.run_state({"Status": status}) == state


def test_a_sandbox_on_podmans_default_network_has_its_address() -> None:
    inspect: dict[str, Any] = {
        "Id": "abc",
        "State": {"Status": "running"},
        "HostConfig": {"NetworkMode": "bridge"},
        "NetworkSettings": {"Networks": {"podman": {"IPAddress": "10.88.0.5"}}},
    }
    assert labels.sandbox_from_inspect(inspect).ip == "10.88.0.5"


def test_podmans_emptydir_volumes_name_their_owner_and_size_memory_in_pages() -> None:
    volumes = [
        {"name": "scratch", "emptyDir": {}},
        {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
    ]
    pod = make_pod("p", [{"name": "c", "image": "i"}], uid="u1", volumes=volumes)
    pod["spec"]["securityContext"] = {"fsGroup": 3456}
    config = sandbox_config(pod, None, (), DEFAULT_CLUSTER_DOMAIN)
    disk, mem = spec.emptydir_volumes(config, "n", podman_page_size=4096)
    assert disk.driver_opts == {"o": "uid=0,gid=3456"}
    assert mem.driver_opts["o"] == "nr_blocks=256,mode=2777,uid=0,gid=3456"
    disk, mem = docker_kwargs.emptydir_volumes(pod, "n")
    assert disk.driver_opts == {} and mem.driver_opts["o"].startswith("size=1048576,")


def test_docker_engine_takes_docker_or_podman_only() -> None:
    assert config_from_mapping({"docker": {"engine": "podman"}}).docker.engine == "podman"
    assert config_from_mapping({}).docker.engine == "docker"
    with pytest.raises(ConfigError, match=r"docker\.engine: expected one of docker, podman"):
        config_from_mapping({"docker": {"engine": "containerd"}}, "c")
