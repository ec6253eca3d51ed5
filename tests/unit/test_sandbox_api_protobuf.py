"""Unit tests of the protobuf request-body decoder (bytes kubectl 1.32 and 1.37 send, captured with -v=8)."""

from __future__ import annotations

import pytest

from tests.support.protobuf_bodies import CONFIGMAP, SERVICE
from vk_sandbox.api.protobuf import ProtobufError, UnsupportedKindError, decode


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


def test_service_from_kubectl() -> None:
    assert decode(SERVICE) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "x", "labels": {"app": "x"}},
        "spec": {
            "ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}],
            "selector": {"app": "x"},
            "type": "ClusterIP",
        },
    }


def _ld(number: int, data: bytes) -> bytes:
    return bytes([number << 3 | 2, len(data)]) + data


def _configmap(meta: bytes, data: bytes = b"") -> bytes:
    type_meta = _ld(1, b"v1") + _ld(2, b"ConfigMap")
    return b"k8s\x00" + _ld(1, type_meta) + _ld(2, _ld(1, meta) + data)


def test_invalid_utf8_reads_as_replacement_characters() -> None:
    """Go keeps a proto string's bytes and encoding/json writes invalid UTF-8 as U+FFFD."""
    obj = decode(_configmap(_ld(1, b"n\xff"), _ld(2, _ld(1, b"k\xfe") + _ld(2, b"\xc3"))))
    assert obj["metadata"] == {"name": "n\ufffd"}
    assert obj["data"] == {"k\ufffd": "\ufffd"}


def test_a_timestamp_beyond_rfc3339_is_malformed() -> None:
    seconds = b"\x08" + b"\x80" * 8 + b"\x40"  # 2**62
    with pytest.raises(ProtobufError, match="time out of range"):
        decode(_configmap(_ld(1, b"n") + _ld(8, seconds)))


def test_a_negative_timestamp_in_range_is_read() -> None:
    seconds = b"\x08" + b"\xff" * 9 + b"\x01"  # -1, a ten-byte varint
    assert decode(_configmap(_ld(1, b"n") + _ld(8, seconds)))["metadata"]["creationTimestamp"] == (
        "1969-12-31T23:59:59Z"
    )


@pytest.mark.parametrize(
    "body",
    [
        b"k8s\x00" + b"\xff" * 20,  # a varint longer than 64 bits
        b"k8s\x00\x09\x01\x02",  # a fixed64 field cut short
    ],
)
def test_malformed_wire_data_is_refused(body: bytes) -> None:
    with pytest.raises(ProtobufError) as e:
        decode(body)
    assert not isinstance(e.value, UnsupportedKindError)


def test_an_unsupported_kind_is_its_own_error() -> None:
    pod = bytes.fromhex("6b3873000a090a02763112035061641200")
    with pytest.raises(UnsupportedKindError):
        decode(pod)
