"""Concurrent bursts for the fidelity comparison: many writers at once, the same on both servers.

What lives here: `Burst` (data: the ConfigMaps created first, the concurrent requests made from
those answers, whether the real server's counts are the same every run, and the invariants every
run keeps), `BURSTS`, `run_burst` (one burst against one server, with a watch open from before
the burst to a sentinel object created after it) and `compare_bursts` (an `Outcome` of each
server: the answers counted by label, code and reason, the messages, the final objects and the
watch's events, normalised as harness.py normalises scenarios).
Where the real server's counts depend on how the requests interleave (deletes racing updates), only
what holds on every real run is compared: each invariant is checked on the real server's outcome
too, so one the real server breaks fails the comparison as loudly as an emulator regression.
Must not: tailor a request to one server (both get the same requests), or change the emulator.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from tests.support.fidelity.builders import configmap, create
from tests.support.fidelity.harness import (
    _RAND,
    CONFIGMAPS,
    JSON,
    JSON_PATCH,
    MERGE,
    SMP,
    Answer,
    Answers,
    Normaliser,
    Obj,
    Request,
    Server,
    at,
    cleanup,
    flatten,
    object_view,
    send,
)

BURST = "burst"  # the label every object of a burst carries: burst=<the burst's name>
WATCH_SECONDS = 120  # the watch's timeoutSeconds: a backstop, the sentinel ends it long before
WRITERS = 100


@dataclass(frozen=True)
class Shot:
    """One request of a burst, counted under `label`; `target`: the object it writes ("" for a create)."""

    label: str
    request: Request
    target: str = ""
    wave: int = 0  # 1: sent as soon as the first answer to the wave-0 shots arrives


@dataclass
class Outcome:
    """What one server answered to a burst and what a watch saw of it."""

    server: str
    start_rv: int  # the resourceVersion the watch started from: the last object created before
    shots: list[tuple[Shot, Answer]]
    final: list[Obj]  # the burst's objects afterwards (the sentinel left out)
    events: list[Obj]  # every watch event before the sentinel's ADDED
    generated: tuple[str, ...]

    @property
    def normaliser(self) -> Normaliser:
        return Normaliser(self.generated, [answer for _, answer in self.shots])

    def counts(self) -> dict[str, int]:
        """`"LABEL CODE REASON"` -> how many answers."""
        return dict(Counter(f"{shot.label} {answer.code} {_reason(answer)}" for shot, answer in self.shots))

    def messages(self) -> dict[str, set[str]]:
        """`"LABEL CODE REASON"` -> the failures' messages, normalised."""
        out: dict[str, set[str]] = {}
        norm = self.normaliser
        for shot, answer in self.shots:
            if answer.code >= 300:
                message = norm.text(str(answer.obj.get("message", answer.body)), message=True)
                if shot.target:  # which of the burst's objects lost a race differs from run to run
                    message = message.replace(f'"{shot.target}"', '"<target>"')
                out.setdefault(f"{shot.label} {answer.code} {_reason(answer)}", set()).add(message)
        return out

    def event_counts(self) -> dict[str, int]:
        return dict(Counter(str(e.get("type")) for e in self.events))

    def final_view(self, project: Callable[[Obj], Obj]) -> list[Obj]:
        norm = self.normaliser
        views = []
        for item in self.final:
            out: Obj = {}
            flatten(norm.value(object_view(project(item), ("data",))), "", out)
            views.append(out)
        return sorted(views, key=lambda v: json.dumps(v, sort_keys=True))

    def writes(self) -> list[tuple[Shot, Answer]]:
        """The answers of writes that stored an object (a DELETE's Status answer carries none)."""
        return [(s, a) for s, a in self.shots if a.code in (200, 201) and a.obj.get("kind") != "Status"]


def _reason(answer: Answer) -> str:
    return str(answer.obj.get("reason", "")) if answer.obj.get("kind") == "Status" else ""


Check = Callable[[Outcome], list[str]]
Shots = Callable[[Answers], list[Shot]]


def _same(obj: Obj) -> Obj:
    return obj


def data_size(obj: Obj) -> Obj:
    """The object with its data replaced by how many keys it has (which writer won is a race)."""
    return {**obj, "data": {"keys": str(len(obj.get("data") or {}))}}


@dataclass(frozen=True)
class Burst:
    name: str
    about: str  # one line, for the report
    setup: tuple[Request, ...]  # sent one after the other before the burst
    shots: Shots  # the burst: sent all at once
    checks: tuple[Check, ...] = ()  # invariants of this burst (GENERIC_CHECKS apply to every one)
    # The real server answers the same counts (and the watch sees the same events) every run.
    exact: bool = True
    project: Callable[[Obj], Obj] = _same  # what of each final object is compared
    generated: tuple[str, ...] = ()  # generateName prefixes whose random suffix is normalised


