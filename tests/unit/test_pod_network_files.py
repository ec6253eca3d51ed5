"""The Node's pod CIDRs (runtime/pod_cidrs.py) and the pod's own resolv.conf
(runtime/docker/pod_resolv.py: resolv_conf_text and the pod's file): files written in a temp dir."""

from __future__ import annotations

from pathlib import Path

from tests.support.launches import launch
from vk_provider.kuberuntime.container_config import container_config
from vk_provider.runtime.configs import ResolvConf
from vk_provider.runtime.docker.pod_resolv import resolv_conf_text, resolv_file, write_resolv_file
from vk_provider.runtime.pod_cidrs import ipv4_cidr, node_pod_cidrs

CLUSTER = ResolvConf(("10.96.0.10",), ("ns.svc.cluster.local", "svc.cluster.local"), ("ndots:5",))


def test_pod_cidrs_come_from_pod_cidrs_or_the_single_field_and_bad_ones_are_left_out() -> None:
    dual = {"spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["fd00:1::/64", "10.244.1.0/24"]}}
    assert node_pod_cidrs(dual) == ("fd00:1::/64", "10.244.1.0/24")
    assert ipv4_cidr(node_pod_cidrs(dual)) == "10.244.1.0/24"
    assert node_pod_cidrs({"spec": {"podCIDR": "10.244.2.0/24"}}) == ("10.244.2.0/24",)
    assert node_pod_cidrs({"spec": {"podCIDRs": ["10.244.2.1/24", "nonsense"]}}) == ()
    assert node_pod_cidrs({}) == () and ipv4_cidr(()) is None
    assert ipv4_cidr(("fd00:1::/64",)) is None


def test_resolv_conf_text_is_dockershims_layout() -> None:
    assert resolv_conf_text(CLUSTER) == (
        "nameserver 10.96.0.10\nsearch ns.svc.cluster.local svc.cluster.local\noptions ndots:5\n"
    )
    assert resolv_conf_text(ResolvConf()) == ""


def test_the_file_is_written_for_a_user_defined_network_only_and_mounted_unless_the_container_has_its_own(
    tmp_path: Path,
) -> None:
    pod_dir = tmp_path / "uid"
    write_resolv_file(pod_dir, CLUSTER, "vk-pods-n")
    assert (pod_dir / "resolv.conf").read_text().startswith("nameserver 10.96.0.10\n")
    assert resolv_file(pod_dir) == str(pod_dir / "resolv.conf")
    plain = {"name": "c", "image": "x"}
    own = {**plain, "volumeMounts": [{"name": "v", "mountPath": "/etc/resolv.conf"}]}
    for container, mounted in ((plain, True), (own, False)):  # a volume of its own there: kept
        pod = {
            "metadata": {"name": "p"},
            "spec": {"containers": [container], "volumes": [{"name": "v", "emptyDir": {}}]},
        }
        assert container_config(launch(pod)).mount_resolv_conf is mounted
    # A later sandbox on the default bridge (Docker writes the file itself) or with the engine's
    # own configuration: the old file goes.
    write_resolv_file(pod_dir, CLUSTER, "bridge")
    assert resolv_file(pod_dir) is None
    write_resolv_file(pod_dir, CLUSTER, "vk-pods-n")
    write_resolv_file(pod_dir, None, "vk-pods-n")
    assert not (pod_dir / "resolv.conf").exists()
    write_resolv_file(None, CLUSTER, "vk-pods-n")  # a remote engine: nothing to write
