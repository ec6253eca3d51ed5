"""Env resolution and $(VAR) expansion, as the kubelet does them."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest

from tests.support import manifests
from vk_common.expansion import expand
from vk_provider.pods.env import PodAddresses, resolve_container_env
from vk_provider.runtime.types import ContainerConfigError

POD = manifests.pod(
    "web",
    [],
    namespace="ns1",
    uid="u-1",
    labels={"app": "web", "tier": "front"},
    annotations={"note": "hi"},
    nodeName="vk-1",
    serviceAccountName="sa",
)
OBJECTS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("configmap", "ns1", "cfg"): {"data": {"color": "blue", "size": "L", "bad-key!": "x", "1x": "y"}},
    ("secret", "ns1", "sec"): {"data": {"password": base64.b64encode(b"s3cret").decode()}},
}


async def getter(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
    return OBJECTS.get((kind, namespace, name))


async def resolve(container: dict[str, Any], **kw: Any) -> Any:
    return await resolve_container_env(
        POD,
        {"name": "c", **container},
        getter=getter,
        addresses=kw.get("addresses", PodAddresses(("172.17.0.5",), ("10.0.0.1",))),
        node_allocatable={"cpu": "4", "memory": "8Gi"},
    )


def test_expand_rules() -> None:
    values = {"A": "1", "B": "two"}.get
    assert expand("$(A)-$(B)", values) == "1-two"
    assert expand("$$(A)", values) == "$(A)"
    assert expand("$(MISSING)", values) == "$(MISSING)"
    assert expand("$(A", values) == "$(A"
    assert expand("a$b$", values) == "a$b$"
    assert expand("$$$(A)", values) == "$1"
    assert expand("", values) == ""


async def test_values_expand_over_earlier_vars_only() -> None:
    got = await resolve(
        {
            "env": [
                {"name": "A", "value": "x"},
                {"name": "B", "value": "$(A)-$(C)"},
                {"name": "C", "value": "c"},
            ]
        }
    )
    assert dict(got.env) == {"A": "x", "B": "x-$(C)", "C": "c"}


async def test_field_refs_including_pod_and_host_ip() -> None:
    paths = {
        "N": "metadata.name",
        "NS": "metadata.namespace",
        "UID": "metadata.uid",
        "L": "metadata.labels['app']",
        "AN": "metadata.annotations['note']",
        "NODE": "spec.nodeName",
        "SA": "spec.serviceAccountName",
        "IP": "status.podIP",
        "IPS": "status.podIPs",
        "HIP": "status.hostIP",
        "HIPS": "status.hostIPs",
        "NOPE": "metadata.labels['none']",
    }
    got = await resolve(
        {"env": [{"name": k, "valueFrom": {"fieldRef": {"fieldPath": v}}} for k, v in paths.items()]}
    )
    assert dict(got.env) == {
        "N": "web",
        "NS": "ns1",
        "UID": "u-1",
        "L": "web",
        "AN": "hi",
        "NODE": "vk-1",
        "SA": "sa",
        "IP": "172.17.0.5",
        "IPS": "172.17.0.5",
        "HIP": "10.0.0.1",
        "HIPS": "10.0.0.1",
        "NOPE": "",
    }


async def test_resource_field_ref_with_divisor_and_node_default() -> None:
    container = {
        "resources": {"limits": {"memory": "64Mi"}, "requests": {"cpu": "250m"}},
        "env": [
            {
                "name": "MEM",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
            },
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}},
            {"name": "CPU1", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu"}}},
            {"name": "LCPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
        ],
    }
    got = await resolve(container)
    assert dict(got.env) == {"MEM": "64", "CPU": "250", "CPU1": "1", "LCPU": "4"}


async def test_config_map_and_secret_keys_optional_honoured() -> None:
    got = await resolve(
        {
            "env": [
                {"name": "COLOR", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "color"}}},
                {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "password"}}},
                {
                    "name": "OPT",
                    "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "no", "optional": True}},
                },
                {
                    "name": "OPT2",
                    "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k", "optional": True}},
                },
            ]
        }
    )
    assert dict(got.env) == {"COLOR": "blue", "PW": "s3cret"}


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ({"configMapKeyRef": {"name": "cfg", "key": "x"}}, "couldn't find key x in ConfigMap ns1/cfg"),
        ({"configMapKeyRef": {"name": "y", "key": "x"}}, 'configmap "y" not found'),
        ({"secretKeyRef": {"name": "sec", "key": "x"}}, "couldn't find key x in Secret ns1/sec"),
        ({"secretKeyRef": {"name": "y", "key": "x"}}, 'secret "y" not found'),
    ],
)
async def test_missing_mandatory_reference_is_a_config_error(ref: dict[str, Any], message: str) -> None:
    with pytest.raises(ContainerConfigError) as err:
        await resolve({"env": [{"name": "V", "valueFrom": ref}]})
    assert err.value.message == message
    assert err.value.reason == "CreateContainerConfigError"


async def test_env_from_takes_every_key_with_its_prefix_and_env_overrides() -> None:
    # Keys that are not C identifiers (`bad-key!`, `1x`) are variables too, as in the kubelet
    # since RelaxedEnvironmentVariableValidation went GA (the upstream ConfigMap and Secret
    # "consumable via the environment" conformance specs use `data-1`).
    got = await resolve(
        {
            "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "P_"}, {"secretRef": {"name": "sec"}}],
            "env": [{"name": "P_size", "value": "XL-$(P_color)"}],
        }
    )
    env = dict(got.env)
    assert env == {
        "P_color": "blue",
        "P_size": "XL-blue",
        "P_1x": "y",
        "P_bad-key!": "x",
        "password": "s3cret",
    }


async def test_env_from_missing_mandatory_and_optional() -> None:
    with pytest.raises(ContainerConfigError, match='configmap "nope" not found'):
        await resolve({"envFrom": [{"configMapRef": {"name": "nope"}}]})
    got = await resolve({"envFrom": [{"configMapRef": {"name": "nope", "optional": True}}]})
    assert got.env == ()


async def test_command_and_args_expand_over_the_final_env() -> None:
    got = await resolve(
        {
            "command": ["sh", "-c", "echo $(MSG) $$(MSG) $(NOPE)"],
            "args": ["$(IP)"],
            "env": [
                {"name": "MSG", "value": "hello"},
                {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            ],
        }
    )
    assert got.command == ("sh", "-c", "echo hello $(MSG) $(NOPE)")
    assert got.args == ("172.17.0.5",)
    bare = await resolve({})
    assert bare.command is None and bare.args is None


async def test_unsupported_field_path() -> None:
    with pytest.raises(ContainerConfigError, match="unsupported fieldPath"):
        await resolve({"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]})