# ------------------------------------------------------------------ running


async def _watch(
    session: aiohttp.ClientSession, server: Server, query: dict[str, str], end: str
) -> list[Obj]:
    """The events of a watch on the burst's ConfigMaps up to the sentinel `end`'s ADDED."""
    params = {**query, "watch": "1", "timeoutSeconds": str(WATCH_SECONDS)}
    events: list[Obj] = []
    async with (
        asyncio.timeout(WATCH_SECONDS + 15),
        session.get(server.url + CONFIGMAPS, params=params, ssl=server.ssl_context or False) as response,
    ):
        assert response.status == 200, f"{server.name}: watch answered {response.status}"
        while line := await response.content.readline():
            event = json.loads(line)
            meta = (event.get("object") or {}).get("metadata") or {}
            if event.get("type") == "ADDED" and meta.get("name") == end:
                return events
            events.append(event)
    raise AssertionError(f"{server.name}: the watch ended before the sentinel, after {len(events)} events")


async def run_burst(session: aiohttp.ClientSession, server: Server, burst: Burst) -> Outcome:
    """The setup one request after the other, then every shot at once, then the sentinel; cleans up."""
    selector = f"{BURST}={burst.name}"
    end = f"{burst.name}-end"
    watch: asyncio.Task[list[Obj]] | None = None
    try:
        setup: Answers = []
        for request in burst.setup:
            setup.append(await send(session, server, request, setup))
            assert setup[-1].code == 201, f"{server.name}: setup of {burst.name}: {setup[-1].body}"
        start = max(int(a.rv) for a in setup)
        watch = asyncio.create_task(
            _watch(session, server, {"resourceVersion": str(start), "labelSelector": selector}, end)
        )
        shots = sorted(burst.shots(setup), key=lambda s: s.wave)
        first = [asyncio.create_task(send(session, server, s.request, setup)) for s in shots if not s.wave]
        if len(first) < len(shots):
            await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
        later = [send(session, server, s.request, setup) for s in shots if s.wave]
        answers = await asyncio.gather(*first, *later)
        sentinel = await send(session, server, create(CONFIGMAPS, burst_map(burst.name, end)), [])
        assert sentinel.code == 201, f"{server.name}: the sentinel: {sentinel.body}"
        events = await watch
        listed = await send(
            session, server, Request("GET", CONFIGMAPS, query={"labelSelector": selector}), []
        )
        final = [i for i in listed.obj.get("items", []) if i["metadata"]["name"] != end]
        return Outcome(
            server.name, start, list(zip(shots, answers, strict=True)), final, events, burst.generated
        )
    finally:
        if watch is not None and not watch.done():
            watch.cancel()
        await cleanup(session, server)


# ------------------------------------------------------------------ invariants


def watch_saw_the_writes(o: Outcome) -> list[str]:
    """Exactly the burst's writes, each once, resourceVersions strictly increasing: the stored
    objects' versions as ADDED or MODIFIED, one DELETED per successful DELETE."""
    problems = []
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in o.events]
    if rvs != sorted(set(rvs)):
        problems.append(f"watch resourceVersions not strictly increasing: {rvs}")
    stored = sorted(int(a.rv) for _, a in o.writes() if int(a.rv) > o.start_rv)
    seen = sorted(int(e["object"]["metadata"]["resourceVersion"]) for e in o.events if e["type"] != "DELETED")
    if seen != sorted(set(stored)):
        problems.append(f"watch saw versions {seen}, the writes answered {stored}")
    deletes = sum(1 for s, a in o.shots if s.label == "DELETE" and a.code == 200)
    deleted = o.event_counts().get("DELETED", 0)
    if deleted != deletes:
        problems.append(f"watch saw {deleted} DELETED, {deletes} DELETEs answered 200")
    return problems


def last_write_wins(o: Outcome) -> list[str]:
    """Each final object holds the data of the write to it answered with the highest version."""
    problems = []
    for item in o.final:
        name = item["metadata"]["name"]
        answered = [a for s, a in o.writes() if (s.target or a.obj["metadata"]["name"]) == name]
        if answered:
            last = max(answered, key=lambda a: int(a.rv))
            if last.obj.get("data") != item.get("data") or last.rv != item["metadata"]["resourceVersion"]:
                problems.append(f"{name}: final data {item.get('data')} is not the last write's {last.rv}")
    return problems


GENERIC_CHECKS: tuple[Check, ...] = (watch_saw_the_writes, last_write_wins)


def all_answer(code: int) -> Check:
    def check(o: Outcome) -> list[str]:
        wrong = Counter(a.code for _, a in o.shots if a.code != code)
        return [f"answers other than {code}: {dict(wrong)}"] if wrong else []

    return check


