"""mountPropagation and recursiveReadOnly in the bind strings Docker gets (kuberuntime/mounts.py
compiled, runtime/docker/spec.volume_binds translated)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.launches import launch
from vk_provider.kuberuntime.container_config import container_config
from vk_provider.runtime.docker.spec import volume_binds
from vk_provider.runtime.types import ContainerConfigError

FIELD = "spec.containers[0]"


def _binds(mount: dict[str, Any], privileged: bool = False) -> list[str]:
    container = {
        "name": "c",
        "image": "x",
        "volumeMounts": [{"name": "host", "mountPath": "/mnt", **mount}],
        "securityContext": {"privileged": privileged},
    }
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {"containers": [container], "volumes": [{"name": "host", "hostPath": {"path": "/srv"}}]},
    }
    return volume_binds(container_config(launch(pod)))


@pytest.mark.parametrize(
    ("propagation", "bind"),
    [
        (None, "/srv:/mnt:rw"),
        ("None", "/srv:/mnt:rw"),
        ("HostToContainer", "/srv:/mnt:rw,rslave"),
    ],
)
def test_propagation_becomes_the_bind_option(propagation: str | None, bind: str) -> None:
    mount = {} if propagation is None else {"mountPropagation": propagation}
    assert _binds(mount) == [bind]


def test_bidirectional_is_rshared_for_a_privileged_container_only() -> None:
    assert _binds({"mountPropagation": "Bidirectional"}, privileged=True) == ["/srv:/mnt:rw,rshared"]
    with pytest.raises(ContainerConfigError) as err:
        _binds({"mountPropagation": "Bidirectional"})
    assert str(err.value) == (
        "spec.containers[0].volumeMounts[0].mountPropagation: Forbidden: Bidirectional mount "
        "propagation is available only to privileged containers"
    )


def test_an_unknown_propagation_is_the_kubelets_error() -> None:
    with pytest.raises(ContainerConfigError, match=r'^invalid MountPropagation mode: "Sideways"$'):
        _binds({"mountPropagation": "Sideways"})


@pytest.mark.parametrize("mode", ["Disabled", "IfPossible"])
def test_recursive_read_only_falls_back_to_the_plain_read_only_bind(mode: str) -> None:
    assert _binds({"readOnly": True, "recursiveReadOnly": mode}) == ["/srv:/mnt:ro"]


@pytest.mark.parametrize(
    ("mount", "error"),
    [
        ({"readOnly": True, "recursiveReadOnly": "Enabled"}, "but it is not supported by the runtime"),
        ({"recursiveReadOnly": "IfPossible"}, "but it is not read-only"),
        (
            {"readOnly": True, "recursiveReadOnly": "Enabled", "mountPropagation": "HostToContainer"},
            'but it is not compatible with propagation "HostToContainer"',
        ),
    ],
)
def test_recursive_read_only_errors_are_the_kubelets(mount: dict[str, Any], error: str) -> None:
    with pytest.raises(ContainerConfigError) as err:
        _binds(mount)
    assert str(err.value) == (
        'failed to resolve recursive read-only mode: volume "host" requested recursive read-only '
        f"mode, {error}"
    )
    assert err.value.reason == "CreateContainerConfigError"


def test_an_unknown_recursive_read_only_mode() -> None:
    with pytest.raises(ContainerConfigError, match='unknown recursive read-only mode "Always"'):
        _binds({"readOnly": True, "recursiveReadOnly": "Always"})
