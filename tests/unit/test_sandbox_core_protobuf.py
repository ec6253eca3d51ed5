"""Unit tests of the protobuf request-body decoder (bytes captured from kubectl 1.32 with -v=8)."""

from __future__ import annotations

import pytest

from vk_provider.sandbox.protobuf import ProtobufError, decode

# kubectl create configmap x --from-literal=a=b
CONFIGMAP = bytes.fromhex(
    "6b387300"
    "0a0f0a0276311209436f6e6669674d6170"
    "121b0a110a01781200"
    "1a0022002a0032003800420012060a0161120162"
    "1a002200"
)


def test_configmap_from_kubectl() -> None:
    assert decode(CONFIGMAP) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x"},
        "data": {"a": "b"},
    }


def test_unknown_kind_and_bad_bytes_are_refused() -> None:
    pod = bytes.fromhex("6b3873000a090a02763112035061641200")
    with pytest.raises(ProtobufError):
        decode(pod)
    with pytest.raises(ProtobufError):
        decode(b'{"kind": "ConfigMap"}')
