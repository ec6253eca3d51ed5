"""The objects, steps and scenario shapes fidelity scenarios are written with.

What lives here: object builders (`pod`, `configmap`, `secret`, `node`, `lease`, labelled with the
fidelity mark; `vector`, a body client-go encoded in protobuf), step builders (`create`, `at`,
`listing`), the small functions of earlier
answers a step may carry (`edited`, `set_label`, `set_path`, `rv_changed`, `headline`, `grace_is`)
and the shapes many scenarios share, filled from a row of values: `create_then_request` (create an
object, send it one request; `read_back` GETs a pod after), `pod_life_watched` and `pods_watched`
(pods created, then a watch).
Must not: run anything (harness.py does).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.fidelity.harness import (
    ABSENT,
    JSON,
    MARK,
    MERGE,
    NO_SCHEDULER,
    PODS,
    Answer,
    Answers,
    Derive,
    Dynamic,
    Obj,
    Request,
    Scenario,
    Step,
    Watch,
    at,
)

VECTORS = Path(__file__).parents[1] / "protobuf_vectors"


def labels(**extra: str) -> dict[str, str]:
    return {MARK: "yes", **extra}


def container(name: str = "c", image: str = "busybox:1", **extra: Any) -> Obj:
    return {"name": name, "image": image, **extra}


def pod(
    name: str, *, node: str = "", containers: list[Obj] | None = None, meta: Obj | None = None, **spec: Any
) -> Obj:
    """A pod nothing will run: unbound (with a scheduler nobody runs) or bound to FAKE_NODE-like names."""
    metadata: Obj = {"name": name, **(meta or {})}
    metadata["labels"] = labels(**metadata.get("labels", {}))
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": containers or [container()], **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
    else:
        body["spec"].setdefault("schedulerName", NO_SCHEDULER)
    return body


def configmap(name: str, data: dict[str, str] | None = None, **meta: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels(), **meta},
        "data": data if data is not None else {"k": "v"},
    }


def secret(name: str, **fields: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "labels": labels()}, **fields}


def node(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels()}, "spec": spec}


def lease(name: str, holder: str = "fidelity") -> Obj:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "labels": labels()},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 40},
    }


def vector(name: str) -> bytes:
    """A protobuf body client-go encoded (tests/support/protobuf_vectors, `make protobuf-schema`)."""
    return (VECTORS / f"{name}.pb").read_bytes()


def create(collection: str, body: Obj | str | bytes, **kw: Any) -> Request:
    return Request("POST", collection, body, **kw)


def edited(index: int, change: Callable[[Obj], None], *, rv: str | None = None) -> Dynamic:
    """The object answered at step `index`, changed in place by `change`, with the given rv
    (None: keep the one it had; "": send none)."""

    def body(answers: Answers) -> Obj:
        obj = json.loads(json.dumps(answers[index].obj))
        obj["metadata"].pop("managedFields", None)
        change(obj)
        if rv == "":
            obj["metadata"].pop("resourceVersion", None)
        elif rv is not None:
            obj["metadata"]["resourceVersion"] = rv
        return obj

    return body


def set_label(key: str, value: str) -> Callable[[Obj], None]:
    return lambda obj: obj["metadata"].setdefault("labels", {}).__setitem__(key, value)


def set_path(path: str, value: Any) -> Callable[[Obj], None]:
    def change(obj: Obj) -> None:
        *parents, last = re.findall(r"[^.\[\]]+|\[\d+\]", path)
        cur: Any = obj
        for token in parents:
            cur = cur[int(token[1:-1])] if token.startswith("[") else cur.setdefault(token, {})
        if last.startswith("["):
            cur[int(last[1:-1])] = value
        else:
            cur[last] = value

    return change


def rv_changed(answer: Answer, earlier: Answers) -> Obj:
    """Whether this write produced a new resourceVersion, compared with the step before."""
    return {"rv_changed": answer.rv != earlier[-1].rv}


def headline(answer: Answer, earlier: Answers) -> Obj:
    """The first lines of a Status message and its first cause's (a forbidden pod update's message
    goes on with a diff for people)."""
    causes = (answer.obj.get("details") or {}).get("causes") or [{}]
    return {
        "message_headline": str(answer.obj.get("message", "")).split("\n", 1)[0],
        "cause_headline": str(causes[0].get("message", "")).split("\n", 1)[0],
    }


def listing(collection: str, accept: str = JSON, **query: str) -> Request:
    return Request("GET", collection, query=query, accept=accept)


def grace_is(seconds: int) -> Derive:
    """Whether deletionTimestamp is about `seconds` from now (the real server: now + grace)."""

    def derive(answer: Answer, earlier: Answers) -> Obj:
        stamp = (answer.obj.get("metadata") or {}).get("deletionTimestamp")
        if not stamp:
            return {"deletion_in_grace": ABSENT}
        left = datetime.fromisoformat(stamp.replace("Z", "+00:00")) - datetime.now(UTC)
        return {"deletion_in_grace": abs(left.total_seconds() - seconds) <= 3}

    return derive


POD_FIELDS = ("spec", "status")  # the whole pod


def labelled(name: str, **extra: str) -> Obj:
    """A pod with these labels (and the fidelity mark)."""
    return pod(name, meta={"labels": extra})


def create_then_request(
    name: str,
    about: str,
    body: Obj,
    method: str,
    payload: Any = None,
    content_type: str = JSON,
    *,
    collection: str = PODS,
    sub: str = "",
    query: dict[str, str] | None = None,
    accept: str = JSON,
    fields: tuple[str, ...] = (),
    derive: Derive | None = None,
    then: tuple[Step, ...] = (),
) -> Scenario:
    """Create `body` in `collection` (a pod unless told), then send `method` with `payload` to it
    (or to its subresource `sub`), then take the steps `then`."""
    path = at(collection, body["metadata"]["name"], sub)
    request = Request(method, path, payload, content_type, query, accept, fields, derive)
    return Scenario(name, about, (create(collection, body), request, *then))


def read_back(pod_name: str) -> Step:
    """A GET of the pod, after a write (`then=`)."""
    return Request("GET", at(PODS, pod_name))


def pod_life_watched(name: str, about: str, pod_name: str, since: str | None) -> Scenario:
    """A pod labelled `s=<name>` created, labelled x=1 and deleted; then a watch of that label from
    resourceVersion `since` (None: from the create's)."""
    selector = f"s={name}"
    query: dict[str, str] | Dynamic = (
        {"resourceVersion": since, "labelSelector": selector}
        if since is not None
        else lambda a: {"resourceVersion": a[0].rv, "labelSelector": selector}
    )
    return Scenario(
        name,
        about,
        (
            create(PODS, labelled(pod_name, s=name)),
            Request("PATCH", at(PODS, pod_name), {"metadata": {"labels": {"x": "1"}}}, MERGE),
            Request("DELETE", at(PODS, pod_name)),
            Watch(PODS, query),
        ),
    )


def pods_watched(name: str, about: str, pod_names: tuple[str, ...], label: str, query: Obj) -> Scenario:
    """Pods labelled `s=<label>` created; then a watch with `query`."""
    return Scenario(
        name, about, (*(create(PODS, labelled(p, s=label)) for p in pod_names), Watch(PODS, query))
    )