def final_data(expected: dict[str, str]) -> Check:
    def check(o: Outcome) -> list[str]:
        found = [item.get("data") for item in o.final]
        return [] if found == [expected] else [f"final data has {[len(d or {}) for d in found]} keys"]

    return check


def one_wins(o: Outcome) -> list[str]:
    """With the same precondition resourceVersion, exactly one write succeeds, the rest are 409."""
    codes = Counter(a.code for _, a in o.shots)
    return [] if codes == Counter({200: 1, 409: len(o.shots) - 1}) else [f"codes {dict(codes)}"]


def distinct_names(prefix: str, count: int) -> Check:
    def check(o: Outcome) -> list[str]:
        names = {a.obj["metadata"]["name"] for _, a in o.writes()}
        bad = [n for n in names if not re.fullmatch(re.escape(prefix) + _RAND, n)]
        listed = {i["metadata"]["name"] for i in o.final if i["metadata"].get("generateName") == prefix}
        if len(names) != count or bad or listed != names:
            return [f"{len(names)} distinct names ({bad[:3]} malformed), {len(listed)} listed"]
        return []

    return check


ALLOWED = {"DELETE": {200, 404}, "PATCH merge": {200, 404}, "PUT stale": {200, 404, 409}}


def deletes_race_updates(o: Outcome) -> list[str]:
    """Every answer is one the race allows; each object deleted exactly once, at most one stale
    PUT succeeds; nothing is left."""
    problems = [f"{s.label} answered {a.code}" for s, a in o.shots if a.code not in ALLOWED[s.label]]
    for target in {s.target for s, _ in o.shots}:
        codes = Counter((s.label, a.code) for s, a in o.shots if s.target == target)
        if codes[("DELETE", 200)] != 1 or codes[("PUT stale", 200)] > 1:
            problems.append(f"{target}: {dict(codes)}")
    if o.final:
        problems.append(f"left: {[i['metadata']['name'] for i in o.final]}")
    return problems


# ------------------------------------------------------------------ the bursts


def burst_map(burst: str, name: str, data: dict[str, str] | None = None, **meta: Any) -> Obj:
    """A ConfigMap of the burst: the fidelity mark (harness cleanup) and burst=<burst>."""
    cm = configmap(name, data if data is not None else {}, **meta)
    cm["metadata"]["labels"][BURST] = burst
    return cm


def _patches(name: str, label: str, content_type: str, body: Callable[[int], Any]) -> Shots:
    path = at(CONFIGMAPS, name)
    return lambda setup: [
        Shot(label, Request("PATCH", path, body(i), content_type), name) for i in range(WRITERS)
    ]


def _puts(burst: str, name: str, stale: bool) -> Shots:
    def shots(setup: Answers) -> list[Shot]:
        rv = {"resourceVersion": setup[0].rv} if stale else {}
        return [
            Shot(
                "PUT",
                Request("PUT", at(CONFIGMAPS, name), burst_map(burst, name, {f"k{i}": str(i)}, **rv)),
                name,
            )
            for i in range(WRITERS)
        ]

    return shots


def _single(burst: str, data: dict[str, str] | None = None) -> tuple[Request, ...]:
    return (create(CONFIGMAPS, burst_map(burst, burst, data)),)


ALL_KEYS = {f"k{i}": str(i) for i in range(WRITERS)}
RACE = "deletes-race-updates"
RACED = 10  # objects in the deletes-race-updates burst


def _race(setup: Answers) -> list[Shot]:
    """Per object, interleaved: 4 unconditional merge patches and 4 PUTs at the created version,
    then 2 DELETEs sent when the first of those is answered (sent together, the DELETEs, which
    have no body to decode or admit, win every race on both servers)."""
    order = ("PATCH merge", "PUT stale", "DELETE", "PATCH merge", "PUT stale") * 2
    shots = []
    for round_, label in enumerate(order):
        for answer in setup:
            name = answer.obj["metadata"]["name"]
            path = at(CONFIGMAPS, name)
            if label == "DELETE":
                request = Request("DELETE", path)
            elif label == "PATCH merge":
                request = Request("PATCH", path, {"data": {f"p{round_}": "1"}}, MERGE)
            else:
                body = burst_map(RACE, name, {f"u{round_}": "1"}, resourceVersion=answer.rv)
                request = Request("PUT", path, body, JSON)
            shots.append(Shot(label, request, name, wave=int(label == "DELETE")))
    return shots


