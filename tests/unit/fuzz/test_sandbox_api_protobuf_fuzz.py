"""Fuzzing the sandbox's protobuf request-body decoder (vk_sandbox.api.protobuf.decode).

What is fuzzed: the bodies kubectl sends (a ConfigMap and a Service captured from kubectl)
with their bytes mutated, bodies built from the `k8s\\x00` envelope around arbitrary bytes, and
arbitrary bytes. The property: `decode` returns the object's dict or raises `ProtobufError`
(which the handlers answer with 400/415), never another exception.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzzing import budget, mutated_bytes
from tests.support.protobuf_bodies import CONFIGMAP, SERVICE
from vk_sandbox.api.protobuf import MAGIC, ProtobufError, decode


def _decodes_or_protobuf_error(body: bytes) -> None:
    try:
        obj = decode(body)
    except ProtobufError:
        return
    assert isinstance(obj, dict) and isinstance(obj["metadata"], dict)


@budget(2000)
@given(body=mutated_bytes(CONFIGMAP, max_mutations=3) | mutated_bytes(SERVICE, max_mutations=3))
def test_mutated_kubectl_bodies_decode_or_raise_protobuf_error(body: bytes) -> None:
    _decodes_or_protobuf_error(body)


@budget(1000)
@given(rest=st.binary(max_size=200), magic=st.booleans())
def test_arbitrary_bytes_decode_or_raise_protobuf_error(rest: bytes, magic: bool) -> None:
    _decodes_or_protobuf_error(MAGIC + rest if magic else rest)
