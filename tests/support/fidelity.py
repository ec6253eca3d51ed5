"""Emulator fidelity: the same HTTP request scenarios against the emulator and the real kube-apiserver.

What lives here, top to bottom:
- `Server` (a URL, TLS settings, bearer token and kubeconfig read from a sandbox's kubeconfig) and
  `SandboxProcess` (`vk-provider sandbox [--control-plane real] --no-provider` as a subprocess);
- the step types a scenario is made of: `Request` (one HTTP request), `Watch` (a watch, read
  until the server ends it) and `Kubectl` (the real kubectl); bodies, paths and queries may be
  tiny functions of the answers so far (`Answers`), e.g. to send back a stale resourceVersion;
- `observe`: what a client sees in an answer, flattened to `{"path": value}` and normalised
  (uids, timestamps, resourceVersion values, managedFields and random name suffixes replaced);
  Status bodies are always observed whole, objects by their metadata plus the step's `fields`;
- `run_scenario` / `compare`: run one scenario against one server, and the differences between
  the two servers' observations;
- `SCENARIOS`, the data: one `Scenario` per behaviour, with object builders (`pod`, ...);
- `render_report`: the Markdown of docs/fidelity.md.

`python -m tests.support.fidelity REAL_KUBECONFIG EMULATOR_KUBECONFIG [SCENARIO...]` runs the
scenarios against two sandboxes that are already running and prints the differences.
Must not: change the emulator, or tailor a request to one server: both get the same bytes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from tests.support.kubectl import KUBECTL
from tests.support.planes import ensure_kube_bin, launch_sandbox, log_tail, stop_process
from tests.support.polling import until

REPO = Path(__file__).resolve().parents[2]
NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
SECRETS = f"/api/v1/namespaces/{NS}/secrets"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
NODES = "/api/v1/nodes"
JSON = "application/json"
SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
# Every object a scenario creates carries this label; after each scenario they are removed.
MARK = "fidelity"
FAKE_NODE = "fidelity-node"  # pods "bound" to a node that does not exist: nothing runs them
NO_SCHEDULER = "fidelity-none"  # unbound pods name a scheduler nobody runs, so none binds them
ABSENT = "<absent>"

Obj = dict[str, Any]


# ------------------------------------------------------------------ the servers


@dataclass(frozen=True)
class Server:
    """One API server as a client reaches it: from the kubeconfig a sandbox writes."""

    name: str  # "real" or "emulator"
    url: str
    kubeconfig: Path
    ssl_context: ssl.SSLContext | None
    token: str | None = None  # the kubeconfig user's bearer token (the emulator's admin token)

    def session(self) -> aiohttp.ClientSession:
        """A session that authenticates as the kubeconfig's user does (the certificate is in ssl_context)."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return aiohttp.ClientSession(headers=headers)

    @classmethod
    def from_kubeconfig(cls, name: str, path: Path) -> Server:
        config = yaml.safe_load(path.read_text())
        cluster = config["clusters"][0]["cluster"]
        user = config["users"][0].get("user") or {}
        context = None
        if cluster["server"].startswith("https:"):
            context = ssl.create_default_context(cafile=cluster["certificate-authority"])
            if "client-certificate" in user:
                context.load_cert_chain(user["client-certificate"], user["client-key"])
        return cls(name, cluster["server"], path, context, user.get("token"))


class SandboxProcess:
    """`vk-provider sandbox --no-provider` (with `--control-plane real` for the real one)."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name = name
        self.directory = directory
        self.output = directory / "sandbox.out"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        self.directory.mkdir(parents=True, exist_ok=True)
        args = ["--state-dir", str(self.directory / "state"), "--port", "0", "--no-provider"]
        if self.name == "real":
            args += ["--control-plane", "real", "--kube-bin", ensure_kube_bin()]
        self.proc = launch_sandbox(args, self.output)
        until(lambda: f"the {self.name} sandbox to start:\n{self.log_tail()}", self._started, 240, 0.2)
        return Server.from_kubeconfig(self.name, self.directory / "state" / "kubeconfig")

    def _started(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"the {self.name} sandbox exited:\n{self.log_tail()}")
        return "API server at" in self.output.read_text(errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.output, lines)

    def stop(self) -> None:
        stop_process(self.proc)


# ------------------------------------------------------------------ answers


@dataclass
class Answer:
    """What one step got back: HTTP status, headers, body (JSON, or text); watch events; kubectl output."""

    code: int
    headers: dict[str, list[str]] = field(default_factory=dict)
    body: Any = None
    events: list[Obj] = field(default_factory=list)

    @property
    def obj(self) -> Obj:
        return self.body if isinstance(self.body, dict) else {}

    @property
    def rv(self) -> str:
        return str((self.obj.get("metadata") or {}).get("resourceVersion", ""))

    @property
    def uid(self) -> str:
        return str((self.obj.get("metadata") or {}).get("uid", ""))


Answers = list[Answer]  # the answers of the scenario's earlier steps, in order
Dynamic = Callable[[Answers], Any]  # a path, query or body computed from them
Derive = Callable[[Answer, Answers], Obj]  # extra observations computed from an answer


# ------------------------------------------------------------------ steps


@dataclass(frozen=True)
class Request:
    """One HTTP request. `fields`: paths in the answer's object to compare besides its metadata."""

    method: str
    path: str | Dynamic
    body: Any = None  # an object (sent as JSON), str/bytes (sent as is), a Dynamic, or None
    content_type: str = JSON
    query: dict[str, str] | Dynamic | None = None
    accept: str = JSON
    fields: tuple[str, ...] = ()
    derive: Derive | None = None


@dataclass(frozen=True)
class Watch:
    """A watch request (`watch=1` and a short `timeoutSeconds` are added), read until the server ends it."""

    path: str
    query: dict[str, str] | Dynamic | None = None
    fields: tuple[str, ...] = ()
    timeout_seconds: int = 1


@dataclass(frozen=True)
class Kubectl:
    """The real kubectl against the server; observed: exit code, stdout and stderr."""

    args: tuple[str, ...]
    stdin: str = ""


Step = Request | Watch | Kubectl


@dataclass(frozen=True)
class Scenario:
    name: str
    about: str  # one line, for the report
    steps: tuple[Step, ...]
    generated: tuple[str, ...] = ()  # generateName prefixes whose random suffix is normalised


# ------------------------------------------------------------------ running


def _resolve(value: Any, answers: Answers) -> Any:
    return value(answers) if callable(value) else value


def _headers(response: aiohttp.ClientResponse) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in response.headers.items():
        out.setdefault(key.lower(), []).append(value)
    return out


def _decode(raw: bytes) -> Any:
    text = raw.decode(errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


async def _http(session: aiohttp.ClientSession, server: Server, step: Request, answers: Answers) -> Answer:
    body = _resolve(step.body, answers)
    data = body if isinstance(body, str | bytes) or body is None else json.dumps(body)
    headers = {"Accept": step.accept}
    if data is not None:
        headers["Content-Type"] = step.content_type
    async with session.request(
        step.method,
        server.url + _resolve(step.path, answers),
        params=_resolve(step.query, answers),
        data=data,
        headers=headers,
        ssl=server.ssl_context or False,
    ) as response:
        return Answer(response.status, _headers(response), _decode(await response.read()))


async def _watch(session: aiohttp.ClientSession, server: Server, step: Watch, answers: Answers) -> Answer:
    query = {
        **(_resolve(step.query, answers) or {}),
        "watch": "1",
        "timeoutSeconds": str(step.timeout_seconds),
    }
    async with (
        asyncio.timeout(step.timeout_seconds + 15),
        session.get(server.url + step.path, params=query, ssl=server.ssl_context or False) as response,
    ):
        answer = Answer(response.status, _headers(response))
        if response.status != 200:
            answer.body = _decode(await response.read())
            return answer
        while line := await response.content.readline():
            if line.strip():
                answer.events.append(json.loads(line))
        return answer


async def _kubectl(server: Server, step: Kubectl, cache: Path) -> Answer:
    proc = await asyncio.create_subprocess_exec(
        str(KUBECTL),
        "--kubeconfig",
        str(server.kubeconfig),
        *step.args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "KUBECACHEDIR": str(cache)},
    )
    out, err = await asyncio.wait_for(proc.communicate(step.stdin.encode()), 60)
    return Answer(proc.returncode or 0, body={"stdout": out.decode(), "stderr": err.decode()})


