"""Counting the API requests the control plane answered.

`api_requests`: the emulator's `/debug/sandbox/counters`, or the real apiserver's
`apiserver_request_total` (`real_request_counts`), both as `"<verb> <resource>[/<subresource>]"`;
`diff` of two counts (the Docker proxy's too), and the figures and rows made of them
(`pod_writes`, `status_writes`, `request_rows`).

Must not: import from `tests/`; send the control plane anything but these reads.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import yaml

from bench.sandbox import BenchSandbox
from vk_sandbox.real.admin import AdminAPI

_REQUESTS = re.compile(r"^apiserver_request_total\{([^}]*)\}\s+(\S+)$", re.MULTILINE)
_LABEL = re.compile(r'(\w+)="([^"]*)"')
_REAL_VERBS = {"POST": "create", "PUT": "update"}


def _admin_api(kubeconfig: Path) -> AdminAPI:
    """An AdminAPI with the client certificate of a kubeconfig (the real control plane's admin)."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    return AdminAPI(
        cluster["server"],
        Path(cluster["certificate-authority"]),
        Path(user["client-certificate"]),
        Path(user["client-key"]),
    )


def real_request_counts(metrics: str) -> Counter[str]:
    """`apiserver_request_total` of a kube-apiserver's /metrics, summed over codes and scopes,
    keyed as the emulator's counters: `"<verb> <resource>[.<group>][/<subresource>]"`."""
    counts: Counter[str] = Counter()
    for labels_text, value in _REQUESTS.findall(metrics):
        labels = dict(_LABEL.findall(labels_text))
        if not labels.get("resource"):
            continue
        verb = _REAL_VERBS.get(labels.get("verb", ""), labels.get("verb", "").lower())
        resource = labels["resource"] + (f".{labels['group']}" if labels.get("group") else "")
        if labels.get("subresource"):
            resource += f"/{labels['subresource']}"
        counts[f"{verb} {resource}"] += int(float(value))
    return counts


async def api_requests(sandbox: BenchSandbox) -> Counter[str]:
    """Every API request the control plane has answered so far, from any client, by
    `"<verb> <resource>[/<subresource>]"`: the emulator's debug counters, or the real
    kube-apiserver's `apiserver_request_total` (a watch counts there when it ends)."""
    if sandbox.control_plane == "emulator":
        counters = await sandbox.api.get("/debug/sandbox/counters")
        return Counter({str(k): int(v) for k, v in (counters.get("requests") or {}).items()})
    admin = _admin_api(sandbox.kubeconfig)
    try:
        code, text = await admin.request("GET", "/metrics")
    finally:
        await admin.close()
    if code != 200:
        raise RuntimeError(f"GET /metrics answered {code}: {text[:200]}")
    return real_request_counts(text)


def diff(after: Mapping[str, int], before: Mapping[str, int]) -> Counter[str]:
    """after - before, keys with a positive difference only."""
    return Counter({key: after[key] - before.get(key, 0) for key in after if after[key] > before.get(key, 0)})


def split_key(key: str) -> tuple[str, str]:
    """`"patch pods/status"` is `("pods/status", "patch")`."""
    verb, _, resource = key.partition(" ")
    return resource, verb


WRITE_VERBS = ("create", "update", "patch", "delete")
POD_RESOURCES = ("pods", "pods/status")


def pod_writes(counts: Mapping[str, int]) -> int:
    """Writes (create, update, patch, delete) of pods and pods/status."""
    return sum(
        n
        for key, n in counts.items()
        if split_key(key)[1] in WRITE_VERBS and split_key(key)[0] in POD_RESOURCES
    )


def status_writes(counts: Mapping[str, int]) -> int:
    return counts.get("patch pods/status", 0) + counts.get("update pods/status", 0)


def request_rows(counts: Mapping[str, int], seconds: float | None = None) -> list[list[object]]:
    """Table rows (resource, verb, count[, per s]) sorted by resource then verb."""
    rows: list[list[object]] = []
    for key in sorted(counts, key=split_key):
        resource, verb = split_key(key)
        row: list[object] = [resource, verb, counts[key]]
        if seconds is not None:
            row.append(counts[key] / seconds)
        rows.append(row)
    return rows