BURSTS: tuple[Burst, ...] = (
    Burst(
        "patch-merge-100",
        f"{WRITERS} unconditional JSON merge patches of one ConfigMap, each adding its key: all 200",
        _single("patch-merge-100"),
        _patches("patch-merge-100", "PATCH", MERGE, lambda i: {"data": {f"k{i}": str(i)}}),
        (all_answer(200), final_data(ALL_KEYS)),
    ),
    Burst(
        "patch-json-100",
        f"{WRITERS} unconditional JSON patches (add /data/kN) of one ConfigMap: all 200",
        # With `data: {}` there is no /data to add to: the real server drops the empty map
        # (omitempty), so every patch would be a 422 `doc is missing path`.
        _single("patch-json-100", {"seed": "0"}),
        _patches(
            "patch-json-100",
            "PATCH",
            JSON_PATCH,
            lambda i: [{"op": "add", "path": f"/data/k{i}", "value": str(i)}],
        ),
        (all_answer(200), final_data({"seed": "0", **ALL_KEYS})),
    ),
    Burst(
        "patch-strategic-100",
        f"{WRITERS} unconditional strategic merge patches (kubectl's) of one ConfigMap: all 200",
        _single("patch-strategic-100"),
        _patches("patch-strategic-100", "PATCH", SMP, lambda i: {"data": {f"k{i}": str(i)}}),
        (all_answer(200), final_data(ALL_KEYS)),
    ),
    Burst(
        "put-unconditional-100",
        f"{WRITERS} PUTs without a resourceVersion (ConfigMaps allow unconditional updates): all 200, "
        "the last wins",
        _single("put-unconditional-100"),
        _puts("put-unconditional-100", "put-unconditional-100", stale=False),
        (all_answer(200),),
        project=data_size,
    ),
    Burst(
        "put-same-rv-100",
        f"{WRITERS} PUTs with the same resourceVersion: one 200, the others 409 Conflict",
        _single("put-same-rv-100"),
        _puts("put-same-rv-100", "put-same-rv-100", stale=True),
        (one_wins,),
        project=data_size,
    ),
    Burst(
        "patch-same-rv-100",
        f"{WRITERS} merge patches naming the same metadata.resourceVersion: one 200, the others 409",
        _single("patch-same-rv-100"),
        lambda setup: [
            Shot(
                "PATCH",
                Request(
                    "PATCH",
                    at(CONFIGMAPS, "patch-same-rv-100"),
                    {"metadata": {"resourceVersion": setup[0].rv}, "data": {f"k{i}": str(i)}},
                    MERGE,
                ),
                "patch-same-rv-100",
            )
            for i in range(WRITERS)
        ],
        (one_wins,),
        project=data_size,
    ),
    Burst(
        "generate-name-50",
        "50 creates with generateName at once: 50 201s, 50 distinct names",
        _single("generate-name-50"),
        lambda setup: [
            Shot("POST", create(CONFIGMAPS, burst_map("generate-name-50", "", generateName="gen-")))
            for _ in range(50)
        ],
        (all_answer(201), distinct_names("gen-", 50)),
        generated=("gen-",),
    ),
    Burst(
        RACE,
        f"{RACED} ConfigMaps, each hit at once by 2 DELETEs, 4 merge patches and 4 PUTs at its created "
        "version: only 200/404/409, one DELETE each succeeds, all gone (counts race on the real server)",
        tuple(create(CONFIGMAPS, burst_map(RACE, f"race-{i}")) for i in range(RACED)),
        _race,
        (deletes_race_updates,),
        exact=False,
    ),
)
BURST_NAMES = [b.name for b in BURSTS]


def burst(name: str) -> Burst:
    return next(b for b in BURSTS if b.name == name)


# ------------------------------------------------------------------ comparing


def compare_bursts(b: Burst, real: Outcome, emulator: Outcome) -> list[str]:
    """What differs between the servers' outcomes, and every invariant either breaks."""
    problems = [
        f"{o.server} breaks {check.__qualname__.split('.')[0]}: {p}"
        for o in (real, emulator)
        for check in (*GENERIC_CHECKS, *b.checks)
        for p in check(o)
    ]
    if b.exact:
        for what in ("counts", "event_counts"):
            r, e = getattr(real, what)(), getattr(emulator, what)()
            if r != e:
                problems.append(f"{what}: real={r} emulator={e}")
    real_messages, emulator_messages = real.messages(), emulator.messages()
    for key in sorted(set(real_messages) & set(emulator_messages)):
        if real_messages[key] != emulator_messages[key]:
            problems.append(f"{key} messages: real={real_messages[key]} emulator={emulator_messages[key]}")
    if real.final_view(b.project) != emulator.final_view(b.project):
        problems.append(
            f"final objects: real={real.final_view(b.project)} emulator={emulator.final_view(b.project)}"
        )
    return problems


async def run_burst_pair(real: Server, emulator: Server, b: Burst) -> tuple[Outcome, Outcome]:
    """The burst against both servers, one after the other (each alone on its machine's cores)."""
    outcomes = []
    for server in (real, emulator):
        async with server.session() as session:
            outcomes.append(await run_burst(session, server, b))
    return outcomes[0], outcomes[1]
