"""HTTP handlers for the action subresources: pods/binding, eviction, log, exec, attach,
portforward, nodes/proxy, and serviceaccounts/token (TokenRequest).

What lives here: `SUBRESOURCE_HANDLERS`, keyed by (resource key, subresource). Binding follows
`pkg/registry/core/pod/storage/storage.go` (BindingREST), eviction performs the graceful delete,
log/exec/attach/portforward resolve the pod's container and node as `pkg/registry/core/pod/
strategy.go` (LogLocation, streamLocation) and hand the request to `kubelet_proxy.proxy_to_kubelet`;
tokens are HS256 JWTs with the claims of a bound service account token. Must not: speak the
streaming protocols (the kubelet proxy relays them untouched) or store anything but through Store.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from vk_common.objects import format_time
from vk_sandbox.api import errors
from vk_sandbox.api.decoding import read_typed_body
from vk_sandbox.api.errors import ApiError
from vk_sandbox.api.handlers.context import ApiContext
from vk_sandbox.api.handlers.verbs import perform_delete
from vk_sandbox.api.kubelet_proxy import proxy_to_kubelet
from vk_sandbox.api.pod_proxy import proxy_to_pod, split_scheme_name_port
from vk_sandbox.api.requestinfo import RequestInfo
from vk_sandbox.api.resources import ResourceInfo
from vk_sandbox.api.responses import json_response, success_status
from vk_sandbox.pki.tokens import ISSUER, sign_token
from vk_sandbox.storage.objects import now_rfc3339

Obj = dict[str, Any]
Handler = Callable[[ApiContext, web.Request, RequestInfo, ResourceInfo], Awaitable[web.StreamResponse]]
MIN_TOKEN_SECONDS = 600
DEFAULT_TOKEN_SECONDS = 3600
_LOG_PARAMS = ("follow", "previous", "timestamps", "sinceSeconds", "sinceTime", "tailLines", "limitBytes")
_STREAM_PARAMS = {"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"}


def _require_method(request: web.Request, ri: RequestInfo, allowed: tuple[str, ...]) -> None:
    if request.method not in allowed:
        raise errors.method_not_allowed(request.method, f"{ri.resource}/{ri.subresource}")


async def bind_pod(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    _require_method(request, ri, ("POST",))
    body = await read_typed_body(request, "Binding", "v1")
    target = (body.get("target") or {}).get("name") or ""
    if not target:
        raise errors.invalid(
            "Binding",
            ri.name,
            [{"reason": "FieldValueRequired", "message": "Required value", "field": "target.name"}],
        )
    pod = await ctx.store.get("pods", ri.namespace, ri.name)
    meta = pod["metadata"]
    uid = (body.get("metadata") or {}).get("uid")
    if uid and uid != meta["uid"]:
        raise errors.conflict(
            "pods/binding",
            ri.name,
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta['uid']}",
        )
    if meta.get("deletionTimestamp"):
        raise errors.conflict(
            "pods/binding", ri.name, f"pod {ri.name} is being deleted, cannot be assigned to a host"
        )
    if pod["spec"].get("nodeName"):
        raise errors.conflict(
            "pods/binding", ri.name, f'pod {ri.name} is already assigned to node "{pod["spec"]["nodeName"]}"'
        )
    pod["spec"]["nodeName"] = target
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    if annotations:
        meta.setdefault("annotations", {}).update(annotations)
    status = pod.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
    )
    status["conditions"] = conditions
    await ctx.store.update("pods", pod, subresource="binding")
    return json_response(success_status(201), 201)


async def evict_pod(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    _require_method(request, ri, ("POST",))
    body = await read_typed_body(request, "Eviction", "policy/v1")
    options = body.get("deleteOptions") or {}
    await perform_delete(
        ctx,
        info,
        ri.namespace,
        ri.name,
        options.get("gracePeriodSeconds"),
        options.get("preconditions") or {},
    )
    return json_response(success_status(201), 201)


def _container_names(pod: Obj, key: str) -> list[str]:
    return [c.get("name", "") for c in (pod.get("spec") or {}).get(key) or []]


def _container(pod: Obj, requested: str) -> str:
    """The container a log/exec/attach request is for (podutil / strategy.go rules and messages)."""
    name = pod["metadata"]["name"]
    containers = _container_names(pod, "containers")
    init = _container_names(pod, "initContainers")
    ephemeral = _container_names(pod, "ephemeralContainers")
    if not requested:
        if len(containers) == 1:
            return containers[0]
        message = (
            f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
        )
        if init:
            message += f" or one of the init containers: [{' '.join(init)}]"
        if ephemeral:
            message += f" or one of the ephemeral containers: [{' '.join(ephemeral)}]"
        raise errors.bad_request(message)
    if requested not in containers + init + ephemeral:
        raise errors.bad_request(f"container {requested} is not valid for pod {name}")
    return requested


async def _node_of(ctx: ApiContext, pod: Obj) -> Obj | None:
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        return None
    try:
        return await ctx.store.get("nodes", None, node_name)
    except ApiError:
        raise errors.bad_request(f'nodes "{node_name}" not found') from None


async def pod_log(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.StreamResponse:
    _require_method(request, ri, ("GET",))
    pod = await ctx.store.get("pods", ri.namespace, ri.name)
    container = _container(pod, request.query.get("container", ""))
    node = await _node_of(ctx, pod)
    if node is None:
        return web.Response(body=b"", content_type="text/plain")
    query = [(k, v) for k, v in request.query.items() if k in _LOG_PARAMS]
    path = f"/containerLogs/{ri.namespace}/{ri.name}/{container}"
    return await proxy_to_kubelet(request, node, path + ("?" + urlencode(query) if query else ""), ctx.pki)


async def _stream(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, kubelet_verb: str
) -> web.StreamResponse:
    _require_method(request, ri, ("GET", "POST"))
    pod = await ctx.store.get("pods", ri.namespace, ri.name)
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        raise errors.bad_request(
            f"cannot {ri.subresource} into a container in a completed pod; current phase is {phase}"
        )
    container = _container(pod, request.query.get("container", ""))
    node = await _node_of(ctx, pod)
    if node is None:
        raise errors.bad_request(f"pod {ri.name} does not have a host assigned")
    query: list[tuple[str, str]] = [("command", c) for c in request.query.getall("command", [])]
    for api_name, kubelet_name in _STREAM_PARAMS.items():
        value = request.query.get(api_name, "")
        if value.lower() in ("true", "1"):
            query.append((kubelet_name, "1"))
    path = f"/{kubelet_verb}/{ri.namespace}/{ri.name}/{container}"
    return await proxy_to_kubelet(request, node, path + ("?" + urlencode(query) if query else ""), ctx.pki)


async def pod_exec(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.StreamResponse:
    if not request.query.getall("command", []):
        raise errors.bad_request("you must specify at least 1 command")
    return await _stream(ctx, request, ri, "exec")


async def pod_attach(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.StreamResponse:
    return await _stream(ctx, request, ri, "attach")


async def pod_portforward(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.StreamResponse:
    _require_method(request, ri, ("GET", "POST"))
    pod = await ctx.store.get("pods", ri.namespace, ri.name)
    node = await _node_of(ctx, pod)
    if node is None:
        raise errors.bad_request(f"pod {ri.name} does not have a host assigned")
    return await proxy_to_kubelet(request, node, f"/portForward/{ri.namespace}/{ri.name}", ctx.pki)


async def create_token(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.Response:
    _require_method(request, ri, ("POST",))
    body = await read_typed_body(request, "TokenRequest", "authentication.k8s.io/v1")
    sa = await ctx.store.get("serviceaccounts", ri.namespace, ri.name)
    spec = dict(body.get("spec") or {})
    seconds = int(spec.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS)
    if seconds < MIN_TOKEN_SECONDS:
        raise errors.invalid(
            "TokenRequest",
            ri.name,
            [
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {seconds}: may not specify a duration less than 10 minutes",
                    "field": "spec.expirationSeconds",
                }
            ],
            "authentication.k8s.io",
        )
    now = int(time.time())
    audiences = spec.get("audiences") or [ISSUER]
    k8s_claims: Obj = {
        "namespace": ri.namespace,
        "serviceaccount": {"name": ri.name, "uid": sa["metadata"]["uid"]},
    }
    bound = spec.get("boundObjectRef") or {}
    if bound.get("kind") in ("Pod", "Secret", "Node"):
        k8s_claims[bound["kind"].lower()] = {"name": bound.get("name", ""), "uid": bound.get("uid", "")}
    claims = {
        "aud": audiences,
        "exp": now + seconds,
        "iat": now,
        "iss": ISSUER,
        "jti": str(uuid.uuid4()),
        "kubernetes.io": k8s_claims,
        "nbf": now,
        "sub": f"system:serviceaccount:{ri.namespace}:{ri.name}",
    }
    expires = format_time(datetime.fromtimestamp(now + seconds, UTC))
    spec["audiences"] = audiences
    spec["expirationSeconds"] = seconds
    spec.setdefault("boundObjectRef", None)
    response = {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        # pkg/registry/core/serviceaccount/storage/token.go: the account's name, namespace and uid
        "metadata": {
            "name": ri.name,
            "namespace": ri.namespace,
            "uid": sa["metadata"]["uid"],
            "creationTimestamp": now_rfc3339(),
        },
        "spec": spec,
        "status": {"token": sign_token(ctx.token_key, claims), "expirationTimestamp": expires},
    }
    return json_response(response, 201)


async def node_proxy(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.StreamResponse:
    """nodes/<name>/proxy/<path>: the request goes to <path> on the node's kubelet."""
    node = await ctx.store.get("nodes", None, ri.name)
    return await proxy_to_kubelet(request, node, "/" + "/".join(ri.parts[3:]), ctx.pki)


async def pod_proxy(
    ctx: ApiContext, request: web.Request, ri: RequestInfo, info: ResourceInfo
) -> web.StreamResponse:
    """pods/<name[:port]>/proxy/<path>: the request goes to <path> on the pod's IP (pod_proxy.py)."""
    _, name, _ = split_scheme_name_port(ri.name)
    pod = await ctx.store.get("pods", ri.namespace, name)
    return await proxy_to_pod(request, pod, ri.name, "/" + "/".join(ri.parts[3:]))


SUBRESOURCE_HANDLERS: dict[tuple[str, str], Handler] = {
    ("nodes", "proxy"): node_proxy,
    ("pods", "proxy"): pod_proxy,
    ("pods", "binding"): bind_pod,
    ("pods", "eviction"): evict_pod,
    ("pods", "log"): pod_log,
    ("pods", "exec"): pod_exec,
    ("pods", "attach"): pod_attach,
    ("pods", "portforward"): pod_portforward,
    ("serviceaccounts", "token"): create_token,
}
