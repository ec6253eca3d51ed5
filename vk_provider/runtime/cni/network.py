"""A pod's network through CNI: ADD when its sandbox starts, CHECK when a restarted provider
adopts it, DEL when the sandbox goes.

What lives here: `CNISettings` (conf dir, bin dirs, cache dir, timeout), `PodNetworkRequest`
(the pod's namespace, name and UID, the sandbox's id and network namespace path, its
hostPorts) and `CNINetwork`: `status` (None when the conf dir has a usable list, else the
kubelet's not-ready message), `add` (each plugin of the list in order, each given the one
before's result as `prevResult`, `runtimeConfig` with the capabilities a plugin asks for
(`portMappings`); the final result cached on disk; a failure DELs what was added and raises
`CNIPluginError`), `check` and `delete` (from the cached ADD: the same list, CNI_ARGS and
result, plugins in reverse for DEL; the cache entry goes after a DEL that succeeded) and `ips`
(the sandbox interface's addresses of a cached result, IPv4 and IPv6 as the result gives them).
Must not: know about an engine (the caller gives the netns path) or block the event loop.

Upstream: github.com/containernetworking/cni@v1.1.2 libcni/api.go (AddNetworkList,
CheckNetworkList, DelNetworkList, buildOneConfig, injectRuntimeConfig); k8s.io/kubernetes@v1.23.17
pkg/kubelet/dockershim/network/cni/cni.go (buildCNIRuntimeConf: IfName eth0, CNI_ARGS,
portMappings; checkInitialized: "cni config uninitialized"); the kubelet's node message:
pkg/kubelet/kubelet.go ("container runtime network not ready: ...") with containerd's
"cni plugin not initialized".
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vk_provider.runtime.cni import cache
from vk_provider.runtime.cni.conf import (
    CNIConfigError,
    NetworkList,
    find_plugin,
    load_network,
    parse_network,
    plugin_dirs,
)
from vk_provider.runtime.cni.invoke import CNIPluginError, PluginArgs, exec_plugin

IFNAME = "eth0"  # pkg/kubelet/dockershim/network/network.go DefaultInterfaceName
NOT_READY_MESSAGE = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)


@dataclass(frozen=True)
class CNISettings:
    conf_dir: str
    bin_dirs: tuple[str, ...]
    cache_dir: str
    timeout: float


@dataclass(frozen=True)
class PodNetworkRequest:
    namespace: str
    name: str
    uid: str
    sandbox_id: str
    netns: str
    port_mappings: tuple[Mapping[str, Any], ...] = ()

    def cni_args(self) -> tuple[tuple[str, str], ...]:
        return (
            ("IgnoreUnknown", "1"),
            ("K8S_POD_NAMESPACE", self.namespace),
            ("K8S_POD_NAME", self.name),
            ("K8S_POD_INFRA_CONTAINER_ID", self.sandbox_id),
            ("K8S_POD_UID", self.uid),
        )


def _at_least_040(version: str) -> bool:
    """CHECK, and DEL with the cached result, came with spec 0.4.0 (libcni)."""
    try:
        return tuple(int(p) for p in version.split(".")[:3]) >= (0, 4, 0)
    except ValueError:
        return False


def _plugin_config(
    network: NetworkList, plugin: Mapping[str, Any], prev: Mapping[str, Any] | None, caps: Mapping[str, Any]
) -> bytes:
    """buildOneConfig + injectRuntimeConfig: name, cniVersion, prevResult, runtimeConfig."""
    conf = {**plugin, "name": network.name, "cniVersion": network.cni_version}
    if prev is not None:
        conf["prevResult"] = dict(prev)
    wanted = {c for c, on in (plugin.get("capabilities") or {}).items() if on}
    runtime_config = {c: v for c, v in caps.items() if c in wanted}
    if runtime_config:
        conf["runtimeConfig"] = runtime_config
    return json.dumps(conf).encode()


def result_ips(result: Mapping[str, Any]) -> tuple[str, ...]:
    """The addresses of the sandbox's interfaces (every one when the result names no interface)."""
    interfaces = result.get("interfaces") or []
    out: list[str] = []
    for entry in result.get("ips") or []:
        index = entry.get("interface")
        if isinstance(index, int) and 0 <= index < len(interfaces) and not interfaces[index].get("sandbox"):
            continue
        with contextlib.suppress(ValueError, TypeError):
            out.append(str(ipaddress.ip_interface(str(entry.get("address", ""))).ip))
    for legacy in ("ip4", "ip6"):  # spec 0.2.0
        value = (result.get(legacy) or {}).get("ip")
        with contextlib.suppress(ValueError, TypeError):
            if value:
                out.append(str(ipaddress.ip_interface(str(value)).ip))
    return tuple(dict.fromkeys(out))


