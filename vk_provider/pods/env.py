"""Container environment resolution, as the kubelet does it before creating a container.

What lives here: `resolve_container_env` (envFrom with prefix, env from value /
fieldRef / resourceFieldRef / configMapKeyRef / secretKeyRef, then command and args expansion;
the service variables of pods/service_env.py join last). ConfigMaps and Secrets come through an
injected async getter, so this module needs no apiserver. A missing mandatory reference raises
`ContainerConfigError` with the kubelet's message.
Must not: talk to the apiserver or Docker itself, or log values (they may be secrets).

Upstream: pkg/kubelet/kubelet_pods.go (makeEnvironmentVariables,
podFieldSelectorRuntimeValue),
pkg/api/v1/resource/helpers.go (ExtractContainerResourceValue); the `$(VAR)` expansion is
`vk_common.expansion`.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from vk_common.expansion import expand
from vk_common.objects import uid as uid_of
from vk_common.quantity import parse_quantity
from vk_provider.runtime.types import ContainerConfigError

# (kind, namespace, name) -> the object as a dict, or None when it does not exist.
# kind is "configmap" or "secret".
ObjectGetter = Callable[[str, str, str], Awaitable[Mapping[str, Any] | None]]

_LABEL_PATH = re.compile(r"metadata\.(labels|annotations)\['(.*)'\]")


@dataclass(frozen=True)
class PodAddresses:
    """The addresses fieldRefs may ask for; known once the sandbox has its IP."""

    pod_ips: tuple[str, ...] = ()
    host_ips: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResolvedEnv:
    env: tuple[tuple[str, str], ...]
    command: tuple[str, ...] | None
    args: tuple[str, ...] | None


def field_value(pod: Mapping[str, Any], path: str, addresses: PodAddresses) -> str:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple: dict[str, str] = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": uid_of(pod),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": addresses.pod_ips[0] if addresses.pod_ips else "",
        "status.podIPs": ",".join(addresses.pod_ips),
        "status.hostIP": addresses.host_ips[0] if addresses.host_ips else "",
        "status.hostIPs": ",".join(addresses.host_ips),
    }
    if path in simple:
        return simple[path]
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1]) or {}
        # fieldpath.FormatMap: sorted key="value" lines
        return "\n".join(f'{k}="{values[k]}"' for k in sorted(values))
    match = _LABEL_PATH.fullmatch(path)
    if match:
        return str((meta.get(match[1]) or {}).get(match[2], ""))
    raise ContainerConfigError(f"unsupported fieldPath: {path}")


def resource_value(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    ref: Mapping[str, Any],
    node_allocatable: Mapping[str, str],
) -> str:
    name = ref.get("containerName") or container.get("name", "")
    target = container
    if name != container.get("name"):
        spec = pod.get("spec") or {}
        every = (spec.get("containers") or []) + (spec.get("initContainers") or [])
        matches = [c for c in every if c.get("name") == name]
        if not matches:
            raise ContainerConfigError(f"container {name} not found")
        target = matches[0]
    resource = ref.get("resource", "")
    kind, _, res = resource.partition(".")
    if kind not in ("limits", "requests") or res not in ("cpu", "memory", "ephemeral-storage"):
        raise ContainerConfigError(f"unsupported container resource : {resource}")
    resources = target.get("resources") or {}
    raw = (resources.get(kind) or {}).get(res)
    if raw is None and kind == "limits":
        # The kubelet defaults missing limits to the node's allocatable for the downward API.
        raw = node_allocatable.get(res)
    value = parse_quantity(str(raw)) if raw is not None else Decimal(0)
    divisor = parse_quantity(str(ref.get("divisor") or "1"))
    if divisor == 0:
        divisor = Decimal(1)
    return str(math.ceil(value / divisor))


def _decode(kind: str, obj: Mapping[str, Any]) -> dict[str, str]:
    if kind == "secret":
        data = {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in (obj.get("data") or {}).items()}
        data.update(obj.get("stringData") or {})
        return data
    return {k: str(v) for k, v in (obj.get("data") or {}).items()}


_KIND_TITLE = {"configmap": "ConfigMap", "secret": "Secret"}


class _Lookups:
    """Caches one fetch per referenced object for one container's resolution."""

    def __init__(self, getter: ObjectGetter, namespace: str) -> None:
        self._getter = getter
        self._namespace = namespace
        self._cache: dict[tuple[str, str], dict[str, str] | None] = {}

    async def data(self, kind: str, name: str, optional: bool) -> dict[str, str] | None:
        key = (kind, name)
        if key not in self._cache:
            obj = await self._getter(kind, self._namespace, name)
            self._cache[key] = None if obj is None else _decode(kind, obj)
        found = self._cache[key]
        if found is None and not optional:
            raise ContainerConfigError(f'{kind} "{name}" not found')
        return found

    async def key(self, kind: str, ref: Mapping[str, Any]) -> str | None:
        name = ref.get("name", "")
        optional = bool(ref.get("optional", False))
        data = await self.data(kind, name, optional)
        if data is None:
            return None
        key = ref.get("key", "")
        if key not in data:
            if optional:
                return None
            raise ContainerConfigError(
                f"couldn't find key {key} in {_KIND_TITLE[kind]} {self._namespace}/{name}"
            )
        return data[key]


