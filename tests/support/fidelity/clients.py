"""Real clients against both servers: the same sequence, what each client printed, normalised.

What lives here: `client_transcript` (the official `kubernetes` client, synchronous, its
concurrent calls in threads, or `kubernetes_asyncio`, its concurrent calls as tasks: one sequence
written once over either), `kubectl_transcript` (the pinned kubectl: apply, patch, label, replace,
`wait --for=...` and `get -w` running through a burst of patches), and `normalised` (ages, uids,
random name suffixes and resourceVersions out of the printed lines). A transcript is the list of
lines a user of that client would have seen; the test compares the two servers' lists.
Must not: tailor a call to one server, or print anything that races on the real server (counts
that depend on interleaving are printed as the invariant they keep, e.g. `1 x 200, 29 x 409`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import kubernetes as _kubernetes
import kubernetes_asyncio as _kubernetes_asyncio

from tests.support.fidelity.harness import _RAND, MARK, NS, Server
from tests.support.kubectl import run_kubectl, streaming_kubectl

CONCURRENT = 30
# The clients' functions are untyped: reached through Any, so each call is not an error of its own.
kubernetes: Any = _kubernetes
kubernetes_asyncio: Any = _kubernetes_asyncio
Call = Callable[..., Awaitable[Any]]


def normalised(lines: list[str]) -> list[str]:
    """Lines with what differs between servers replaced: uids, generated suffixes, ages, spacing."""
    out = []
    for line in lines:
        line = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uid>", line)
        line = re.sub(rf"\b(gen-){_RAND}\b", r"\1<random>", line)
        line = re.sub(r"\b\d+(s|m\d*s?|h\d*m?|d\d*h?)$", "<age>", line.rstrip())
        out.append(" ".join(line.split()))
    return out


def _tally(codes: list[int]) -> str:
    return ", ".join(f"{n} x {code}" for code, n in sorted(Counter(codes).items()))


# ------------------------------------------------------------------ the Python clients


def _failure(exc: Any) -> str:
    """An ApiException as a user prints it: code, the Status reason, the message."""
    try:
        body = json.loads(exc.body)
    except (TypeError, ValueError):
        body = {}
    return f"{exc.status} {body.get('reason')}: {body.get('message')}"


async def _sequence(core: Any, call: Call, errors: type[Exception], watch: Call, name: str) -> list[str]:
    """The sequence, over either client: `call(method, *args)` runs one API call, `watch(...)`
    the event types of a watch until DELETED. Returns what it printed."""
    printed: list[str] = []

    async def code(method: Any, *args: Any, **kwargs: Any) -> int:
        try:
            await call(method, *args, **kwargs)
        except errors as exc:
            return int(getattr(exc, "status", 0))
        return 200

    async def failure(method: Any, *args: Any) -> str:
        try:
            await call(method, *args)
        except errors as exc:
            return _failure(exc)
        return "no error"

    labels = {MARK: "yes", "client": name}  # what the harness's cleanup removes
    body: dict[str, Any] = {"metadata": {"name": name, "labels": labels}, "data": {"a": "1"}}
    created = await call(core.create_namespaced_config_map, NS, body)
    printed.append(f"created {created.metadata.name} data={created.data}")
    patches = [
        code(core.patch_namespaced_config_map, name, NS, {"data": {f"k{i}": str(i)}})
        for i in range(CONCURRENT)
    ]
    printed.append(f"{CONCURRENT} concurrent patches: {_tally(list(await asyncio.gather(*patches)))}")
    read = await call(core.read_namespaced_config_map, name, NS)
    printed.append(f"read: {len(read.data)} keys")
    stale = {**body, "metadata": {**body["metadata"], "resourceVersion": created.metadata.resource_version}}
    printed.append(
        "replace at the created version: "
        + await failure(core.replace_namespaced_config_map, name, NS, stale)
    )
    fresh_rv = read.metadata.resource_version
    replaces = [
        code(
            core.replace_namespaced_config_map,
            name,
            NS,
            {
                "metadata": {"name": name, "labels": labels, "resourceVersion": fresh_rv},
                "data": {"r": str(i)},
            },
        )
        for i in range(CONCURRENT)
    ]
    printed.append(f"{CONCURRENT} replaces at one version: {_tally(list(await asyncio.gather(*replaces)))}")
    pinned = {"metadata": {"resourceVersion": fresh_rv}, "data": {"late": "1"}}
    printed.append(
        "patch naming a stale version: " + await failure(core.patch_namespaced_config_map, name, NS, pinned)
    )
    generated = await asyncio.gather(
        *(
            call(
                core.create_namespaced_config_map,
                NS,
                {"metadata": {"generateName": "gen-", "labels": labels}},
            )
            for _ in range(10)
        )
    )
    names = {g.metadata.name for g in generated}
    printed.append(f"10 generateName creates: {len(names)} distinct, e.g. {sorted(names)[0]}")
    # A watch from now, while 10 patches and a delete run: what it saw
    now = (await call(core.read_namespaced_config_map, name, NS)).metadata.resource_version
    seen = asyncio.ensure_future(watch(core.list_namespaced_config_map, NS, f"metadata.name={name}", now))
    await asyncio.gather(
        *(code(core.patch_namespaced_config_map, name, NS, {"data": {f"w{i}": "1"}}) for i in range(10))
    )
    deleted = await call(core.delete_namespaced_config_map, name, NS)
    # A V1Status, or (the official client, whose delete returns `object`) the decoded JSON
    status = deleted if isinstance(deleted, dict) else deleted.to_dict()
    printed.append(f"delete: {status['status']} {status['details']['kind']} {status['details']['name']}")
    types = await seen
    printed.append(f"watch saw: {dict(Counter(types))}, in order: {types[-1]} last")
    printed.append("read after delete: " + await failure(core.read_namespaced_config_map, name, NS))
    listed = await call(core.list_namespaced_config_map, NS, label_selector=f"client={name}")
    printed.append(f"listed: {len(listed.items)} {listed.kind}")
    gone = await call(core.delete_collection_namespaced_config_map, NS, label_selector=f"client={name}")
    # The clients read the answer (the ConfigMapList deleted) as a V1Status: its kind is what shows
    printed.append(f"deletecollection: {gone.kind}")
    return normalised(printed)


async def client_transcript(server: Server, flavour: str) -> list[str]:
    """The sequence with `flavour` "kubernetes" (the official client, in threads) or
    "kubernetes_asyncio"; the ConfigMaps are named after the flavour."""
    name = flavour.replace("_", "-")
    if flavour == "kubernetes":
        config = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=str(server.kubeconfig), client_configuration=config)
        config.connection_pool_maxsize = CONCURRENT
        api = kubernetes.client.ApiClient(config)
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=CONCURRENT) as pool:

            def call(method: Any, *args: Any, **kwargs: Any) -> Awaitable[Any]:
                return loop.run_in_executor(pool, functools.partial(method, *args, **kwargs))

            def watched(method: Any, ns: str, selector: str, rv: str) -> list[str]:
                stream = kubernetes.watch.Watch().stream(
                    method, ns, field_selector=selector, resource_version=rv, timeout_seconds=60
                )
                return _types_until_deleted(event["type"] for event in stream)

            async def watch(method: Any, ns: str, selector: str, rv: str) -> list[str]:
                return await loop.run_in_executor(pool, watched, method, ns, selector, rv)

            try:
                core = kubernetes.client.CoreV1Api(api)
                return await _sequence(core, call, kubernetes.client.ApiException, watch, name)
            finally:
                api.close()
    config_a = kubernetes_asyncio.client.Configuration()
    await kubernetes_asyncio.config.load_kube_config(
        config_file=str(server.kubeconfig), client_configuration=config_a
    )
    async with kubernetes_asyncio.client.ApiClient(config_a) as api_a:

        async def call_a(method: Any, *args: Any, **kwargs: Any) -> Any:
            return await method(*args, **kwargs)

        async def watch_a(method: Any, ns: str, selector: str, rv: str) -> list[str]:
            types: list[str] = []
            async with kubernetes_asyncio.watch.Watch() as w:
                async for event in w.stream(
                    method, ns, field_selector=selector, resource_version=rv, timeout_seconds=60
                ):
                    types.append(event["type"])
                    if event["type"] == "DELETED":
                        break
            return types

        core_a = kubernetes_asyncio.client.CoreV1Api(api_a)
        return await _sequence(core_a, call_a, kubernetes_asyncio.client.ApiException, watch_a, name)


def _types_until_deleted(types: Any) -> list[str]:
    seen: list[str] = []
    for t in types:
        seen.append(str(t))
        if t == "DELETED":
            break
    return seen


# ------------------------------------------------------------------ kubectl


HOLD = json.dumps({"metadata": {"finalizers": ["example.com/hold"]}})


async def _wait_for_delete(server: Server, env: dict[str, str]) -> list[str]:
    """`kubectl wait --for=delete configmap/kc` of kc, held by a finalizer, released once the wait
    watches (its -v=6 log shows the watch request): started after the object was gone it would
    print nothing, so it must be waiting first for its output not to race."""
    args = ("wait", "--for=delete", "configmap/kc", "--timeout=60s")
    async with streaming_kubectl(server.kubeconfig, *args, "-v=6", env=env) as waiting:
        assert waiting.stdout is not None and waiting.stderr is not None
        while b"watch=true" not in (log := await waiting.stderr.readline()):
            assert log, "kubectl wait ended before it watched"
        released = await run_kubectl(
            server.kubeconfig, "patch", "configmap", "kc", "--type", "json", "-p", RELEASE, env=env
        )
        out = (await waiting.stdout.read()).decode()
        code = await waiting.wait()
    lines = [f"$ kubectl patch configmap kc (release) [{released[0]}]: {released[1].strip()}"]
    return lines + [f"$ kubectl {' '.join(args)} [{code}]: {line}" for line in out.splitlines()]


RELEASE = json.dumps([{"op": "remove", "path": "/metadata/finalizers"}])


def _manifest(data: dict[str, str], rv: str = "") -> str:
    meta: dict[str, Any] = {"name": "kc", "labels": {MARK: "yes"}}
    if rv:
        meta["resourceVersion"] = rv
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})


async def kubectl_transcript(server: Server, cache: Path) -> list[str]:
    """What kubectl printed (stdout, then stderr, of each command) through the sequence; the
    output of commands run side by side is added in a fixed order, not as they end."""
    env = {"KUBECACHEDIR": str(cache)}

    async def kubectl(*args: str, stdin: str | None = None) -> list[str]:
        code, out, err = await run_kubectl(server.kubeconfig, *args, stdin=stdin, env=env)
        return [f"$ kubectl {' '.join(args)} [{code}]: {line}" for line in (out + err).splitlines()]

    printed = await kubectl("apply", "-f", "-", stdin=_manifest({"a": "1"}))
    printed += await kubectl("apply", "-f", "-", stdin=_manifest({"a": "1"}))
    printed += await kubectl("apply", "-f", "-", stdin=_manifest({"a": "2"}))
    jsonpath = "jsonpath={.metadata.resourceVersion}"
    _, created_rv, _ = await run_kubectl(server.kubeconfig, "get", "configmap", "kc", "-o", jsonpath, env=env)
    printed += await kubectl("patch", "configmap", "kc", "--type", "merge", "-p", '{"data":{"b":"2"}}')
    printed += await kubectl("patch", "configmap", "kc", "--type", "merge", "-p", '{"data":{"b":"2"}}')
    printed += await kubectl("label", "configmap", "kc", "x=1")
    printed += await kubectl("label", "configmap", "kc", "x=2")
    printed += await kubectl("label", "configmap", "kc", "x=2", "--overwrite")
    printed += await kubectl("label", "configmap", "kc", "x-")
    printed += await kubectl("replace", "-f", "-", stdin=_manifest({"a": "3"}, created_rv))
    printed += await kubectl("replace", "-f", "-", stdin=_manifest({"a": "3"}))
    watch_args = ("get", "configmap", "kc", "-w", "--output-watch-events")
    async with streaming_kubectl(server.kubeconfig, *watch_args, env=env) as watching, asyncio.timeout(120):
        assert watching.stdout is not None
        watched = [(await watching.stdout.readline()).decode() for _ in range(2)]  # the header, ADDED
        ready = asyncio.ensure_future(
            kubectl("wait", "--for=jsonpath={.data.ready}=yes", "configmap/kc", "--timeout=60s")
        )
        patches = [
            kubectl("patch", "configmap", "kc", "--type", "merge", "-p", json.dumps({"data": {f"p{i}": "1"}}))
            for i in range(10)
        ]
        for lines in await asyncio.gather(*patches):
            printed += lines
        printed += await kubectl(
            "patch", "configmap", "kc", "--type", "merge", "-p", '{"data":{"ready":"yes"}}'
        )
        printed += await ready
        printed += await kubectl("patch", "configmap", "kc", "--type", "merge", "-p", HOLD)
        printed += await kubectl("delete", "configmap", "kc", "--wait=false")
        printed += await _wait_for_delete(server, env)
        while not watched[-1].startswith("DELETED"):
            watched.append((await watching.stdout.readline()).decode())
    # The DATA column of the MODIFIED rows: each patch adds one key, so it counts up whatever
    # order the patches landed in.
    printed += [f"$ kubectl {' '.join(watch_args)}: {line}" for line in watched]
    born = asyncio.ensure_future(kubectl("wait", "--for=create", "configmap/kc2", "--timeout=60s"))
    created = await kubectl("create", "configmap", "kc2", "--from-literal=a=1")
    printed += created + await born
    printed += await kubectl("label", "configmap", "kc2", f"{MARK}=yes")
    printed += await kubectl("get", "configmap", "kc")
    return normalised(printed)