async def run_scenario(
    session: aiohttp.ClientSession, server: Server, scenario: Scenario, cache: Path
) -> list[Obj]:
    """Run the steps in order; returns one observation per step. Cleans up afterwards."""
    answers: Answers = []
    observations: list[Obj] = []
    try:
        for step in scenario.steps:
            if isinstance(step, Request):
                answer = await _http(session, server, step, answers)
            elif isinstance(step, Watch):
                answer = await _watch(session, server, step, answers)
            else:
                answer = await _kubectl(server, step, cache)
            answers.append(answer)
            observations.append(observe(step, answer, answers[:-1], scenario))
    finally:
        await cleanup(session, server)
    return observations


CLEANUP = (PODS, CONFIGMAPS, SECRETS, LEASES, NODES)


async def cleanup(session: aiohttp.ClientSession, server: Server) -> None:
    """Remove everything the scenarios create (they all carry the MARK label), at once."""
    tls = server.ssl_context or False
    async with session.get(server.url + PODS, params={"labelSelector": MARK}, ssl=tls) as response:
        held = [
            p["metadata"]["name"] for p in (await response.json())["items"] if p["metadata"].get("finalizers")
        ]
    for name in held:
        unhold = json.dumps({"metadata": {"finalizers": None}})
        async with session.patch(
            server.url + at(PODS, name), data=unhold, headers={"Content-Type": MERGE}, ssl=tls
        ) as response:
            await response.read()
    for collection in CLEANUP:
        async with session.delete(
            server.url + collection,
            params={"labelSelector": MARK, "gracePeriodSeconds": "0"},
            ssl=server.ssl_context or False,
        ) as response:
            await response.read()


# ------------------------------------------------------------------ observing


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
_RAND = "[bcdfghjklmnpqrstvwxz2456789]{5}"  # k8s.io/apimachinery/pkg/util/rand, as generateName uses
_GENERATED = ("kube-api-access-",)  # the ServiceAccount admission's token volume
# Keys written by the real controller manager some time after a write, so a scenario may or may
# not see them: the TTL controller's node annotation (the emulator has no TTL controller).
_LATE_KEYS = ("managedFields", "node.alpha.kubernetes.io/ttl")
OBJECT_META = (
    "metadata.name",
    "metadata.generateName",
    "metadata.namespace",
    "metadata.uid",
    "metadata.resourceVersion",
    "metadata.generation",
    "metadata.creationTimestamp",
    "metadata.deletionTimestamp",
    "metadata.deletionGracePeriodSeconds",
    "metadata.labels",
    "metadata.annotations",
    "metadata.finalizers",
    "metadata.ownerReferences",
)


class Normaliser:
    """Replaces what legitimately differs between two servers with placeholders."""

    def __init__(self, generated: tuple[str, ...], answers: Answers) -> None:
        prefixes = "|".join(re.escape(p) for p in (*_GENERATED, *generated))
        self.names = re.compile(rf"({prefixes}){_RAND}\b")
        rvs = {a.rv for a in answers if a.rv} | {
            str((e.get("object") or {}).get("metadata", {}).get("resourceVersion", ""))
            for a in answers
            for e in a.events
        }
        rvs.discard("")
        self.rvs = re.compile(r"\b(" + "|".join(sorted(rvs, key=len, reverse=True)) + r")\b") if rvs else None

    def text(self, value: str, message: bool = False) -> str:
        value = _UUID.sub("<uid>", value)
        value = self.names.sub(r"\1<random>", value)
        if _TIME.match(value):
            return "<time>"
        if message and self.rvs is not None:
            value = self.rvs.sub("<rv>", value)
        if message:  # "Too large resource version: N, current: C": the server's current RV
            value = re.sub(r"(current: )\d+", r"\1<rv>", value)
        return value

    @staticmethod
    def continue_token(token: str) -> str:
        """A continue token is base64 JSON carrying the list's RV: compare what else it holds."""
        try:
            decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        except ValueError:
            return token
        return json.dumps({**decoded, "rv": "<rv>"}, sort_keys=True) if isinstance(decoded, dict) else token

    def value(self, value: Any, key: str = "") -> Any:
        """`key`: the name (or dotted path) the value is found under."""
        last = key.rsplit(".", 1)[-1]
        if isinstance(value, dict):
            return {
                k: self.value(v, k)
                for k, v in value.items()
                if k not in _LATE_KEYS and not (isinstance(v, dict) and v and set(v) <= set(_LATE_KEYS))
            }
        if last == "continue" and isinstance(value, str) and value:
            return self.continue_token(value)
        if isinstance(value, list):
            return [self.value(v, key) for v in value]
        if last == "resourceVersion" and value:
            return "<rv>"
        if isinstance(value, str):
            return self.text(value, message=last == "message")
        return value


def get_path(obj: Any, path: str) -> Any:
    """`a.b[0].c` or `a[*].b` (a list of the values); ABSENT when missing."""
    cur: Any = obj
    tokens = re.findall(r"[^.\[\]]+|\[\d+\]|\[\*\]", path)
    for i, token in enumerate(tokens):
        if token == "[*]":
            if not isinstance(cur, list):
                return ABSENT
            rest = "".join(t if t.startswith("[") else "." + t for t in tokens[i + 1 :]).lstrip(".")
            return [get_path(item, rest) if rest else item for item in cur]
        if token.startswith("["):
            index = int(token[1:-1])
            if not isinstance(cur, list) or index >= len(cur):
                return ABSENT
            cur = cur[index]
        elif isinstance(cur, dict) and token in cur:
            cur = cur[token]
        else:
            return ABSENT
    return cur


def flatten(value: Any, prefix: str, out: Obj) -> None:
    if isinstance(value, dict) and value:
        for k in sorted(value):
            flatten(value[k], f"{prefix}.{k}" if prefix else k, out)
    elif isinstance(value, list) and value:
        for i, item in enumerate(value):
            flatten(item, f"{prefix}[{i}]", out)
    else:
        out[prefix] = value


def warnings_of(answer: Answer) -> list[str]:
    """The `Warning: 299 - "text"` headers, as their texts."""
    out = []
    for header in answer.headers.get("warning", []):
        match = re.match(r'^\d{3} \S+ "(.*)"$', header)
        out.append(match.group(1).replace('\\"', '"') if match else header)
    return out


def _object_view(obj: Obj, fields: tuple[str, ...]) -> Obj:
    view: Obj = {"kind": obj.get("kind", ABSENT), "apiVersion": obj.get("apiVersion", ABSENT)}
    for path in (*OBJECT_META, *fields):
        value = get_path(obj, path)
        if value != ABSENT:
            view[path] = value
    return view


def _body_view(body: Any, fields: tuple[str, ...]) -> Any:
    if not isinstance(body, dict):
        return body
    kind = body.get("kind", "")
    if kind == "Status":
        return body
    if kind == "Table":
        return {
            "kind": kind,
            "apiVersion": body.get("apiVersion"),
            "metadata": body.get("metadata"),
            "columnDefinitions": body.get("columnDefinitions"),
            "rows": [_row_view(body, row) for row in body.get("rows") or []],
        }
    if kind.endswith("List") and "items" in body:
        return {
            "kind": kind,
            "apiVersion": body.get("apiVersion"),
            "metadata": body.get("metadata"),
            "items": [
                {p: v for p, v in _object_view(item, fields).items() if p not in ("kind", "apiVersion")}
                for item in body["items"]
            ],
            "items.kind": [item.get("kind", ABSENT) for item in body["items"]],
        }
    return _object_view(body, fields)


def _row_view(table: Obj, row: Obj) -> Obj:
    names = [c.get("name") for c in table.get("columnDefinitions") or []]
    cells = [
        "<age>" if names[i : i + 1] == ["Age"] else cell for i, cell in enumerate(row.get("cells") or [])
    ]
    return {**row, "cells": cells}


