import pytest

from vk_provider.config import DockerConfig
from vk_provider.runtime.docker.engine import engine_url
from vk_provider.runtime.docker.hostinfo import goarch, runtime_info


def test_runtime_info_maps_docker_info_to_node_facts() -> None:
    info = {
        "NCPU": 4,
        "MemTotal": 8 * 1024**3,
        "OSType": "linux",
        "Architecture": "x86_64",
        "KernelVersion": "6.1.0",
        "OperatingSystem": "Debian GNU/Linux 12 (bookworm)",
        "ServerVersion": "20.10.24",
        "Name": "host-1",
    }
    ri = runtime_info(info, storage_bytes=100, runtimes={})
    assert ri.cpus == 4
    assert ri.memory_bytes == 8 * 1024**3
    assert ri.storage_bytes == 100
    assert ri.architecture == "amd64"
    assert ri.runtime_version == "docker://20.10.24"
    assert ri.os_image.startswith("Debian")
    assert ri.hostname == "host-1"


def test_the_handlers_reported_are_the_configured_ones_the_engine_has_a_runtime_for() -> None:
    info = {"Runtimes": {"runc": {"path": "runc"}, "crun": {"path": "/usr/bin/crun"}}}
    configured = {"runc": "runc", "fast": "crun", "gvisor": "runsc"}
    assert runtime_info(info, 0, configured).runtime_handlers == ("", "fast", "runc")
    assert runtime_info(info, 0, {}).runtime_handlers == ("",)


def test_goarch_spelling() -> None:
    assert goarch("aarch64") == "arm64"
    assert goarch("armv7l") == "arm"
    assert goarch("s390x") == "s390x"


def test_engine_url_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    assert engine_url(DockerConfig()) == "unix:///var/run/docker.sock"
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.0.0.1:2376")
    assert engine_url(DockerConfig()) == "tcp://10.0.0.1:2376"
    assert engine_url(DockerConfig(host="ssh://user@box")) == "ssh://user@box"
