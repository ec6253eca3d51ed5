"""Decoding the Kubernetes protobuf wire format of request bodies.

Go clients (kubectl's typed clients, the upstream e2e suite, anything built on client-go with
`application/vnd.kubernetes.protobuf`) POST and PUT protobuf bodies and do not fall back to JSON
on a 415. What lives here: a minimal protobuf reader, the `k8s\\x00` + runtime.Unknown envelope
(`staging/src/k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go`), and `decode`,
which turns a body into the dict a Go client's `json.Marshal` of the same object gives: field
names, `,inline` members, and the zero values `omitempty` leaves out (a pointer's zero stays).
The field table, `protobuf_schema.json`, is generated from the k8s.io/api Go types by
`tools/protoschema` (`make protobuf-schema`) for the group versions the emulator serves.
Must not: encode, or guess fields of kinds the table does not hold (callers answer 415 for those).
"""

from __future__ import annotations

import base64
import functools
import json
import struct
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

MAGIC = b"k8s\x00"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
# One row of a message: [number, json name, type, flags]; flags: r repeated, m map (the type is
# the value's), o omitempty, p pointer, i inline (the member's fields join its parent's).
_Row = tuple[int, str, str, str]
_INT_TYPES = ("int", "uint")


class ProtobufError(ValueError):
    """A body that is not a well-formed message (the real server answers 400)."""


class UnsupportedKindError(ProtobufError):
    """A kind the field table does not hold (callers answer 415)."""


@functools.cache
def _schema() -> tuple[dict[str, str], dict[str, dict[int, _Row]]]:
    """kinds ("<apiVersion>/<Kind>" -> message) and messages (name -> number -> row)."""
    data = json.loads(resources.files("vk_sandbox.api").joinpath("protobuf_schema.json").read_text())
    messages = {name: {row[0]: tuple(row) for row in rows} for name, rows in data["messages"].items()}
    return data["kinds"], messages


def decodable(api_version: str, kind: str) -> bool:
    return f"{api_version}/{kind}" in _schema()[0]


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


def _signed(raw: int) -> int:
    return raw - (1 << 64) if raw >= 1 << 63 else raw


def _bytes(raw: int | bytes, type_: str) -> bytes:
    if not isinstance(raw, bytes):
        raise ProtobufError(f"{type_} is not length-delimited")
    return raw


def _timestamp(raw: int | bytes, type_: str) -> str | None:
    """metav1.Time (seconds, as time_proto.go keeps them) or MicroTime in their JSON form; None
    for the zero time (an empty message), which JSON writes as null."""
    fields = dict(_fields(_bytes(raw, type_)))
    seconds, nanos = fields.get(1), fields.get(2, 0)
    if not isinstance(seconds, int) or not isinstance(nanos, int):
        return None
    seconds = _signed(seconds)
    if not _MIN_SECONDS <= seconds <= _MAX_SECONDS:
        raise ProtobufError(f"time out of range: {seconds} seconds")
    moment = _EPOCH + timedelta(seconds=seconds)
    # isoformat, not strftime: glibc's %Y does not pad a year below 1000 to four digits, and a
    # client's zero-ish MicroTime (time.Unix(2, 0) of year 1 in Go) must read as "0001-...".
    text = moment.replace(tzinfo=None).isoformat(timespec="seconds")
    if type_ == "time":
        return text + "Z"
    return text + f".{_signed(nanos) // 1000 % 1_000_000:06d}Z"


