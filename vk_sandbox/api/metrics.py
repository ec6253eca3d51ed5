"""The sandbox's `metrics.k8s.io/v1beta1` API: what metrics-server serves, so `kubectl top` works.

What lives here: the pure conversion of kubelet Summaries (`/stats/summary`) into NodeMetrics and
PodMetrics as metrics-server returns them (`format_cpu`, `format_memory`, `go_duration`,
`node_metrics`, `pod_metrics`, `metrics_list`, `metrics_table`); `SummaryScraper`, which fetches each Ready
node's Summary over HTTPS with the sandbox's kubelet-client certificate and keeps the answers a
few seconds; and `MetricsAPI.handle`, the get/list requests of `nodes` and `pods` with label and
field selectors (upstream: kubernetes-sigs/metrics-server `pkg/api/node.go`, `pkg/api/pod.go`,
`pkg/storage/types.go`). Must not: write to the store, or import anything of the provider.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from vk_common.logging import get_logger
from vk_sandbox.api import errors
from vk_sandbox.api.kubelet_proxy import kubelet_address
from vk_sandbox.api.quantity import parse_quantity
from vk_sandbox.api.requestinfo import RequestInfo
from vk_sandbox.api.resources import METRICS_GROUP, METRICS_VERSION
from vk_sandbox.api.responses import json_response, not_found_resource, wants_table
from vk_sandbox.pki.authority import SandboxPKI
from vk_sandbox.storage.objects import now_rfc3339
from vk_sandbox.storage.store import Store

log = get_logger("sandbox.metrics")

Obj = dict[str, Any]
API_VERSION = f"{METRICS_GROUP}/{METRICS_VERSION}"
CACHE_SECONDS = 5.0
SCRAPE_TIMEOUT = 5.0  # metrics-server's --kubelet-request-timeout is 10 s; loopback kubelets are fast

# -- quantities and durations as Go prints them ----------------------------------------------------

_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def _decimal(value: int, exponent: int) -> str:
    """value·10^exponent in canonical DecimalSI form (resource.Quantity's String)."""
    if value == 0:
        return "0"
    while value % 10 == 0:
        value //= 10
        exponent += 1
    shift = exponent % 3  # down to a multiple of 3, the mantissa stays whole
    value, exponent = value * 10**shift, exponent - shift
    suffix = _DECIMAL_SUFFIXES.get(exponent)
    return f"{value}{suffix}" if suffix is not None else f"{value}e{exponent}"


def format_cpu(nano_cores: int) -> str:
    """CPU usage as metrics-server writes it: a DecimalSI quantity of scale -9 ("137682270n", "5m")."""
    return _decimal(int(nano_cores), -9)


def format_memory(size: int) -> str:
    """Memory as metrics-server writes it: a BinarySI quantity ("1834964Ki"; below 1024, or not a
    multiple of 1024, resource.Quantity falls back to DecimalSI: "1k", "123456789")."""
    size = int(size)
    if -1024 < size < 1024:
        return _decimal(size, 0)
    power = 0
    while size % 1024 == 0 and power < len(_BINARY_SUFFIXES) - 1:
        size //= 1024
        power += 1
    return f"{size}{_BINARY_SUFFIXES[power]}"


def _trimmed(whole: int, fraction: int, digits: int) -> str:
    text = str(whole)
    if fraction:
        text += "." + f"{fraction:0{digits}d}".rstrip("0")
    return text


def go_duration(seconds: float) -> str:
    """time.Duration.String: "15.003s", "1m0.5s", "2h0m0s", "500ms", "0s"."""
    ns = round(seconds * 1e9)
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns == 0:
        return "0s"
    if ns < 1000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return f"{sign}{_trimmed(ns // 1000, ns % 1000, 3)}µs"
    if ns < 1_000_000_000:
        return f"{sign}{_trimmed(ns // 1_000_000, ns % 1_000_000, 6)}ms"
    whole, fraction = divmod(ns, 1_000_000_000)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = _trimmed(secs, fraction, 9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


# -- Summary -> NodeMetrics / PodMetrics -----------------------------------------------------------


@dataclass(frozen=True)
class NodeScrape:
    """One node's Summary and when it arrived; `window` is the time since the previous scrape of
    the same node (None on the first), the interval the kubelet's `usageNanoCores` covers."""

    summary: Obj
    at: float
    window: float | None


def _meta(obj: Obj, created: str, namespaced: bool) -> Obj:
    source = obj.get("metadata") or {}
    meta: Obj = {"name": source.get("name", "")}
    if namespaced:
        meta["namespace"] = source.get("namespace", "")
    meta["creationTimestamp"] = created
    if source.get("labels"):
        meta["labels"] = dict(source["labels"])
    return meta


def _usage(stats: Obj, nano_cores: int) -> Obj:
    # metrics-server's memory is the working set, as the kubelet's eviction manager counts it.
    memory = int((stats.get("memory") or {}).get("workingSetBytes") or 0)
    return {"cpu": format_cpu(nano_cores), "memory": format_memory(memory)}


def node_metrics(node: Obj, scrape: NodeScrape, created: str) -> Obj | None:
    """The NodeMetrics of `node`, or None while there is no CPU rate for it yet."""
    if scrape.window is None:
        return None
    stats = scrape.summary.get("node") or {}
    cpu = stats.get("cpu") or {}
    nano_cores = cpu.get("usageNanoCores")
    if nano_cores is None:
        if scrape.summary.get("pods"):
            return None
        nano_cores = 0  # the virtual node's usage is the sum of its pods: none, nothing used
    return {
        "kind": "NodeMetrics",
        "apiVersion": API_VERSION,
        "metadata": _meta(node, created, namespaced=False),
        "timestamp": cpu.get("time") or created,
        "window": go_duration(scrape.window),
        "usage": _usage(stats, int(nano_cores)),
    }


def pod_metrics(pod: Obj, stats: Obj, window: float | None, created: str) -> Obj | None:
    """The PodMetrics of a Running `pod` from its Summary entry `stats`, or None until every
    container has a CPU rate (metrics-server leaves such a pod out)."""
    containers = stats.get("containers") or []
    if window is None or not containers or (pod.get("status") or {}).get("phase") != "Running":
        return None
    if any((c.get("cpu") or {}).get("usageNanoCores") is None for c in containers):
        return None
    times = [str((c.get("cpu") or {}).get("time") or created) for c in containers]
    return {
        "kind": "PodMetrics",
        "apiVersion": API_VERSION,
        "metadata": _meta(pod, created, namespaced=True),
        "timestamp": min(times),
        "window": go_duration(window),
        "containers": [
            {"name": c.get("name", ""), "usage": _usage(c, int(c["cpu"]["usageNanoCores"]))}
            for c in containers
        ],
    }


def metrics_list(kind: str, items: list[Obj]) -> Obj:
    return {
        "kind": f"{kind}List",
        "apiVersion": API_VERSION,
        "metadata": {},
        "items": [{k: v for k, v in i.items() if k not in ("kind", "apiVersion")} for i in items],
    }


_TABLE_COLUMNS = [
    {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": "Name of the resource",
        "priority": 0,
    },
    {"name": "cpu", "type": "string", "format": "quantity", "description": "", "priority": 0},
    {"name": "memory", "type": "string", "format": "quantity", "description": "", "priority": 0},
    {"name": "Window", "type": "string", "format": "duration", "description": "", "priority": 0},
]


def _pod_usage(item: Obj) -> Obj:
    """A PodMetrics' usage summed over its containers (metrics-server's table cells)."""
    usages = [c["usage"] for c in item["containers"]]
    cpu = sum((parse_quantity(u["cpu"]) for u in usages), Fraction(0))
    memory = sum((parse_quantity(u["memory"]) for u in usages), Fraction(0))
    return {"cpu": format_cpu(int(cpu * 10**9)), "memory": format_memory(int(memory))}


def metrics_table(items: list[Obj], include_object: str = "Metadata") -> Obj:
    """The meta.k8s.io/v1 Table `kubectl get nodes.metrics.k8s.io` gets: Name, cpu, memory,
    Window (metrics-server `pkg/api/table.go`; no column definitions when there are no rows)."""
    rows = []
    for item in items:
        usage = item["usage"] if "usage" in item else _pod_usage(item)
        row: Obj = {"cells": [item["metadata"]["name"], usage["cpu"], usage["memory"], item["window"]]}
        if include_object == "Object":
            row["object"] = item
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": item["metadata"],
            }
        rows.append(row)
    columns = [dict(c) for c in _TABLE_COLUMNS] if rows else []
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": columns,
        "rows": rows,
    }


