"""Emulator fidelity's harness: one scenario against the emulator and the real kube-apiserver, compared.

What lives here, top to bottom:
- `Server` (a URL, TLS settings, bearer token and kubeconfig read from a sandbox's kubeconfig),
  `SandboxProcess` (`vk-provider sandbox [--control-plane real] --no-provider` as a subprocess)
  and `running_pair` (the real one and the emulator, started side by side);
- the step types a scenario is made of: `Request` (one HTTP request), `Watch` (a watch, read
  until the server ends it) and `Kubectl` (the real kubectl); bodies, paths and queries may be
  tiny functions of the answers so far (`Answers`), e.g. to send back a stale resourceVersion;
- `observe`: what a client sees in an answer, flattened to `{"path": value}` and normalised
  (uids, timestamps, resourceVersion values, managedFields and random name suffixes replaced);
  Status bodies are always observed whole, objects by their metadata plus the step's `fields`;
- `run_scenario` / `compare`: run one scenario against one server, and the differences between
  the two servers' observations;
- `run_pair`: both servers, one scenario.
The scenarios are data in scenarios*.py, written with builders.py; report.py renders the report.
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
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
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
PODTEMPLATES = f"/api/v1/namespaces/{NS}/podtemplates"
RUNTIMECLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
SECRETS = f"/api/v1/namespaces/{NS}/secrets"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
NODES = "/api/v1/nodes"
DEVICECLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
DEVICETAINTRULES = "/apis/resource.k8s.io/v1/devicetaintrules"
RESOURCESLICES = "/apis/resource.k8s.io/v1/resourceslices"
RESOURCECLAIMS = f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims"
CLAIMTEMPLATES = f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaimtemplates"
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


@contextmanager
def running_pair(base: Path) -> Iterator[tuple[Server, Server]]:
    """(real, emulator) sandboxes under `base`, started side by side, stopped when the block ends."""
    processes = {name: SandboxProcess(name, base / name) for name in ("real", "emulator")}
    started: dict[str, Server] = {}
    failures: list[BaseException] = []

    def start(name: str) -> None:
        try:
            started[name] = processes[name].start()
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=start, args=(name,)) for name in processes]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failures:
            raise failures[0]
        yield started["real"], started["emulator"]
    finally:
        for process in processes.values():
            process.stop()


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


def at(collection: str, name: str, sub: str = "") -> str:
    return f"{collection}/{name}" + (f"/{sub}" if sub else "")


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


async def send(session: aiohttp.ClientSession, server: Server, step: Request, answers: Answers) -> Answer:
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
                answer = await send(session, server, step, answers)
            elif isinstance(step, Watch):
                answer = await _watch(session, server, step, answers)
            else:
                answer = await _kubectl(server, step, cache)
            answers.append(answer)
            observations.append(observe(step, answer, answers[:-1], scenario))
    finally:
        await cleanup(session, server)
    return observations


CLEANUP: tuple[str, ...] = (PODS, CONFIGMAPS, PODTEMPLATES, SECRETS, LEASES, NODES, RUNTIMECLASSES)
CLEANUP += (DEVICECLASSES, DEVICETAINTRULES, RESOURCESLICES, RESOURCECLAIMS, CLAIMTEMPLATES)


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


def object_view(obj: Obj, fields: tuple[str, ...]) -> Obj:
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
                {p: v for p, v in object_view(item, fields).items() if p not in ("kind", "apiVersion")}
                for item in body["items"]
            ],
            "items.kind": [item.get("kind", ABSENT) for item in body["items"]],
        }
    return object_view(body, fields)


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
