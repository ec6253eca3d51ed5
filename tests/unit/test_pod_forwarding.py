"""Where the sandbox keeps its pod-to-pod RETURN rule in nat POSTROUTING (sandbox/real/pod_forwarding)."""

from __future__ import annotations

from vk_sandbox.real.pod_forwarding import COMMENT, _in_place

OURS = f'-A POSTROUTING -s 10.244.0.0/16 -d 10.244.0.0/16 -m comment --comment "{COMMENT}" -j RETURN'
KUBE = '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING'
DOCKER_NODE = "-A POSTROUTING -s 10.244.4.0/22 ! -o br-1 -j MASQUERADE"
DOCKER0 = "-A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE"


def test_first_and_once_is_in_place() -> None:
    assert _in_place([OURS, KUBE, DOCKER_NODE, DOCKER0])
    assert _in_place([OURS])


def test_behind_a_masquerade_docker_inserted_later_is_not() -> None:
    assert not _in_place([DOCKER_NODE, OURS, KUBE, DOCKER0])
    assert not _in_place([KUBE, OURS, DOCKER0])


def test_missing_or_twice_is_not() -> None:
    assert not _in_place([KUBE, DOCKER0])
    assert not _in_place([])
    assert not _in_place([OURS, OURS, DOCKER0])