def observe(step: Step, answer: Answer, earlier: Answers, scenario: Scenario) -> Obj:
    """What a client sees, flattened and normalised."""
    norm = Normaliser(scenario.generated, [*earlier, answer])
    seen: Obj = {"code": answer.code}
    if isinstance(step, Kubectl):
        seen["stdout"] = answer.body["stdout"]
        seen["stderr"] = norm.text(answer.body["stderr"], message=True)
        return seen
    seen["content-type"] = (answer.headers.get("content-type") or [ABSENT])[0].split(";")[0]
    seen["warnings"] = [norm.text(w, message=True) for w in warnings_of(answer)]
    if isinstance(step, Watch):
        events = []
        for event in answer.events:
            obj = event.get("object") or {}
            events.append({"type": event.get("type"), "object": _body_view(obj, step.fields)})
        flatten(norm.value(events), "events", seen)
        seen["events.count"] = len(events)
        if answer.body is not None:
            flatten(norm.value(_body_view(answer.body, step.fields)), "body", seen)
        return seen
    flatten(norm.value(_body_view(answer.body, step.fields)), "body", seen)
    if step.derive is not None:
        for key, value in step.derive(answer, earlier).items():
            seen[f"derived.{key}"] = norm.value(value, key)
    return seen


# ------------------------------------------------------------------ comparing


@dataclass(frozen=True)
class Difference:
    step: int
    key: str
    real: Any
    emulator: Any

    def __str__(self) -> str:
        return f"step {self.step + 1} {self.key}: real={self.real!r} emulator={self.emulator!r}"


def compare(real: list[Obj], emulator: list[Obj]) -> list[Difference]:
    differences = []
    for step, (r, e) in enumerate(zip(real, emulator, strict=True)):
        for key in sorted(set(r) | set(e)):
            if r.get(key, ABSENT) != e.get(key, ABSENT):
                differences.append(Difference(step, key, r.get(key, ABSENT), e.get(key, ABSENT)))
    return differences


@dataclass
class Result:
    scenario: Scenario
    real: list[Obj]
    emulator: list[Obj]

    @property
    def differences(self) -> list[Difference]:
        return compare(self.real, self.emulator)


async def run_pair(real: Server, emulator: Server, scenario: Scenario) -> Result:
    """The scenario against both servers, at the same time."""
    with tempfile.TemporaryDirectory(prefix="fidelity-kubectl-") as cache:
        async with real.session() as on_real_session, emulator.session() as on_emulator_session:
            on_real, on_emulator = await asyncio.gather(
                run_scenario(on_real_session, real, scenario, Path(cache) / "real"),
                run_scenario(on_emulator_session, emulator, scenario, Path(cache) / "emulator"),
            )
    return Result(scenario, on_real, on_emulator)


# ------------------------------------------------------------------ object builders


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


def create(collection: str, body: Obj, **kw: Any) -> Request:
    return Request("POST", collection, body, **kw)


def at(collection: str, name: str, sub: str = "") -> str:
    return f"{collection}/{name}" + (f"/{sub}" if sub else "")


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


# ------------------------------------------------------------------ the scenarios

