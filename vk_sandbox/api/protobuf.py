"""Decoding the Kubernetes protobuf wire format for the few kinds kubectl sends that way.

kubectl's typed clients (`kubectl create configmap|secret|namespace|serviceaccount`) POST
`application/vnd.kubernetes.protobuf` bodies and do not fall back to JSON on 415. What lives
here: a minimal protobuf reader, the `k8s\\x00` + runtime.Unknown envelope
(`staging/src/k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go`), and the field
numbers of those kinds and of ObjectMeta from their `generated.proto` files, turning a body into
the object's JSON-shaped dict. Must not: encode, or guess fields of kinds not listed (callers
answer 415 for those).
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

MAGIC = b"k8s\x00"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# message -> field number -> (json name, type, repeated); types: string, bytes, int64, bool, Time,
# map (string->string), bytesmap (string->bytes), or another message name.
_Field = tuple[str, str, bool]
_MESSAGES: dict[str, dict[int, _Field]] = {
    "TypeMeta": {1: ("apiVersion", "string", False), 2: ("kind", "string", False)},
    "Unknown": {1: ("typeMeta", "TypeMeta", False), 2: ("raw", "bytes", False)},
    "ObjectMeta": {
        1: ("name", "string", False),
        2: ("generateName", "string", False),
        3: ("namespace", "string", False),
        5: ("uid", "string", False),
        6: ("resourceVersion", "string", False),
        7: ("generation", "int64", False),
        8: ("creationTimestamp", "Time", False),
        9: ("deletionTimestamp", "Time", False),
        10: ("deletionGracePeriodSeconds", "int64", False),
        11: ("labels", "map", False),
        12: ("annotations", "map", False),
        13: ("ownerReferences", "OwnerReference", True),
        14: ("finalizers", "string", True),
    },
    "OwnerReference": {
        1: ("kind", "string", False),
        3: ("name", "string", False),
        4: ("uid", "string", False),
        5: ("apiVersion", "string", False),
        6: ("controller", "bool", False),
        7: ("blockOwnerDeletion", "bool", False),
    },
    "Time": {1: ("seconds", "int64", False), 2: ("nanos", "int64", False)},
    "ConfigMap": {
        1: ("metadata", "ObjectMeta", False),
        2: ("data", "map", False),
        3: ("binaryData", "bytesmap", False),
        4: ("immutable", "bool", False),
    },
    "Secret": {
        1: ("metadata", "ObjectMeta", False),
        2: ("data", "bytesmap", False),
        3: ("type", "string", False),
        4: ("stringData", "map", False),
        5: ("immutable", "bool", False),
    },
    "Namespace": {
        1: ("metadata", "ObjectMeta", False),
        2: ("spec", "NamespaceSpec", False),
    },
    "NamespaceSpec": {1: ("finalizers", "string", True)},
    "ServiceAccount": {
        1: ("metadata", "ObjectMeta", False),
        2: ("secrets", "ObjectReference", True),
        3: ("imagePullSecrets", "LocalObjectReference", True),
        4: ("automountServiceAccountToken", "bool", False),
    },
    "ObjectReference": {
        1: ("kind", "string", False),
        2: ("namespace", "string", False),
        3: ("name", "string", False),
        4: ("uid", "string", False),
        5: ("apiVersion", "string", False),
        6: ("resourceVersion", "string", False),
        7: ("fieldPath", "string", False),
    },
    "LocalObjectReference": {1: ("name", "string", False)},
    "CertificateSigningRequest": {
        1: ("metadata", "ObjectMeta", False),
        2: ("spec", "CertificateSigningRequestSpec", False),
        3: ("status", "CertificateSigningRequestStatus", False),
    },
    "CertificateSigningRequestSpec": {
        1: ("request", "bytes", False),
        2: ("username", "string", False),
        3: ("uid", "string", False),
        4: ("groups", "string", True),
        5: ("usages", "string", True),
        7: ("signerName", "string", False),
        8: ("expirationSeconds", "int64", False),
    },
    "CertificateSigningRequestStatus": {
        1: ("conditions", "CertificateSigningRequestCondition", True),
        2: ("certificate", "bytes", False),
    },
    "CertificateSigningRequestCondition": {
        1: ("type", "string", False),
        2: ("reason", "string", False),
        3: ("message", "string", False),
        4: ("lastUpdateTime", "Time", False),
        5: ("lastTransitionTime", "Time", False),
        6: ("status", "string", False),
    },
    "Service": {1: ("metadata", "ObjectMeta", False), 2: ("spec", "ServiceSpec", False)},
    "ServiceSpec": {
        1: ("ports", "ServicePort", True),
        2: ("selector", "map", False),
        3: ("clusterIP", "string", False),
        4: ("type", "string", False),
        5: ("externalIPs", "string", True),
        7: ("sessionAffinity", "string", False),
        8: ("loadBalancerIP", "string", False),
        9: ("loadBalancerSourceRanges", "string", True),
        10: ("externalName", "string", False),
        11: ("externalTrafficPolicy", "string", False),
        12: ("healthCheckNodePort", "int64", False),
        13: ("publishNotReadyAddresses", "bool", False),
        17: ("ipFamilyPolicy", "string", False),
        18: ("clusterIPs", "string", True),
        19: ("ipFamilies", "string", True),
        20: ("allocateLoadBalancerNodePorts", "bool", False),
        21: ("loadBalancerClass", "string", False),
        22: ("internalTrafficPolicy", "string", False),
    },
    "ServicePort": {
        1: ("name", "string", False),
        2: ("protocol", "string", False),
        3: ("port", "int64", False),
        4: ("targetPort", "IntOrString", False),
        5: ("nodePort", "int64", False),
        6: ("appProtocol", "string", False),
    },
    "IntOrString": {
        1: ("type", "int64", False),
        2: ("intVal", "int64", False),
        3: ("strVal", "string", False),
    },
    "TokenRequest": {1: ("metadata", "ObjectMeta", False), 2: ("spec", "TokenRequestSpec", False)},
    "TokenRequestSpec": {
        1: ("audiences", "string", True),
        3: ("boundObjectRef", "BoundObjectReference", False),
        4: ("expirationSeconds", "int64", False),
    },
    "BoundObjectReference": {
        1: ("kind", "string", False),
        2: ("apiVersion", "string", False),
        3: ("name", "string", False),
        4: ("uid", "string", False),
    },
    "SelfSubjectReview": {1: ("metadata", "ObjectMeta", False)},
    "SelfSubjectAccessReview": {
        1: ("metadata", "ObjectMeta", False),
        2: ("spec", "SelfSubjectAccessReviewSpec", False),
    },
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "ResourceAttributes", False),
        2: ("nonResourceAttributes", "NonResourceAttributes", False),
    },
    "ResourceAttributes": {
        1: ("namespace", "string", False),
        2: ("verb", "string", False),
        3: ("group", "string", False),
        4: ("version", "string", False),
        5: ("resource", "string", False),
        6: ("subresource", "string", False),
        7: ("name", "string", False),
    },
    "NonResourceAttributes": {1: ("path", "string", False), 2: ("verb", "string", False)},
}
# kubectl create configmap|secret|namespace|serviceaccount|service|token, certificate approve|deny,
# auth can-i|whoami
DECODABLE_KINDS = (
    "ConfigMap",
    "Secret",
    "Namespace",
    "ServiceAccount",
    "Service",
    "TokenRequest",
    "CertificateSigningRequest",
    "SelfSubjectReview",
    "SelfSubjectAccessReview",
)


class ProtobufError(ValueError):
    """A body that is not a well-formed message (the real server answers 400)."""


class UnsupportedKindError(ProtobufError):
    """A kind this module has no field numbers for (callers answer 415)."""


# What a Go time.Time of metav1.Time marshals to RFC 3339 without ambiguity; a timestamp beyond
# (the real decoder keeps it and prints a year of more than 4 digits) is refused as malformed.
_MIN_SECONDS, _MAX_SECONDS = -62135596800, 253402300799


def _text(raw: bytes) -> str:
    """A proto string: Go keeps invalid UTF-8 as is and encoding/json writes it as U+FFFD."""
    return raw.decode(errors="replace")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & (2**64 - 1), pos
        shift += 7
        if shift >= 70:  # ten bytes hold any 64-bit varint
            raise ProtobufError("integer overflow")


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated field")
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            out.append((number, int.from_bytes(data[pos : pos + size], "little")))
            pos += size
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
    return out


def _map_entry(data: bytes) -> tuple[str, bytes]:
    key, value = "", b""
    for number, raw in _fields(data):
        if number == 1 and isinstance(raw, bytes):
            key = _text(raw)
        elif number == 2 and isinstance(raw, bytes):
            value = raw
    return key, value


def _scalar(type_: str, raw: int | bytes) -> Any:
    """A scalar field in its JSON form (bytes as base64, as encoding/json writes []byte)."""
    if type_ == "string" and isinstance(raw, bytes):
        return _text(raw)
    if type_ == "bytes" and isinstance(raw, bytes):
        return base64.b64encode(raw).decode()  # the JSON form of []byte
    if type_ == "bool" and isinstance(raw, int):
        return bool(raw)
    if type_ == "int64" and isinstance(raw, int):
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    raise ProtobufError(f"wire type does not match {type_}")


def _message(name: str, data: bytes) -> dict[str, Any]:
    schema = _MESSAGES[name]
    out: dict[str, Any] = {}
    for number, raw in _fields(data):
        field = schema.get(number)
        if field is None:
            continue
        json_name, type_, repeated = field
        value: Any
        if type_ in ("map", "bytesmap"):
            if not isinstance(raw, bytes):
                raise ProtobufError("map entry is not length-delimited")
            key, item = _map_entry(raw)
            out.setdefault(json_name, {})[key] = (
                _text(item) if type_ == "map" else base64.b64encode(item).decode()
            )
            continue
        if type_ == "Time":
            if not isinstance(raw, bytes):
                raise ProtobufError("time is not length-delimited")
            seconds = _message("Time", raw).get("seconds")
            if seconds is None:
                continue
            if not _MIN_SECONDS <= seconds <= _MAX_SECONDS:
                raise ProtobufError(f"time out of range: {seconds} seconds")
            value = (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
        elif type_ in _MESSAGES:
            if not isinstance(raw, bytes):
                raise ProtobufError(f"{type_} is not length-delimited")
            value = _message(type_, raw)
            if type_ == "IntOrString":
                value = value.get("strVal", "") if value.get("type") == 1 else value.get("intVal", 0)
        else:
            value = _scalar(type_, raw)
        if repeated:
            out.setdefault(json_name, []).append(value)
        elif value is not False and value not in ("", {}, 0):  # what the JSON form omits (omitempty)
            out[json_name] = value
    return out


def decode(body: bytes) -> dict[str, Any]:
    """The object in a protobuf-encoded request body, as its JSON-shaped dict."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    envelope = _message("Unknown", body[len(MAGIC) :])
    type_meta = envelope.get("typeMeta") or {}
    kind = type_meta.get("kind", "")
    if kind not in DECODABLE_KINDS:
        raise UnsupportedKindError(f"protobuf decoding of {kind or 'this kind'} is not supported")
    obj = _message(kind, base64.b64decode(envelope.get("raw", "")))
    obj.setdefault("metadata", {})
    return {"apiVersion": type_meta.get("apiVersion", "v1"), "kind": kind, **obj}
