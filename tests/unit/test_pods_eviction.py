"""emptyDir sizeLimit eviction rules (pods.eviction), engine volume sizes (runtime/docker/volume_usage)."""

from __future__ import annotations

from typing import Any

from tests.support import manifests
from vk_provider.pods.eviction import disk_size_limits, empty_dir_limit_message, is_critical
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker.volume_usage import volume_usage


def pod(*volumes: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return manifests.pod("p", [], namespace=None, uid="u1", volumes=list(volumes), **spec)


def test_only_disk_emptydirs_with_a_positive_limit_count() -> None:
    p = pod(
        {"name": "a", "emptyDir": {"sizeLimit": "1Mi"}},
        {"name": "b", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
        {"name": "c", "emptyDir": {}},
        {"name": "d", "emptyDir": {"sizeLimit": "0"}},
        {"name": "e", "configMap": {"name": "x"}},
    )
    assert disk_size_limits(p) == {"a": (1048576, "1Mi")}


def test_the_first_volume_over_its_limit_gives_the_kubelets_message() -> None:
    p = pod({"name": "a", "emptyDir": {"sizeLimit": "1Mi"}}, {"name": "b", "emptyDir": {"sizeLimit": "1k"}})
    assert empty_dir_limit_message(p, {"a": 1048576, "b": 1000}) is None
    assert empty_dir_limit_message(p, {"a": 1048577, "b": 5000}) == (
        'Usage of EmptyDir volume "a" exceeds the limit "1Mi". '
    )
    assert empty_dir_limit_message(p, {"b": 1001}) == 'Usage of EmptyDir volume "b" exceeds the limit "1k". '


def test_static_mirror_and_system_critical_pods_are_not_evicted() -> None:
    assert not is_critical(pod())
    assert is_critical(pod(priority=2000000000))
    mirror = pod()
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    assert is_critical(mirror)


def test_volume_usage_reads_this_nodes_sized_volumes() -> None:
    def vol(name: str, node: str, uid: str, size: int) -> dict[str, Any]:
        return {"Name": name, "Labels": {lb.NODE: node, lb.POD_UID: uid}, "UsageData": {"Size": size}}

    df = {
        "Volumes": [
            vol("k8s_u1_scratch", "n1", "u1", 4096),
            vol("k8s_u1_unsized", "n1", "u1", -1),
            vol("k8s_u2_data", "other", "u2", 10),
            {"Name": "unlabelled", "Labels": None, "UsageData": {"Size": 1}},
        ]
    }
    assert volume_usage(df, "n1") == {("u1", "scratch"): 4096}
