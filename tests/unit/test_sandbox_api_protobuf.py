"""Unit tests of the protobuf request-body decoder: bytes kubectl 1.32 and 1.37 send (captured with
-v=8), and objects client-go encodes (tests/support/protobuf_vectors, written by
`tools/protoschema -vectors`) against what json.Marshal gives of the same Go objects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.protobuf_bodies import CONFIGMAP, SERVICE
from vk_sandbox.api.protobuf import ProtobufError, UnsupportedKindError, decodable, decode
from vk_sandbox.api.resources import METRICS_GROUP, RESOURCES


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
        "status": {"loadBalancer": {}},  # a struct: json.Marshal writes it, omitempty or not
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


VECTORS = Path(__file__).parents[1] / "support" / "protobuf_vectors"


def _without_nulls(value: Any) -> Any:
    """A zero metav1.Time is `null` in Go's JSON and absent from the protobuf; Go's decoder reads
    both as the zero time."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


@pytest.mark.parametrize("name", sorted(p.stem for p in VECTORS.glob("*.pb")))
def test_a_client_go_protobuf_body_reads_as_its_json(name: str) -> None:
    """Pointers to zero values kept, omitempty zeros left out, inline members (a volume's source,
    a probe's handler), quantities, int-or-strings, times and micro-times, bytes."""
    expected = json.loads((VECTORS / f"{name}.json").read_text())
    assert decode((VECTORS / f"{name}.pb").read_bytes()) == _without_nulls(expected)


def test_every_kind_the_emulator_serves_decodes() -> None:
    """A resource added to the emulator without `make protobuf-schema` fails here."""
    for info in RESOURCES.values():
        if info.group != METRICS_GROUP:
            assert decodable(info.api_version, info.kind), info.kind