async def _env_from(container: Mapping[str, Any], lookups: _Lookups, values: dict[str, str]) -> None:
    """Every key of each envFrom ConfigMap/Secret, prefixed, as the kubelet of 1.37 does
    (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables): since RelaxedEnvironmentVariableValidation
    went GA no key is skipped, so `data-1` or `1x` become variables too (the apiserver has
    already checked the keys and the prefix)."""
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        for kind, key in (("configmap", "configMapRef"), ("secret", "secretRef")):
            ref = source.get(key)
            if ref is None:
                continue
            data = await lookups.data(kind, ref.get("name", ""), bool(ref.get("optional", False)))
            values.update({prefix + k: v for k, v in (data or {}).items()})


async def resolve_container_env(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    *,
    getter: ObjectGetter,
    addresses: PodAddresses,
    node_allocatable: Mapping[str, str] | None = None,
    service_env: Mapping[str, str] | None = None,
) -> ResolvedEnv:
    """Resolve one container's environment, command and args; raise ContainerConfigError.

    `service_env` (pods/service_env.py) is visible to `$(VAR)` references after the
    container's own variables, and fills in the names the container does not define.
    """
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    lookups = _Lookups(getter, namespace)
    services = service_env or {}
    values: dict[str, str] = {}
    await _env_from(container, lookups, values)

    def lookup(name: str) -> str | None:  # expansion.MappingFuncFor(tmpEnv, serviceEnv)
        return values[name] if name in values else services.get(name)

    for item in container.get("env") or []:
        name = item.get("name", "")
        source = item.get("valueFrom")
        if source is None:
            values[name] = expand(str(item.get("value", "")), lookup)
            continue
        value: str | None
        if "fieldRef" in source:
            value = field_value(pod, source["fieldRef"].get("fieldPath", ""), addresses)
        elif "resourceFieldRef" in source:
            value = resource_value(pod, container, source["resourceFieldRef"], node_allocatable or {})
        elif "configMapKeyRef" in source:
            value = await lookups.key("configmap", source["configMapKeyRef"])
        elif "secretKeyRef" in source:
            value = await lookups.key("secret", source["secretKeyRef"])
        else:
            raise ContainerConfigError(f"unsupported valueFrom in env {name}")
        if value is not None:
            values[name] = value
    values.update({k: v for k, v in services.items() if k not in values})
    return ResolvedEnv(
        env=tuple(values.items()),
        command=_expand_list(container.get("command"), values),
        args=_expand_list(container.get("args"), values),
    )


def _expand_list(items: Sequence[str] | None, values: Mapping[str, str]) -> tuple[str, ...] | None:
    if not items:
        return None
    return tuple(expand(str(item), values.get) for item in items)