# -- scraping the kubelets -------------------------------------------------------------------------


def is_ready(node: Obj) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class SummaryScraper:
    """Fetches `/stats/summary` from each given node's kubelet; answers are reused for
    `cache_seconds`. A node whose kubelet does not answer within `timeout` is left out, and its
    next answer counts as a first scrape again (metrics-server drops its points the same way)."""

    def __init__(
        self, pki: SandboxPKI, *, cache_seconds: float = CACHE_SECONDS, timeout: float = SCRAPE_TIMEOUT
    ) -> None:
        self._pki = pki
        self._cache_seconds = cache_seconds
        self._timeout = timeout
        self._scrapes: dict[str, NodeScrape] = {}
        self._fresh_until = 0.0
        self._lock = asyncio.Lock()

    async def scrape(self, nodes: list[Obj]) -> dict[str, NodeScrape]:
        """The latest scrape of each node, by node name (nodes that did not answer are absent)."""
        async with self._lock:
            if time.monotonic() < self._fresh_until:
                return self._scrapes
            connector = aiohttp.TCPConnector(ssl=self._pki.ssl_client_context(), force_close=True)
            timeout = aiohttp.ClientTimeout(total=self._timeout)
            async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
                names = [str((n.get("metadata") or {}).get("name", "")) for n in nodes]
                answers = await asyncio.gather(*(self._fetch(session, n) for n in nodes))
            scrapes: dict[str, NodeScrape] = {}
            for name, summary in zip(names, answers, strict=True):
                if summary is None:
                    continue
                at = time.time()
                previous = self._scrapes.get(name)
                scrapes[name] = NodeScrape(summary, at, at - previous.at if previous is not None else None)
            self._scrapes = scrapes
            self._fresh_until = time.monotonic() + self._cache_seconds
            return scrapes

    async def _fetch(self, session: aiohttp.ClientSession, node: Obj) -> Obj | None:
        host, port = kubelet_address(node)
        url: URL | str = f"{host}:{port}"
        name = (node.get("metadata") or {}).get("name")
        try:  # a node whose address is no host name is skipped like one that does not answer
            url = URL.build(scheme="https", host=host, port=port, path="/stats/summary")
            async with session.get(url) as response:
                if response.status != 200:
                    log.warning("skipping node", extra={"node": name, "url": url, "code": response.status})
                    return None
                summary = json.loads(await response.read())
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            log.warning(
                "skipping node", extra={"node": name, "url": url, "err": str(exc) or type(exc).__name__}
            )
            return None
        return summary if isinstance(summary, dict) else None


