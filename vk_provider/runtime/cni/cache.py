"""libcni's cache of ADD results, so CHECK and DEL work after the provider is killed.

What lives here: `CachedAdd` and `write_cached` / `read_cached` / `remove_cached` /
`cached_containers`, the file `<cache dir>/results/<network>-<container id>-<ifname>` in
libcni's layout (kind `cniCacheV1`, containerId, config as base64 of the list's bytes as Go
marshals a []byte, ifName, networkName, cniArgs, capabilityArgs, result), written to a
temporary file and renamed so a kill never leaves half a file.
Must not: run plugins. Blocking (file I/O): call it off the event loop.

Upstream: github.com/containernetworking/cni@v1.1.2 libcni/api.go (cachedInfo, cacheAdd,
getCacheFilePath, getCachedResult, cacheDel).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CNI_CACHE_V1 = "cniCacheV1"


@dataclass(frozen=True)
class CachedAdd:
    container_id: str
    network_name: str
    ifname: str
    config: bytes  # the network configuration list the ADD ran with
    cni_args: tuple[tuple[str, str], ...]
    capability_args: Mapping[str, Any]
    result: Mapping[str, Any]


def _path(cache_dir: str, network: str, container_id: str, ifname: str) -> Path:
    return Path(cache_dir) / "results" / f"{network}-{container_id}-{ifname}"


def write_cached(cache_dir: str, entry: CachedAdd) -> None:
    path = _path(cache_dir, entry.network_name, entry.container_id, entry.ifname)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = {
        "kind": CNI_CACHE_V1,
        "containerId": entry.container_id,
        "config": base64.b64encode(entry.config).decode(),
        "ifName": entry.ifname,
        "networkName": entry.network_name,
        "cniArgs": [list(kv) for kv in entry.cni_args],
        "capabilityArgs": dict(entry.capability_args),
        "result": dict(entry.result),
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def read_cached(cache_dir: str, network: str, container_id: str, ifname: str) -> CachedAdd | None:
    """The cached ADD; None when there is none or it cannot be read."""
    try:
        data = json.loads(_path(cache_dir, network, container_id, ifname).read_text())
        if data.get("kind") != CNI_CACHE_V1:
            return None
        return CachedAdd(
            container_id=str(data["containerId"]),
            network_name=str(data["networkName"]),
            ifname=str(data["ifName"]),
            config=base64.b64decode(data["config"]),
            cni_args=tuple((str(k), str(v)) for k, v in data.get("cniArgs") or []),
            capability_args=dict(data.get("capabilityArgs") or {}),
            result=dict(data.get("result") or {}),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_cached(cache_dir: str, network: str, container_id: str, ifname: str) -> None:
    _path(cache_dir, network, container_id, ifname).unlink(missing_ok=True)


def cached_entries(cache_dir: str, ifname: str) -> dict[str, tuple[str, str]]:
    """Every cached ADD by container id: (network name, file name), from the file names."""
    out: dict[str, tuple[str, str]] = {}
    try:
        names = os.listdir(Path(cache_dir) / "results")
    except FileNotFoundError:
        return out
    suffix = f"-{ifname}"
    for name in names:
        if not name.endswith(suffix):
            continue
        network, _, container_id = name[: -len(suffix)].rpartition("-")
        if network and container_id:
            out[container_id] = (network, name)
    return out