UNKNOWN_UID = "00000000-0000-0000-0000-000000000000"
POD_FIELDS = ("spec", "status")  # the whole pod
IMAGES = ("spec.containers[*].name", "spec.containers[*].image")
_RESOURCES = {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}
_RESIZED = {"requests": {"cpu": "150m", "memory": "32Mi"}, "limits": {"cpu": "300m", "memory": "96Mi"}}
_GUARANTEED = {"requests": {"cpu": "200m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}


def _labelled(name: str, **extra: str) -> Obj:
    return pod(name, meta={"labels": extra})


SCENARIOS: tuple[Scenario, ...] = (
    # The watch cache of a fresh real server reaches back to its start, so RV 1 replays the
    # history; keep this first, before the many scenarios below fill and rotate that history.
    Scenario(
        "watch-from-rv-1",
        "watch from resourceVersion 1: the whole history of the selected pods, in order",
        (
            create(PODS, _labelled("fid-w1", s="watch-from-rv-1")),
            Request("PATCH", at(PODS, "fid-w1"), {"metadata": {"labels": {"x": "1"}}}, MERGE),
            Request("DELETE", at(PODS, "fid-w1")),
            Watch(PODS, {"resourceVersion": "1", "labelSelector": "s=watch-from-rv-1"}),
        ),
    ),
    # --- create, get, NotFound, AlreadyExists
    Scenario(
        "pod-create",
        "POST a pod: 201 and the whole defaulted, admitted pod",
        (create(PODS, pod("fid-create"), fields=POD_FIELDS),),
    ),
    Scenario(
        "pod-create-bound",
        "POST a pod with spec.nodeName (a node that does not exist)",
        (create(PODS, pod("fid-create-bound", node=FAKE_NODE), fields=POD_FIELDS),),
    ),
    Scenario(
        "pod-get",
        "GET a pod after creating it",
        (create(PODS, pod("fid-get")), Request("GET", at(PODS, "fid-get"), fields=POD_FIELDS)),
    ),
    Scenario(
        "pod-get-missing",
        "GET a pod that does not exist: 404 NotFound",
        (Request("GET", at(PODS, "fid-none")),),
    ),
    Scenario(
        "pod-create-duplicate",
        "POST the same pod twice: 409 AlreadyExists",
        (create(PODS, pod("fid-dup")), create(PODS, pod("fid-dup"))),
    ),
    Scenario(
        "pod-create-with-rv",
        "POST a pod carrying metadata.resourceVersion",
        (create(PODS, pod("fid-create-rv", meta={"resourceVersion": "5"})),),
    ),
    Scenario(
        "pod-create-namespace-mismatch",
        "POST to one namespace a pod whose metadata.namespace names another: 400",
        (create(PODS, pod("fid-ns-mismatch", meta={"namespace": "kube-system"})),),
    ),
    Scenario(
        "create-unsupported-type",
        "POST with Content-Type text/plain: 415, the media types the server decodes",
        (create(PODS, json.dumps(pod("fid-text")), content_type="text/plain"),),
    ),
    Scenario(
        "create-yaml",
        "POST with Content-Type application/yaml",
        (create(PODS, yaml.safe_dump(pod("fid-yaml")), content_type="application/yaml"),),
    ),
    Scenario(
        "generate-name",
        "POST with generateName: the prefix plus 5 random characters",
        (create(PODS, pod("", meta={"generateName": "fid-gen-"})),),
        generated=("fid-gen-",),
    ),
    # --- updates
    Scenario(
        "update-stale-rv",
        "PUT with the resourceVersion of before a PATCH: 409 Conflict (the text clients match)",
        (
            create(PODS, pod("fid-stale")),
            Request("PATCH", at(PODS, "fid-stale"), {"metadata": {"labels": {"x": "1"}}}, MERGE),
            Request("PUT", at(PODS, "fid-stale"), edited(0, set_label("y", "2"))),
        ),
    ),
    Scenario(
        "update-fresh-rv",
        "PUT with the current resourceVersion: 200, a new resourceVersion",
        (
            create(PODS, pod("fid-fresh")),
            Request("PUT", at(PODS, "fid-fresh"), edited(0, set_label("y", "2")), derive=rv_changed),
        ),
    ),
    Scenario(
        "update-without-rv",
        "PUT without a resourceVersion: an unconditional update for pods",
        (
            create(PODS, pod("fid-no-rv")),
            Request("PUT", at(PODS, "fid-no-rv"), edited(0, set_label("y", "2"), rv=""), derive=rv_changed),
        ),
    ),
    Scenario(
        "update-noop",
        "PUT of the unchanged object: 200, the resourceVersion stays",
        (
            create(PODS, pod("fid-noop")),
            Request("PUT", at(PODS, "fid-noop"), edited(0, lambda o: None), derive=rv_changed),
        ),
    ),
    Scenario(
        "update-name-mismatch",
        "PUT to one name a body naming another: 400",
        (
            create(PODS, pod("fid-name-a")),
            Request("PUT", at(PODS, "fid-name-a"), edited(0, set_path("metadata.name", "fid-name-b"))),
        ),
    ),
    Scenario(
        "update-image",
        "PUT changing a container image (allowed on pods)",
        (
            create(PODS, pod("fid-image")),
            Request(
                "PUT",
                at(PODS, "fid-image"),
                edited(0, set_path("spec.containers[0].image", "busybox:2")),
                fields=IMAGES,
            ),
        ),
    ),
    Scenario(
        "immutable-pod-spec",
        "PUT changing restartPolicy: 422, pod updates may not change other fields",
        (
            create(PODS, pod("fid-immutable")),
            Request(
                "PUT",
                at(PODS, "fid-immutable"),
                edited(0, set_path("spec.restartPolicy", "Never")),
                derive=headline,
            ),
        ),
    ),
    Scenario(
        "immutable-node-name",
        "PATCH setting spec.nodeName on an unbound pod: 422",
        (
            create(PODS, pod("fid-set-node")),
            Request(
                "PATCH", at(PODS, "fid-set-node"), {"spec": {"nodeName": FAKE_NODE}}, SMP, derive=headline
            ),
        ),
    ),
    # --- pods/resize (podResizeStrategy, ValidatePodResize)
    Scenario(
        "resize-subresource",
        "PATCH pods/x/resize: the resources change, the generation moves, an image change is dropped",
        (
            create(PODS, pod("fid-resize", containers=[container(resources=_RESOURCES)])),
            Request(
                "PATCH",
                at(PODS, "fid-resize", "resize"),
                {"spec": {"containers": [{"name": "c", "image": "busybox:2", "resources": _RESIZED}]}},
                SMP,
                fields=(*IMAGES, "spec.containers[*].resources"),
            ),
            Request("GET", at(PODS, "fid-resize", "resize"), fields=("spec.containers[*].resources",)),
        ),
    ),
    Scenario(
        "resize-remove-limits",
        "PATCH pods/x/resize removing a limit: 422, resource limits cannot be removed",
        (
            create(PODS, pod("fid-resize-rm", containers=[container(resources=_RESOURCES)])),
            Request(
                "PATCH",
                at(PODS, "fid-resize-rm", "resize"),
                {"spec": {"containers": [{"name": "c", "resources": {"limits": {"memory": None}}}]}},
                SMP,
            ),
        ),
    ),
    Scenario(
        "resize-qos-change",
        "PATCH pods/x/resize making a Burstable pod Guaranteed: 422, the QoS class may not change",
        (
            create(PODS, pod("fid-resize-qos", containers=[container(resources=_RESOURCES)])),
            Request(
                "PATCH",
                at(PODS, "fid-resize-qos", "resize"),
                {"spec": {"containers": [{"name": "c", "resources": _GUARANTEED}]}},
                SMP,
            ),
        ),
    ),
    Scenario(
        "resize-other-resource",
        "PATCH pods/x/resize of ephemeral-storage: 422, only cpu and memory are mutable",
        (
            create(PODS, pod("fid-resize-eph", containers=[container(resources=_RESOURCES)])),
            Request(
                "PATCH",
                at(PODS, "fid-resize-eph", "resize"),
                {
                    "spec": {
                        "containers": [{"name": "c", "resources": {"limits": {"ephemeral-storage": "1Gi"}}}]
                    }
                },
                SMP,
            ),
        ),
    ),
    Scenario(
        "resize-main-resource",
        "PATCH of a container's resources through the pod itself: 422, a forbidden pod update",
        (
            create(PODS, pod("fid-resize-main", containers=[container(resources=_RESOURCES)])),
            Request(
                "PATCH",
                at(PODS, "fid-resize-main"),
                {"spec": {"containers": [{"name": "c", "resources": _RESIZED}]}},
                SMP,
                derive=headline,
            ),
        ),
    ),
    # --- patches
    Scenario(
        "patch-strategic-containers",
        "strategic merge patch of one container of two, by its merge key `name`",
        (
            create(PODS, pod("fid-smp", containers=[container("a"), container("b")])),
            Request(
                "PATCH",
                at(PODS, "fid-smp"),
                {"spec": {"containers": [{"name": "b", "image": "busybox:2"}]}},
                SMP,
                fields=IMAGES,
            ),
        ),
    ),
    Scenario(
        "patch-strategic-env-forbidden",
        "strategic merge patch adding a container env var (merge key `name`): 422, a forbidden pod update",
        (
            create(PODS, pod("fid-smp-env", containers=[container(env=[{"name": "A", "value": "1"}])])),
            Request(
                "PATCH",
                at(PODS, "fid-smp-env"),
                {"spec": {"containers": [{"name": "c", "env": [{"name": "B", "value": "2"}]}]}},
                SMP,
                derive=headline,
            ),
        ),
    ),
    Scenario(
        "patch-strategic-metadata",
        "strategic merge patch of labels (null deletes) and finalizers (a merged set)",
        (
            create(
                PODS, pod("fid-smp-meta", meta={"labels": {"a": "1", "b": "2"}, "finalizers": ["x.io/a"]})
            ),
            Request(
                "PATCH",
                at(PODS, "fid-smp-meta"),
                {"metadata": {"labels": {"a": None, "c": "3"}, "finalizers": ["x.io/b"]}},
                SMP,
            ),
            Request("PATCH", at(PODS, "fid-smp-meta"), {"metadata": {"finalizers": None}}, MERGE),
        ),
    ),
    Scenario(
        "patch-merge",
        "JSON merge patch: labels merged, null deletes, a list (finalizers) replaced",
        (
            create(PODS, pod("fid-merge", meta={"labels": {"a": "1", "b": "2"}, "finalizers": ["x.io/a"]})),
            Request(
                "PATCH",
                at(PODS, "fid-merge"),
                {"metadata": {"labels": {"a": None, "c": "3"}, "finalizers": ["x.io/b"]}},
                MERGE,
            ),
            Request("PATCH", at(PODS, "fid-merge"), {"metadata": {"finalizers": None}}, MERGE),
        ),
    ),
    Scenario(
        "patch-json",
        "JSON patch: add a label, replace an image",
        (
            create(PODS, pod("fid-jsonpatch")),
            Request(
                "PATCH",
                at(PODS, "fid-jsonpatch"),
                [
                    {"op": "add", "path": "/metadata/labels/j", "value": "1"},
                    {"op": "replace", "path": "/spec/containers/0/image", "value": "busybox:2"},
                ],
                JSON_PATCH,
                fields=IMAGES,
            ),
        ),
    ),
    Scenario(
        "patch-json-test-fails",
        "JSON patch whose `test` operation fails: 422",
        (
            create(PODS, pod("fid-jsontest")),
            Request(
                "PATCH",
                at(PODS, "fid-jsontest"),
                [{"op": "test", "path": "/metadata/labels/fidelity", "value": "no"}],
                JSON_PATCH,
            ),
        ),
    ),
    Scenario(
        "patch-json-bad-path",
        "JSON patch removing a path that does not exist",
        (
            create(PODS, pod("fid-jsonbad")),
            Request(
                "PATCH",
                at(PODS, "fid-jsonbad"),
                [{"op": "remove", "path": "/metadata/labels/nope"}],
                JSON_PATCH,
            ),
        ),
    ),
    Scenario(
        "patch-unsupported-type",
        "PATCH with Content-Type text/plain: 415",
        (
            create(PODS, pod("fid-415")),
            Request("PATCH", at(PODS, "fid-415"), "{}", "text/plain"),
            Request("PATCH", at(PODS, "fid-415"), "{}", JSON),
        ),
    ),
    Scenario(
        "patch-missing",
        "PATCH of a pod that does not exist: 404",
        (Request("PATCH", at(PODS, "fid-none"), {"metadata": {"labels": {"a": "1"}}}, SMP),),
    ),
    Scenario(
        "patch-rv-precondition",
        "PATCH carrying a stale metadata.resourceVersion: 409 Conflict",
        (
            create(PODS, pod("fid-patch-rv")),
            Request("PATCH", at(PODS, "fid-patch-rv"), {"metadata": {"labels": {"x": "1"}}}, MERGE),
            Request(
                "PATCH",
                at(PODS, "fid-patch-rv"),
                lambda a: {"metadata": {"resourceVersion": a[0].rv, "labels": {"y": "1"}}},
                MERGE,
            ),
        ),
    ),
    # --- delete
    Scenario(
        "delete-unbound",
        "DELETE an unbound pod: gone at once, the answer is the pod",
        (
            create(PODS, pod("fid-del")),
            Request("DELETE", at(PODS, "fid-del")),
            Request("GET", at(PODS, "fid-del")),
        ),
    ),
    Scenario(
        "delete-missing", "DELETE a pod that does not exist: 404", (Request("DELETE", at(PODS, "fid-none")),)
    ),
    Scenario(
        "delete-precondition-uid",
        "DELETE with a uid precondition that does not match: 409",
        (
            create(PODS, pod("fid-del-uid")),
            Request("DELETE", at(PODS, "fid-del-uid"), {"preconditions": {"uid": UNKNOWN_UID}}),
        ),
    ),
    Scenario(
        "delete-precondition-rv",
        "DELETE with a resourceVersion precondition that does not match: 409",
        (
            create(PODS, pod("fid-del-rv")),
            Request("DELETE", at(PODS, "fid-del-rv"), {"preconditions": {"resourceVersion": "1"}}),
        ),
    ),
    Scenario(
        "delete-grace-unbound",
        "DELETE gracePeriodSeconds=30 of an unbound pod: removed at once (grace forced to 0)",
        (
            create(PODS, pod("fid-grace-unbound")),
            Request("DELETE", at(PODS, "fid-grace-unbound"), {"gracePeriodSeconds": 30}),
            Request("GET", at(PODS, "fid-grace-unbound")),
        ),
    ),
    Scenario(
        "delete-grace-bound",
        "DELETE gracePeriodSeconds=30 of a bound pod: deletionTimestamp now+30 s, still there; a longer "
        "grace changes nothing, a shorter one moves it",
        (
            create(PODS, pod("fid-grace-bound", node=FAKE_NODE)),
            Request("DELETE", at(PODS, "fid-grace-bound"), {"gracePeriodSeconds": 30}, derive=grace_is(30)),
            Request("GET", at(PODS, "fid-grace-bound")),
            Request("DELETE", at(PODS, "fid-grace-bound"), {"gracePeriodSeconds": 60}, derive=grace_is(30)),
            Request("DELETE", at(PODS, "fid-grace-bound"), {"gracePeriodSeconds": 10}, derive=grace_is(10)),
        ),
    ),
    Scenario(
        "delete-finalizer",
        "DELETE of a pod with a finalizer: it stays, deleting; removing the finalizer removes it",
        (
            create(PODS, pod("fid-fin", meta={"finalizers": ["x.io/hold"]})),
            Request("DELETE", at(PODS, "fid-fin")),
            Request("GET", at(PODS, "fid-fin")),
            Request("PATCH", at(PODS, "fid-fin"), {"metadata": {"finalizers": None}}, MERGE),
            Request("GET", at(PODS, "fid-fin")),
        ),
    ),
    Scenario(
        "delete-collection",
        "DELETE of a collection by label selector: the list of what was deleted",
        (
            create(PODS, _labelled("fid-dc-a", s="dc")),
            create(PODS, _labelled("fid-dc-b", s="dc")),
            Request("DELETE", PODS, query={"labelSelector": "s=dc"}),
            listing(PODS, labelSelector="s=dc"),
        ),
    ),
    # --- status subresource
    Scenario(
        "status-put-ignores-spec",
        "PUT pods/status: status changes, spec changes are ignored",
        (
            create(PODS, pod("fid-status-put")),
            Request(
                "PUT",
                at(PODS, "fid-status-put", "status"),
                edited(
                    0,
                    lambda o: (
                        set_path("spec.containers[0].image", "busybox:9")(o),
                        set_path("status.message", "hi")(o),
                    ),
                ),
                fields=(*IMAGES, "status.message"),
            ),
        ),
    ),
    Scenario(
        "status-patch-conditions",
        "strategic merge patches of pods/status: conditions merged by `type`, spec ignored",
        (
            create(PODS, pod("fid-status-patch")),
            Request(
                "PATCH",
                at(PODS, "fid-status-patch", "status"),
                {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
                SMP,
                fields=("status.conditions",),
            ),
            Request(
                "PATCH",
                at(PODS, "fid-status-patch", "status"),
                {
                    "spec": {"activeDeadlineSeconds": 5},
                    "status": {"conditions": [{"type": "Initialized", "status": "True"}]},
                },
                SMP,
                fields=("status.conditions", "spec.activeDeadlineSeconds"),
            ),
        ),
    ),
    Scenario(
        "main-ignores-status",
        "PUT of the pod with a changed status: the status change is ignored",
        (
            create(PODS, pod("fid-main-status")),
            Request(
                "PUT",
                at(PODS, "fid-main-status"),
                edited(0, lambda o: (set_path("status.phase", "Running")(o), set_label("z", "1")(o))),
                fields=("status",),
            ),
        ),
    ),
    Scenario(
        "status-missing",
        "PATCH pods/status of a pod that does not exist: 404",
        (Request("PATCH", at(PODS, "fid-none", "status"), {"status": {"message": "x"}}, SMP),),
    ),
    # --- binding
    Scenario(
        "pod-binding",
        "POST pods/binding: 201 Success, the pod is bound; a second binding: 409",
        (
            create(PODS, pod("fid-bind")),
            create(
                at(PODS, "fid-bind", "binding"),
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": "fid-bind"},
                    "target": {"kind": "Node", "name": FAKE_NODE},
                },
            ),
            Request("GET", at(PODS, "fid-bind"), fields=("spec.nodeName", "status.conditions")),
            create(
                at(PODS, "fid-bind", "binding"),
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": "fid-bind"},
                    "target": {"kind": "Node", "name": "other"},
                },
            ),
        ),
    ),
    # --- watch
    Scenario(
        "watch-from-rv",
        "watch from the resourceVersion of a create: MODIFIED then DELETED, nothing synthetic",
        (
            create(PODS, _labelled("fid-watch", s="watch-from-rv")),
            Request("PATCH", at(PODS, "fid-watch"), {"metadata": {"labels": {"x": "1"}}}, MERGE),
            Request("DELETE", at(PODS, "fid-watch")),
            Watch(PODS, lambda a: {"resourceVersion": a[0].rv, "labelSelector": "s=watch-from-rv"}),
        ),
    ),
    Scenario(
        "watch-without-rv",
        "watch without a resourceVersion: one synthetic ADDED per existing object",
        (
            create(PODS, _labelled("fid-wa", s="watch-now")),
            create(PODS, _labelled("fid-wb", s="watch-now")),
            Watch(PODS, {"labelSelector": "s=watch-now"}),
        ),
    ),
    Scenario(
        "watch-selector-transitions",
        "watch with a label selector while a pod's label moves in and out: ADDED, then DELETED",
        (
            create(PODS, _labelled("fid-wsel", s="wsel", tier="a")),
            Request("PATCH", at(PODS, "fid-wsel"), {"metadata": {"labels": {"tier": "b"}}}, MERGE),
            Request("PATCH", at(PODS, "fid-wsel"), {"metadata": {"labels": {"tier": "a"}}}, MERGE),
            Watch(PODS, lambda a: {"resourceVersion": a[0].rv, "labelSelector": "s=wsel,tier=b"}),
        ),
    ),
    Scenario(
        "watch-field-selector",
        "watch with fieldSelector metadata.name, as kubectl get -w NAME",
        (
            create(PODS, _labelled("fid-wf", s="wf")),
            create(PODS, _labelled("fid-wf-other", s="wf")),
            Watch(PODS, {"resourceVersion": "0", "fieldSelector": "metadata.name=fid-wf"}),
        ),
    ),
    Scenario(
        "watch-future-rv",
        "watch from a resourceVersion far ahead of the server's",
        (Watch(PODS, {"resourceVersion": "999999999", "labelSelector": MARK}),),
    ),
    Scenario(
        "bad-resource-version",
        "a resourceVersion that is not a number: GET, LIST and WATCH each answer it their way",
        (
            create(PODS, pod("fid-bad-rv")),
            Request("GET", at(PODS, "fid-bad-rv"), query={"resourceVersion": "abc"}),
            listing(PODS, resourceVersion="abc"),
            Watch(PODS, {"resourceVersion": "abc", "labelSelector": MARK}),
        ),
    ),
    Scenario(
        "list-label-selectors",
        "list with label selectors: =, !=, in, notin, exists, !exists",
        (
            create(PODS, _labelled("fid-l-web", tier="web", env="prod")),
            create(PODS, _labelled("fid-l-db", tier="db")),
            create(PODS, _labelled("fid-l-none")),
            listing(PODS, labelSelector="fidelity,tier=web"),
            listing(PODS, labelSelector="fidelity,tier!=web"),
            listing(PODS, labelSelector="fidelity,tier in (web,db)"),
            listing(PODS, labelSelector="fidelity,tier notin (web)"),
            listing(PODS, labelSelector="fidelity,env"),
            listing(PODS, labelSelector="fidelity,!env"),
            listing(PODS, labelSelector="fidelity,tier in (web"),
        ),
    ),
    Scenario(
        "list-field-selectors",
        "list with field selectors: metadata.name, spec.nodeName, status.phase, !=",
        (
            create(PODS, pod("fid-f-unbound")),
            create(PODS, pod("fid-f-bound", node=FAKE_NODE)),
            listing(PODS, labelSelector=MARK, fieldSelector="metadata.name=fid-f-unbound"),
            listing(PODS, labelSelector=MARK, fieldSelector=f"spec.nodeName={FAKE_NODE}"),
            listing(PODS, labelSelector=MARK, fieldSelector="spec.nodeName="),
            listing(
                PODS, labelSelector=MARK, fieldSelector="status.phase=Pending,metadata.name!=fid-f-bound"
            ),
        ),
    ),
    Scenario(
        "list-field-selector-unsupported",
        "list with a field the server cannot select on: 400",
        (listing(PODS, fieldSelector="spec.priority=0"),),
    ),
    Scenario(
        "list-resource-version",
        "list resourceVersion rules: the list RV, RV=0, Exact at an older RV, match without RV",
        (
            create(PODS, _labelled("fid-lrv", s="lrv")),
            Request(
                "GET",
                PODS,
                query={"labelSelector": "s=lrv"},
                derive=lambda a, e: {"list_rv_not_older": int(a.rv) >= int(e[0].rv)},
            ),
            listing(PODS, labelSelector="s=lrv", resourceVersion="0"),
            create(PODS, _labelled("fid-lrv-2", s="lrv")),
            Request(
                "GET",
                PODS,
                query=lambda a: {
                    "labelSelector": "s=lrv",
                    "resourceVersion": a[0].rv,
                    "resourceVersionMatch": "Exact",
                },
            ),
            listing(PODS, labelSelector="s=lrv", resourceVersionMatch="NotOlderThan"),
        ),
    ),
    Scenario(
        "list-limit-continue",
        "list with limit=2 of 3 pods: a continue token and remainingItemCount, then the rest",
        (
            create(PODS, _labelled("fid-page-a", s="page")),
            create(PODS, _labelled("fid-page-b", s="page")),
            create(PODS, _labelled("fid-page-c", s="page")),
            Request(
                "GET",
                PODS,
                query={"labelSelector": "s=page", "limit": "2"},
                derive=lambda a, e: {"continue": bool(a.obj["metadata"].get("continue"))},
            ),
            Request(
                "GET",
                PODS,
                query=lambda a: {
                    "labelSelector": "s=page",
                    "limit": "2",
                    "continue": a[3].obj["metadata"].get("continue", ""),
                },
            ),
            Request("GET", PODS, query={"limit": "1"}),
        ),
    ),
    Scenario(
        "namespace-missing",
        "a namespace that does not exist: create 404 (the namespace), get 404 (the pod), list 200 empty",
        (
            create("/api/v1/namespaces/fid-nope/pods", pod("fid-nons")),
            Request("GET", "/api/v1/namespaces/fid-nope/pods/fid-nons"),
            listing("/api/v1/namespaces/fid-nope/pods"),
        ),
    ),
    Scenario(
        "unknown-resource",
        "GET of a resource type the server does not have: 404",
        (Request("GET", f"/api/v1/namespaces/{NS}/frobs/x"),),
    ),
    Scenario(
        "get-future-rv",
        "GET with a resourceVersion far ahead: after ~3 s, 504 Timeout, ResourceVersionTooLarge",
        (
            create(PODS, pod("fid-future")),
            Request("GET", at(PODS, "fid-future"), query={"resourceVersion": "999999999"}),
        ),
    ),
    # --- validation
    Scenario(
        "invalid-missing-image",
        "a container without image: 422 Invalid with a FieldValueRequired cause",
        (create(PODS, pod("fid-noimage", containers=[{"name": "c"}])),),
    ),
    Scenario(
        "invalid-name",
        "a pod named Bad_Name: 422 Invalid, metadata.name",
        (create(PODS, pod("Bad_Name")),),
    ),
    Scenario(
        "invalid-restart-policy",
        "restartPolicy Sometimes: 422 Invalid, FieldValueNotSupported",
        (create(PODS, pod("fid-restart", restartPolicy="Sometimes")),),
    ),
    Scenario(
        "invalid-many",
        "several errors at once: every cause, in the server's order",
        (create(PODS, pod("fid-many", containers=[{"name": "Bad Name"}], restartPolicy="Sometimes")),),
    ),
    Scenario(
        "field-validation-strict",
        "unknown fields with fieldValidation=Strict: rejected",
        (create(PODS, pod("fid-strict", bogus=1), query={"fieldValidation": "Strict"}),),
    ),
    Scenario(
        "field-validation-strict-duplicate",
        "a duplicated JSON field with fieldValidation=Strict: rejected",
        (
            create(
                PODS,
                '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fid-dupfield","name":"fid-dupfield",'
                '"labels":{"fidelity":"yes"}},"spec":{"schedulerName":"fidelity-none",'
                '"containers":[{"name":"c","image":"busybox:1"}]}}',
                query={"fieldValidation": "Strict"},
            ),
        ),
    ),
    Scenario(
        "field-validation-warn",
        "unknown fields with fieldValidation=Warn: created, with Warning headers",
        (create(PODS, pod("fid-warn", bogus=1, meta={"bogus": 2}), query={"fieldValidation": "Warn"}),),
    ),
    Scenario(
        "field-validation-ignore",
        "unknown fields with fieldValidation=Ignore: created, no warning",
        (create(PODS, pod("fid-ignore", bogus=1), query={"fieldValidation": "Ignore"}),),
    ),
    Scenario(
        "field-validation-default",
        "unknown fields without fieldValidation",
        (create(PODS, pod("fid-fv-default", bogus=1)),),
    ),
    Scenario(
        "field-validation-bad-value",
        "fieldValidation=Loud: 400",
        (create(PODS, pod("fid-fv-bad"), query={"fieldValidation": "Loud"}),),
    ),
    # --- dry run
    Scenario(
        "dry-run-create",
        "POST with dryRun=All: 201, nothing stored",
        (
            create(PODS, pod("fid-dry"), query={"dryRun": "All"}, fields=POD_FIELDS),
            Request("GET", at(PODS, "fid-dry")),
        ),
    ),
    Scenario(
        "dry-run-delete",
        "DELETE with dryRun=All: the object stays",
        (
            create(PODS, pod("fid-dry-del")),
            Request("DELETE", at(PODS, "fid-dry-del"), query={"dryRun": "All"}),
            Request("GET", at(PODS, "fid-dry-del")),
        ),
    ),
    Scenario(
        "dry-run-bad-value",
        "dryRun=Some: 400",
        (create(PODS, pod("fid-dry-bad"), query={"dryRun": "Some"}),),
    ),
    # --- kubectl
    Scenario(
        "kubectl-apply-twice",
        "kubectl apply of an unchanged pod, twice: created, then unchanged",
        (
            Kubectl(("apply", "-f", "-"), json.dumps(pod("fid-apply"))),
            Kubectl(("apply", "-f", "-"), json.dumps(pod("fid-apply"))),
        ),
    ),
    Scenario(
        "kubectl-apply-change",
        "kubectl apply of a changed label: configured",
        (
            Kubectl(("apply", "-f", "-"), json.dumps(pod("fid-apply-chg"))),
            Kubectl(("apply", "-f", "-"), json.dumps(pod("fid-apply-chg", meta={"labels": {"v": "2"}}))),
            Request("GET", at(PODS, "fid-apply-chg")),
        ),
    ),
    Scenario(
        "kubectl-delete",
        "kubectl delete of an unbound pod",
        (create(PODS, pod("fid-kdel")), Kubectl(("delete", "pod", "fid-kdel"))),
    ),
    # --- Tables
    Scenario(
        "table-pods",
        "list pods as a Table: columns and cells",
        (
            create(PODS, pod("fid-t-unbound")),
            create(PODS, pod("fid-t-bound", node=FAKE_NODE)),
            listing(PODS, accept=TABLE, labelSelector=MARK),
        ),
    ),
    Scenario(
        "table-pod-get",
        "GET one pod as a Table",
        (create(PODS, pod("fid-t-one")), Request("GET", at(PODS, "fid-t-one"), accept=TABLE)),
    ),
    Scenario(
        "table-nodes",
        "list nodes as a Table, with a Ready node that reports addresses and a version",
        (
            create(NODES, node("fid-t-node")),
            Request(
                "PATCH",
                at(NODES, "fid-t-node", "status"),
                {
                    "status": {
                        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                        "addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
                        "nodeInfo": {
                            "kubeletVersion": "v1.37.2",
                            "osImage": "Fidelity OS",
                            "kernelVersion": "6.1",
                            "containerRuntimeVersion": "docker://27",
                        },
                    }
                },
                SMP,
            ),
            listing(NODES, accept=TABLE, labelSelector=MARK),
        ),
    ),
    # --- configmaps, secrets
    Scenario(
        "configmap-crud",
        "configmap: create, update its data, delete (a Status answer)",
        (
            create(CONFIGMAPS, configmap("fid-cm"), fields=("data",)),
            Request("PUT", at(CONFIGMAPS, "fid-cm"), edited(0, set_path("data.k", "w")), fields=("data",)),
            Request("DELETE", at(CONFIGMAPS, "fid-cm")),
            Request("GET", at(CONFIGMAPS, "fid-cm")),
        ),
    ),
    Scenario(
        "configmap-immutable",
        "an immutable configmap: changing its data is 422",
        (
            create(CONFIGMAPS, {**configmap("fid-cm-imm"), "immutable": True}),
            Request("PUT", at(CONFIGMAPS, "fid-cm-imm"), edited(0, set_path("data.k", "w"))),
        ),
    ),
    Scenario(
        "configmap-invalid-key",
        "a configmap key with a space: 422",
        (create(CONFIGMAPS, configmap("fid-cm-bad", {"bad key": "v"})),),
    ),
    Scenario(
        "secret-string-data",
        "a secret with stringData: stored base64 in data, type Opaque",
        (
            create(
                SECRETS,
                secret("fid-secret", stringData={"user": "admin"}),
                fields=("data", "type", "stringData"),
            ),
            Request("GET", at(SECRETS, "fid-secret"), fields=("data", "type")),
        ),
    ),
    Scenario(
        "secret-type-immutable",
        "changing a secret's type: 422",
        (
            create(SECRETS, secret("fid-secret-type", data={"a": "YQ=="})),
            Request("PUT", at(SECRETS, "fid-secret-type"), edited(0, set_path("type", "kubernetes.io/tls"))),
        ),
    ),
    # --- nodes, leases
    Scenario(
        "node-create",
        "POST a node: what admission and defaulting add (taints, status)",
        (create(NODES, node("fid-node")), Request("GET", at(NODES, "fid-node"), fields=("spec", "status"))),
    ),
    Scenario(
        "node-status-patch",
        "strategic merge patch of nodes/status: conditions merged by `type`, spec unchanged",
        (
            create(NODES, node("fid-node-st")),
            Request(
                "PATCH",
                at(NODES, "fid-node-st", "status"),
                {
                    "spec": {"unschedulable": True},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
                },
                SMP,
                fields=("spec.unschedulable", "status.conditions"),
            ),
            Request(
                "PATCH",
                at(NODES, "fid-node-st", "status"),
                {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"}]}},
                SMP,
                fields=("status.conditions[*].type",),
            ),
        ),
    ),
    Scenario("node-missing", "GET a node that does not exist: 404", (Request("GET", at(NODES, "fid-none")),)),
    Scenario(
        "lease-crud",
        "a lease: create, renew (MicroTime), renew with a stale resourceVersion: 409 for a grouped resource",
        (
            create(LEASES, lease("fid-lease"), fields=("spec",)),
            Request(
                "PUT",
                at(LEASES, "fid-lease"),
                edited(0, set_path("spec.renewTime", "2026-01-01T00:00:00.123456Z")),
                fields=("spec",),
            ),
            Request(
                "PUT",
                at(LEASES, "fid-lease"),
                edited(0, set_path("spec.renewTime", "2026-01-01T00:00:01.000000Z")),
            ),
        ),
    ),
    Scenario(
        "lease-missing",
        "GET a lease that does not exist: 404 for a grouped resource",
        (Request("GET", at(LEASES, "fid-none")),),
    ),
    Scenario(
        "lease-invalid",
        "a lease with leaseDurationSeconds 0: 422",
        (
            create(
                LEASES, {**lease("fid-lease-bad"), "spec": {"holderIdentity": "x", "leaseDurationSeconds": 0}}
            ),
        ),
    ),
)


SCENARIO_NAMES = [s.name for s in SCENARIOS]
assert len(set(SCENARIO_NAMES)) == len(SCENARIO_NAMES), "scenario names must be unique"


def scenario(name: str) -> Scenario:
    return next(s for s in SCENARIOS if s.name == name)


# ------------------------------------------------------------------ what was fixed, and the report


@dataclass(frozen=True)
class Fix:
    """A change to the emulator this comparison led to, and the scenarios that differed before it."""

    what: str
    files: str
    scenarios: tuple[str, ...]


_GENERATION_ONLY = [
    "watch-from-rv-1",
    "pod-create",
    "pod-create-bound",
    "pod-get",
    "pod-create-duplicate",
    "generate-name",
    "update-stale-rv",
    "update-fresh-rv",
    "update-without-rv",
    "update-noop",
    "update-name-mismatch",
    "update-image",
    "patch-strategic-containers",
    "patch-strategic-metadata",
    "patch-merge",
    "patch-json",
    "patch-rv-precondition",
    "delete-unbound",
    "delete-precondition-uid",
    "delete-precondition-rv",
    "delete-grace-unbound",
    "delete-grace-bound",
    "delete-finalizer",
    "status-put-ignores-spec",
    "main-ignores-status",
    "pod-binding",
    "watch-from-rv",
    "watch-without-rv",
    "watch-selector-transitions",
    "watch-field-selector",
    "list-label-selectors",
    "list-field-selectors",
    "get-future-rv",
    "field-validation-warn",
    "field-validation-ignore",
    "field-validation-default",
    "dry-run-create",
    "kubectl-apply-change",
    "kubectl-delete",
    "table-pods",
    "table-pod-get",
]

FIXES: tuple[Fix, ...] = (
    Fix(
        "Pods start at `metadata.generation: 1` (podStrategy.PrepareForCreate); the store already bumped it "
        "on spec changes and graceful deletes. Before, every pod answer lacked it.",
        "api/defaults.py",
        (*_GENERATION_ONLY, "pod-create-with-rv"),
    ),
    Fix(
        "Errors that are no API status answer 500 without a reason (responsewriters.ErrorToAPIStatus): "
        "`resourceVersion should not be set on objects to be created`; an unparsable resourceVersion is "
        "the versioner's `resourceVersion: Invalid value: ...strconv.ParseUint...` text, 500 on GET and "
        "WATCH, 400 `invalid resource version: ...` on LIST (was 400 everywhere).",
        "api/errors.py, api/handlers/verbs.py, storage/store.py",
        ("pod-create-with-rv", "bad-resource-version"),
    ),
    Fix(
        "Errors built by NewGenericServerResponse carry `details: {}` (JSON patch failures); a PATCH "
        "Content-Type the route does not consume is go-restful's `415: Unsupported Media Type`.",
        "api/patch.py, api/handlers/verbs.py",
        ("patch-json-test-fails", "patch-json-bad-path", "patch-unsupported-type"),
    ),
    Fix(
        "A deletecollection answers the items as listed, before deletion, at the list's resourceVersion "
        "(Store.DeleteCollection), not the deleted objects.",
        "api/handlers/verbs.py",
        ("delete-collection",),
    ),
    Fix(
        "Pod and node conditions carry `lastProbeTime`/`lastTransitionTime`/`lastHeartbeatTime: null` "
        "when unset (metav1.Time is a struct, omitempty never drops it); node status gets `allocatable` "
        "from `capacity`, `daemonEndpoints.kubeletEndpoint.Port: 0` and the empty `nodeInfo` strings.",
        "api/defaults.py",
        ("status-patch-conditions", "node-status-patch"),
    ),
    Fix(
        "Lists at an older resourceVersion (`resourceVersionMatch=Exact`) are served from the event log "
        "as etcd serves old revisions (was 410 Expired); `limit`/`continue` paginate with the real "
        "continue token and `remainingItemCount` (was: limit ignored); a Status's empty "
        "`details.name` is left out (omitempty).",
        "storage/store.py, api/handlers/verbs.py, api/errors.py",
        ("list-resource-version", "list-limit-continue"),
    ),
    Fix(
        'Duplicated JSON fields are strict decoding errors (`duplicate field "metadata.name"`): 400 '
        "with fieldValidation=Strict, a warning with Warn.",
        "api/decoding.py",
        ("field-validation-strict-duplicate",),
    ),
    Fix(
        "Bad `fieldValidation` / `dryRun` values are 422 Invalid `CreateOptions.meta.k8s.io` (Update-, "
        "Patch-, DeleteOptions) with causes, validated before the body (were 400 BadRequest).",
        "api/decoding.py, api/errors.py",
        ("field-validation-bad-value", "dry-run-bad-value"),
    ),
    Fix(
        "A dry-run DELETE answers the object as the deletion would leave it (deletionTimestamp, "
        "generation), or the Success Status for kinds that do not return it.",
        "storage/store.py, api/handlers/verbs.py",
        ("dry-run-delete",),
    ),
    Fix(
        "ConfigMap and Secret validation: data keys (IsConfigMapKey), `immutable: true`, a Secret's "
        "immutable type and the keys its type requires; Lease `leaseDurationSeconds` > 0.",
        "api/validation/kinds.py, api/handlers/verbs.py",
        ("configmap-immutable", "configmap-invalid-key", "secret-type-immutable", "lease-invalid"),
    ),
    Fix(
        "Bodies in `application/yaml` are decoded; the 415 for other types names what the real server "
        "decodes (`application/json, application/yaml, application/vnd.kubernetes.protobuf`).",
        "api/decoding.py",
        ("create-unsupported-type", "create-yaml"),
    ),
    Fix(
        "The `pods/resize` subresource (was 404): podResizeStrategy keeps everything but the "
        "containers' resources and resizePolicy and bumps the generation; ValidatePodResize's "
        "refusals (removed requests or limits, QoS class change, resources other than cpu and memory, "
        "static pods); the PodResizeValidator admission's 403 above the node's allocatable.",
        "api/validation/resize.py, api/handlers/verbs.py, api/resources.py, storage/store.py",
        ("resize-subresource", "resize-remove-limits", "resize-qos-change", "resize-other-resource"),
    ),
)


def fixed_scenarios() -> set[str]:
    return {name for fix in FIXES for name in fix.scenarios}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(value: Any, skip: int = 0, limit: int = 160) -> str:
    """A value as a table cell: from character `skip` on, at most `limit` characters."""
    text = json.dumps(value) if not isinstance(value, str) else value
    text = text.replace("\n", "\\n")
    if skip:
        text = "…" + text[skip:]
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return "`` " + _cell(text) + " ``"


def _divergence(a: Any, b: Any) -> int:
    """Where two long strings start to differ, less some context (0 for anything else)."""
    if not (isinstance(a, str) and isinstance(b, str)):
        return 0
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    return max(0, common - 40) if common > 80 else 0


def render_report(results: dict[str, Result], known: dict[str, str]) -> str:
    """docs/fidelity.md: the counts, one row per scenario, every documented difference."""
    fixed = fixed_scenarios()
    matching = [n for n in SCENARIO_NAMES if n in results and not results[n].differences]
    documented = [n for n in SCENARIO_NAMES if n in known]
    lines = [
        "# Emulator fidelity: the emulator against the real kube-apiserver",
        "",
        "<!-- Generated by tests/integration/test_emulator_fidelity.py; do not edit by hand. Regenerate with",
        "     FIDELITY_REPORT=docs/fidelity.md .venv/bin/python -m pytest -q --control-plane=real \\",
        "       tests/integration/test_emulator_fidelity.py -->",
        "",
        f"Each scenario below is a short sequence of HTTP requests (or kubectl commands) sent, byte for byte "
        f"the same, to the emulator (`vk-provider sandbox`) and to the real control plane of the same "
        f"release (`vk-provider sandbox --control-plane real`, kube-apiserver {_kube_version()}). What a "
        f"client sees is compared: the status code, the `Status` body (status, message, reason, code, "
        f"details with name, group, kind and causes), `Warning` headers, the object's metadata and the "
        f"fields that matter for the scenario, watch events in order. uids, timestamps, resourceVersion "
        f"values, managedFields, random name suffixes and continue tokens' resourceVersions are "
        f"normalised away; so is the TTL controller's `node.alpha.kubernetes.io/ttl` annotation, which the "
        f"real controller manager adds a moment after a node is created (the emulator has no TTL "
        f"controller). Messages are compared exactly. The scenarios and the comparison are in "
        f"`tests/support/fidelity.py`.",
        "",
        f"- scenarios: **{len(SCENARIO_NAMES)}** (run for this report: {len(results)})",
        f"- matching: **{len(matching)}**",
        f"- matching only since an emulator fix made for this comparison: **{len(fixed & set(matching))}**",
        f"- documented differences (`KNOWN_DIFFERENCES`): **{len(documented)}**",
        "",
        "| Scenario | What it checks | Result |",
        "|---|---|---|",
    ]
    for s in SCENARIOS:
        if s.name not in results:
            outcome = "not run"
        elif s.name in known:
            outcome = "documented difference"
        elif results[s.name].differences:
            outcome = "**differs**"
        else:
            outcome = "matches (fixed)" if s.name in fixed else "matches"
        lines.append(f"| `{s.name}` | {_cell(s.about)} | {outcome} |")
    lines += ["", "## Documented differences", ""]
    for name in documented:
        lines += [f"### `{name}`", "", known[name], ""]
        result = results.get(name)
        if result is not None and result.differences:
            lines += ["| Step, field | Real | Emulator |", "|---|---|---|"]
            for d in result.differences:
                skip = _divergence(d.real, d.emulator)
                lines.append(
                    f"| {d.step + 1} `{d.key}` | {_code(d.real, skip)} | {_code(d.emulator, skip)} |"
                )
            lines.append("")
    lines += [
        "## Not reachable by a scenario",
        "",
        "- **A watch from a resourceVersion the server no longer has.** The real server answers it with "
        "HTTP 200 and one `ERROR` event carrying a 410 `Expired` Status (`too old resource version: N "
        "(M)`, k8s.io/apiserver pkg/storage/cacher/watch_cache_history.go), but only once its watch "
        "cache has dropped events: the cache of a fresh server reaches back to resourceVersion 1 "
        "(`watch-from-rv-1`), grows while events are younger than 75 s, and `--control-plane real` "
        "starts etcd empty every time. Checked by hand against a real server that had run for a while, "
        'and an emulator restarted on its state: both sent `{"type":"ERROR","object":{"kind":"Status",'
        '"apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (354)",'
        '"reason":"Expired","code":410}}` (the emulator with its own M) and closed the stream.',
        "",
        "## Deliberate differences",
        "",
        "The emulator refuses what a web page could send it (vk_provider/sandbox/api/request_guard.py, "
        "docs/sandbox.md); no scenario sends such a request, since both servers must get the same bytes.",
        "",
        "- **A body without Content-Type** is answered 415 `UnsupportedMediaType` before it is read, as one "
        "of a type neither server decodes is on both (`create-unsupported-type`). The real server decodes a "
        "POST or PUT body without Content-Type as JSON (its create and update routes consume `*/*`); a "
        "PATCH without one is a 415 on both. A browser's cross-site form post carries no JSON type, so it "
        "never reaches a handler. The `proxy` subresources pass any body on, as the real server's do.",
        "- **A request without credentials** is 401 `Unauthorized`: the emulator has no anonymous user, "
        "where the real server (`--anonymous-auth=true`) answers `system:anonymous` 403 `Forbidden`. "
        "GET of /healthz, /livez, /readyz and /version is open on both (`system:public-info-viewer`).",
        "- **An `Origin` that is not local, or a `Host` that is not a loopback name or the address the "
        "emulator listens on**, is 403 `Forbidden`; the real server ignores `Host`, and `Origin` except for "
        "the CORS headers of `--cors-allowed-origins`.",
        "",
        "## Emulator fixes made for this comparison",
        "",
    ]
    for fix in FIXES:
        names = ", ".join(f"`{n}`" for n in fix.scenarios)
        lines += [f"- {fix.what} ({fix.files}). Scenarios: {names}.", ""]
    return "\n".join(lines).rstrip() + "\n"


def _kube_version() -> str:
    from vk_provider.kube_version import KUBE_VERSION

    return str(KUBE_VERSION)


# ------------------------------------------------------------------ command line


async def _main(real_config: str, emulator_config: str, names: list[str]) -> int:
    real = Server.from_kubeconfig("real", Path(real_config))
    emulator = Server.from_kubeconfig("emulator", Path(emulator_config))
    failed = 0
    for s in SCENARIOS:
        if names and s.name not in names:
            continue
        result = await run_pair(real, emulator, s)
        diffs = result.differences
        print(f"{'ok  ' if not diffs else 'DIFF'} {s.name}")
        for d in diffs:
            print(f"     {d}")
        failed += bool(diffs)
    print(f"{failed} scenario(s) differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(_main(sys.argv[1], sys.argv[2], sys.argv[3:])))
