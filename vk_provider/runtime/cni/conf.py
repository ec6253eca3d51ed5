"""The CNI network configuration a pod is set up with: the first usable list of the conf dir.

What lives here: `conf_files` (libcni ConfFiles: the files of the directory ending in `.conf`,
`.conflist` or `.json`, sorted by name as dockershim sorts them), `NetworkList` and
`load_network`, dockershim's getDefaultCNINetwork: the first file, in that order, that parses
as a configuration list (a `.conf`/`.json` holds one plugin and becomes a list of one, libcni
ConfListFromConf) with at least one plugin, each plugin's `type` found as an executable in the
bin dirs (ValidateNetworkList); files that do not qualify are skipped with the reason kept.
`CNIConfigError` when none does: the node's network is not ready.
`find_plugin` (libcni FindInPath): the first `<bin dir>/<type>` that is an executable file.
Must not: run a plugin or write anything. Blocking (reads files): call it off the event loop.

Upstream: github.com/containernetworking/cni@v1.1.2 libcni/conf.go (ConfFiles, ConfFromBytes,
ConfListFromBytes, ConfListFromConf); k8s.io/kubernetes@v1.23.17
pkg/kubelet/dockershim/network/cni/cni.go (getDefaultCNINetwork).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONF_EXTENSIONS = (".conf", ".conflist", ".json")
MAX_CONF_BYTES = 1 << 20


class CNIConfigError(Exception):
    """No usable network configuration: the message says why (the node's NotReady reason)."""


@dataclass(frozen=True)
class NetworkList:
    """One network configuration list: its name and CNI version (given to every plugin), the
    plugins' configurations in order, the list's own bytes (kept in the result cache) and the
    file it came from."""

    name: str
    cni_version: str
    plugins: tuple[dict[str, Any], ...]
    raw: bytes
    source: str
    disable_check: bool = False


def conf_files(conf_dir: str) -> list[str]:
    """The candidate files, sorted; none when the directory does not exist."""
    try:
        entries = list(os.scandir(conf_dir))
    except FileNotFoundError:
        return []
    return sorted(
        e.path for e in entries if not e.is_dir() and os.path.splitext(e.name)[1] in CONF_EXTENSIONS
    )


def find_plugin(plugin_type: str, bin_dirs: Sequence[str]) -> str | None:
    """`<dir>/<type>` of the first bin dir holding it as an executable file."""
    if not plugin_type or "/" in plugin_type:
        return None
    for directory in bin_dirs:
        path = os.path.join(directory, plugin_type)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def parse_network(raw: bytes, source: str) -> NetworkList:
    """A list from a file's bytes (`.conflist`: a list; otherwise one plugin's configuration)."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CNIConfigError(f"{source}: not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise CNIConfigError(f"{source}: not a JSON object")
    if source.endswith(".conflist"):
        plugins = data.get("plugins")
        if not isinstance(plugins, list) or not all(isinstance(p, dict) for p in plugins):
            raise CNIConfigError(f"{source}: no 'plugins' list")
        body = data
    else:
        if not data.get("type"):
            raise CNIConfigError(f"{source}: no 'type'; perhaps this is a .conflist?")
        plugins = [data]
        body = {"cniVersion": data.get("cniVersion", ""), "name": data.get("name", ""), "plugins": plugins}
        raw = json.dumps(body).encode()
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise CNIConfigError(f"{source}: no network 'name'")
    if not plugins:
        raise CNIConfigError(f"{source}: the list has no plugins")
    for plugin in plugins:
        if not isinstance(plugin.get("type"), str) or not plugin.get("type"):
            raise CNIConfigError(f"{source}: a plugin without 'type'")
    return NetworkList(
        name=name,
        cni_version=str(body.get("cniVersion") or ""),
        plugins=tuple(plugins),
        raw=raw,
        source=source,
        disable_check=bool(body.get("disableCheck")),
    )


def load_network(conf_dir: str, bin_dirs: Sequence[str]) -> NetworkList:
    """The first usable list of `conf_dir` (see the module's text)."""
    files = conf_files(conf_dir)
    if not files:
        raise CNIConfigError(f"no networks found in {conf_dir}")
    reasons: list[str] = []
    for path in files:
        try:
            with open(path, "rb") as f:
                raw = f.read(MAX_CONF_BYTES + 1)
            if len(raw) > MAX_CONF_BYTES:
                raise CNIConfigError(f"{path}: larger than {MAX_CONF_BYTES} bytes")
            network = parse_network(raw, path)
            missing = [p["type"] for p in network.plugins if find_plugin(p["type"], bin_dirs) is None]
            if missing:
                where = ", ".join(bin_dirs)
                raise CNIConfigError(f'{path}: failed to find plugin "{missing[0]}" in path [{where}]')
            return network
        except OSError as exc:
            reasons.append(f"{path}: {exc.strerror or exc}")
        except CNIConfigError as exc:
            reasons.append(str(exc))
    raise CNIConfigError(f"no valid networks found in {conf_dir}: {'; '.join(reasons)}")


def plugin_dirs(bin_dirs: Sequence[str]) -> str:
    """CNI_PATH: the bin dirs joined as a search path."""
    return os.pathsep.join(str(Path(d)) for d in bin_dirs)