def _value(type_: str, raw: int | bytes) -> Any:
    """One field's value in its JSON form."""
    if type_ == "string":
        return _text(_bytes(raw, type_))
    if type_ == "bytes":
        return base64.b64encode(_bytes(raw, type_)).decode()  # the JSON form of []byte
    if type_ in ("bool", *_INT_TYPES, "double"):
        if not isinstance(raw, int):
            raise ProtobufError(f"wire type does not match {type_}")
        if type_ == "bool":
            return bool(raw)
        if type_ == "double":
            return struct.unpack("<d", raw.to_bytes(8, "little"))[0]
        return _signed(raw) if type_ == "int" else raw
    if type_ in ("time", "microtime"):
        return _timestamp(raw, type_)
    inner = dict(_fields(_bytes(raw, type_)))
    if type_ == "quantity":  # resource.Quantity: `optional string string = 1`, canonical already
        return _text(_bytes(inner.get(1, b"0"), type_))
    if type_ == "intorstring":  # intstr.IntOrString: type (0 int, 1 string), intVal, strVal
        if inner.get(1) == 1:
            return _text(_bytes(inner.get(3, b""), type_))
        int_val = inner.get(2, 0)
        return _signed(int_val) if isinstance(int_val, int) else 0
    if type_ in ("raw", "fieldsv1"):  # RawExtension, FieldsV1: JSON bytes in field 1
        try:
            return json.loads(_bytes(inner.get(1, b"null"), type_))
        except ValueError as e:
            raise ProtobufError(f"{type_} does not hold JSON: {e}") from None
    if type_ == "strings":  # a named []string as a map value: `repeated string items = 1`
        return [_text(_bytes(v, type_)) for n, v in _fields(_bytes(raw, type_)) if n == 1]
    return _message(type_, _bytes(raw, type_))


def _is_zero(value: Any) -> bool:
    return value is None or (value in ("", 0, False) and not isinstance(value, float | dict | list))


def _map_entry(type_: str, data: bytes) -> tuple[str, Any]:
    entry = dict(_fields(data))
    key = _text(_bytes(entry.get(1, b""), "map key"))
    if 2 not in entry:
        return key, _value(type_, b"" if type_ not in ("bool", *_INT_TYPES, "double") else 0)
    return key, _value(type_, entry[2])


def _message(name: str, data: bytes) -> dict[str, Any]:
    messages = _schema()[1]
    rows = messages.get(name)
    if rows is None:
        raise ProtobufError(f"no field table for {name}")
    out: dict[str, Any] = {}
    for number, raw in _fields(data):
        row = rows.get(number)
        if row is None:
            continue  # an unknown field: gogo's Unmarshal skips it
        _, json_name, type_, flags = row
        if "m" in flags:
            key, item = _map_entry(type_, _bytes(raw, "map entry"))
            out.setdefault(json_name, {})[key] = item
        elif "r" in flags:
            if type_ in _INT_TYPES and isinstance(raw, bytes):  # a packed repeated varint
                packed, pos = [], 0
                while pos < len(raw):
                    item, pos = _varint(raw, pos)
                    packed.append(_value(type_, item))
                out.setdefault(json_name, []).extend(packed)
            else:
                out.setdefault(json_name, []).append(_value(type_, raw))
        elif "i" in flags:
            out.update(_value(type_, raw))
        else:
            value = _value(type_, raw)
            if value is None or ("o" in flags and "p" not in flags and _is_zero(value)):
                out.pop(json_name, None)  # what json.Marshal leaves out (omitempty), or null
            elif json_name:
                out[json_name] = value
    return out


def decode(body: bytes) -> dict[str, Any]:
    """The object in a protobuf-encoded request body, as its JSON-shaped dict."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    envelope = dict(_fields(body[len(MAGIC) :]))
    type_meta = {
        n: _text(_bytes(v, "typeMeta")) for n, v in _fields(_bytes(envelope.get(1, b""), "typeMeta"))
    }
    api_version, kind = type_meta.get(1, ""), type_meta.get(2, "")
    message = _schema()[0].get(f"{api_version}/{kind}")
    if message is None:
        raise UnsupportedKindError(f"protobuf decoding of {kind or 'this kind'} is not supported")
    obj = _message(message, _bytes(envelope.get(2, b""), "raw"))
    if any(row[1] == "metadata" for row in _schema()[1][message].values()):
        obj.setdefault("metadata", {})  # json.Marshal writes the struct, empty or not
    return {"apiVersion": api_version, "kind": kind, **obj}