class CNINetwork:
    def __init__(self, settings: CNISettings) -> None:
        self.settings = settings

    def _args(
        self, command: str, container_id: str, netns: str, cni_args: Sequence[tuple[str, str]]
    ) -> PluginArgs:
        return PluginArgs(
            command=command,
            container_id=container_id,
            netns=netns,
            ifname=IFNAME,
            args=";".join(f"{k}={v}" for k, v in cni_args),
            path=plugin_dirs(self.settings.bin_dirs),
        )

    async def _run(
        self,
        network: NetworkList,
        plugin: Mapping[str, Any],
        args: PluginArgs,
        prev: Mapping[str, Any] | None,
        caps: Mapping[str, Any],
    ) -> bytes:
        path = find_plugin(str(plugin.get("type", "")), self.settings.bin_dirs)
        if path is None:
            where = ", ".join(self.settings.bin_dirs)
            raise CNIPluginError(f'failed to find plugin "{plugin.get("type")}" in path [{where}]')
        try:
            return await exec_plugin(
                path, args, _plugin_config(network, plugin, prev, caps), self.settings.timeout
            )
        except CNIPluginError as exc:
            action = {"ADD": "add", "DEL": "delete", "CHECK": "check"}.get(args.command, args.command)
            raise CNIPluginError(
                f'plugin type="{plugin.get("type")}" failed ({action}): {exc.message}'
            ) from exc

    async def status(self) -> str | None:
        """None when the conf dir has a usable network list; the node's not-ready message otherwise."""
        try:
            await asyncio.to_thread(load_network, self.settings.conf_dir, self.settings.bin_dirs)
        except CNIConfigError:
            return NOT_READY_MESSAGE
        return None

    async def add(self, request: PodNetworkRequest) -> tuple[str, ...]:
        """Set up the sandbox's network; its addresses. Raises CNIPluginError, having undone it."""
        try:
            network = await asyncio.to_thread(load_network, self.settings.conf_dir, self.settings.bin_dirs)
        except CNIConfigError as exc:
            raise CNIPluginError(f"network plugin is not ready: cni config uninitialized ({exc})") from exc
        caps: dict[str, Any] = {"portMappings": [dict(p) for p in request.port_mappings]}
        args = self._args("ADD", request.sandbox_id, request.netns, request.cni_args())
        result: Mapping[str, Any] | None = None
        try:
            for plugin in network.plugins:
                out = await self._run(network, plugin, args, result, caps)
                try:
                    result = json.loads(out)
                except ValueError as exc:
                    raise CNIPluginError(
                        f'plugin type="{plugin.get("type")}" gave a result that is not JSON'
                    ) from exc
            entry = cache.CachedAdd(
                request.sandbox_id, network.name, IFNAME, network.raw, request.cni_args(), caps, result or {}
            )
            await asyncio.to_thread(cache.write_cached, self.settings.cache_dir, entry)
        except (CNIPluginError, OSError) as exc:
            with contextlib.suppress(CNIPluginError):
                await self._delete_with(
                    network, request.sandbox_id, request.netns, request.cni_args(), caps, None
                )
            if isinstance(exc, OSError):
                raise CNIPluginError(f"cannot cache the ADD result: {exc}") from exc
            raise
        return result_ips(result or {})

    async def _cached(self, sandbox_id: str) -> tuple[cache.CachedAdd, NetworkList] | None:
        entries = await asyncio.to_thread(cache.cached_entries, self.settings.cache_dir, IFNAME)
        if sandbox_id not in entries:
            return None
        name = entries[sandbox_id][0]
        found = await asyncio.to_thread(cache.read_cached, self.settings.cache_dir, name, sandbox_id, IFNAME)
        if found is None:
            return None
        try:
            return found, parse_network(found.config, f"{name}.conflist")
        except CNIConfigError:
            return None

    async def ips(self, sandbox_id: str) -> tuple[str, ...]:
        """The addresses of the sandbox's cached ADD (none without one)."""
        cached = await self._cached(sandbox_id)
        return result_ips(cached[0].result) if cached is not None else ()

    async def check(self, sandbox_id: str, netns: str) -> None:
        """CHECK the sandbox's network against its cached ADD; raises CNIPluginError."""
        cached = await self._cached(sandbox_id)
        if cached is None:
            raise CNIPluginError(f"no cached ADD result for sandbox {sandbox_id[:12]}")
        entry, network = cached
        if not _at_least_040(network.cni_version) or network.disable_check:
            return
        args = self._args("CHECK", sandbox_id, netns, entry.cni_args)
        for plugin in network.plugins:
            await self._run(network, plugin, args, entry.result, entry.capability_args)

    async def delete(self, sandbox_id: str, netns: str) -> None:
        """DEL the sandbox's network (nothing to do without a cached ADD); the cache entry goes
        once every plugin said yes. Raises CNIPluginError."""
        cached = await self._cached(sandbox_id)
        if cached is None:
            return
        entry, network = cached
        prev = entry.result if _at_least_040(network.cni_version) else None
        await self._delete_with(network, sandbox_id, netns, entry.cni_args, entry.capability_args, prev)

    async def _delete_with(
        self,
        network: NetworkList,
        sandbox_id: str,
        netns: str,
        cni_args: Sequence[tuple[str, str]],
        caps: Mapping[str, Any],
        prev: Mapping[str, Any] | None,
    ) -> None:
        args = self._args("DEL", sandbox_id, netns, cni_args)
        for plugin in reversed(network.plugins):
            await self._run(network, plugin, args, prev, caps)
        await asyncio.to_thread(
            cache.remove_cached, self.settings.cache_dir, network.name, sandbox_id, IFNAME
        )