# -- the API -------------------------------------------------------------------------------------


def _answer(request: web.Request, items: list[Obj], document: Obj) -> web.Response:
    if wants_table(request):
        return json_response(metrics_table(items, request.query.get("includeObject", "Metadata")))
    return json_response(document)


class MetricsAPI:
    """GET and LIST of `/apis/metrics.k8s.io/v1beta1/nodes[/name]` and
    `[/namespaces/{ns}]/pods[/name]`; other verbs are 405, other paths 404."""

    def __init__(self, store: Store, scraper: SummaryScraper) -> None:
        self._store = store
        self._scraper = scraper

    @staticmethod
    def serves(ri: RequestInfo) -> bool:
        return ri.is_resource and ri.group == METRICS_GROUP

    async def handle(self, request: web.Request, ri: RequestInfo) -> web.Response:
        resource = ri.resource
        if (
            ri.version != METRICS_VERSION
            or resource not in ("nodes", "pods")
            or ri.subresource
            or len(ri.parts) > 2
            or (resource == "nodes" and ri.namespace is not None)
        ):
            raise not_found_resource()
        if ri.verb not in ("get", "list"):
            raise errors.method_not_allowed(request.method, resource)
        all_nodes, _ = await self._store.list("nodes")
        scrapes = await self._scraper.scrape([n for n in all_nodes if is_ready(n)])
        created = now_rfc3339()
        if resource == "nodes":
            return await self._nodes(request, ri, scrapes, created)
        return await self._pods(request, ri, scrapes, created)

    async def _nodes(
        self, request: web.Request, ri: RequestInfo, scrapes: dict[str, NodeScrape], created: str
    ) -> web.Response:
        if ri.verb == "get":
            node = await self._store.get("nodes", None, ri.name)  # 404 `nodes "x" not found`
            scrape = scrapes.get(ri.name)
            item = node_metrics(node, scrape, created) if scrape is not None else None
            if item is None:
                raise errors.not_found("nodes", ri.name, METRICS_GROUP)
            return _answer(request, [item], item)
        nodes, _ = await self._store.list(
            "nodes",
            label_selector=request.query.get("labelSelector", ""),
            field_selector=request.query.get("fieldSelector", ""),
        )
        items = [
            item
            for node in nodes
            if (scrape := scrapes.get(node["metadata"]["name"])) is not None
            and (item := node_metrics(node, scrape, created)) is not None
        ]
        return _answer(request, items, metrics_list("NodeMetrics", items))

    async def _pods(
        self, request: web.Request, ri: RequestInfo, scrapes: dict[str, NodeScrape], created: str
    ) -> web.Response:
        found: dict[tuple[str, str], tuple[Obj, float | None]] = {}
        for scrape in scrapes.values():
            for stats in scrape.summary.get("pods") or []:
                ref = stats.get("podRef") or {}
                found[(str(ref.get("namespace")), str(ref.get("name")))] = (stats, scrape.window)

        def metrics_of(pod: Obj) -> Obj | None:
            meta = pod.get("metadata") or {}
            entry = found.get((meta.get("namespace", ""), meta.get("name", "")))
            return pod_metrics(pod, entry[0], entry[1], created) if entry is not None else None

        if ri.verb == "get":
            pod = await self._store.get("pods", ri.namespace, ri.name)  # 404 `pods "x" not found`
            item = metrics_of(pod)
            if item is None:
                raise errors.not_found("pods", f"{ri.namespace}/{ri.name}", METRICS_GROUP)
            return _answer(request, [item], item)
        pods, _ = await self._store.list(
            "pods",
            ri.namespace,
            label_selector=request.query.get("labelSelector", ""),
            field_selector=request.query.get("fieldSelector", ""),
        )
        items = [item for pod in pods if (item := metrics_of(pod)) is not None]
        return _answer(request, items, metrics_list("PodMetrics", items))
