"""Kubelet-style core/v1 Events, sent in the background and aggregated like client-go's recorder.

What lives here: `EventRecorder.event(obj, type, reason, message)` which only enqueues
(bounded; never blocks, never raises), a background task that POSTs new Events and PATCHes
`count`/`lastTimestamp` of the existing one when the same (involved object, type, reason,
message) repeats (at most 25 such PATCHes at once, then one every 5 minutes; a repeat not sent
is counted in the next one that is), and the pure builders `involved_reference` and
`make_event`. With no
client (apiserver down or not configured) events are only logged. Must not: decide what
is worth an event (callers do), or let an apiserver failure reach the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from vk_common import objects
from vk_common.logging import get_logger
from vk_common.tasks import BackgroundTask
from vk_provider.kube.client import ApiConnectionError, ApiStatusError, KubeClient

log = get_logger("events")

COMPONENT = "kubelet"
QUEUE_SIZE = 1000
CACHE_SIZE = 4096  # client-go's maxLruCacheEntries
# client-go's record package: maxTriesPerEvent 12, sleepDuration 10 s, the first sleep randomised
# (staging/src/k8s.io/client-go/tools/record/event.go, recordToSink), so Events raised while the
# apiserver is down still reach it once it is back.
SEND_ATTEMPTS = 12
RETRY_SECONDS = 10.0
STOP_FLUSH_SECONDS = 2.0
# client-go's spam filter (tools/record/events_cache.go: defaultSpamBurst, defaultSpamQPS), kept
# per repeated Event rather than per object and type: every repeat this holds back, the kubelet's
# filter, whose bucket the object's other Events drain too, holds back as well; an Event seen
# for the first time (each bad static manifest's, say) is always sent.
REPEAT_BURST = 25
REPEAT_REFILL_PER_SECOND = 1.0 / 300.0


def involved_reference(obj: Mapping[str, Any], node_name: str, field_path: str = "") -> dict[str, Any]:
    """The ObjectReference of `obj`; a Node's uid is its name, as the kubelet's node recorder sets it."""
    meta = objects.meta(obj)
    kind = obj.get("kind") or ("Pod" if "containers" in objects.spec(obj) else "")
    if kind == "Node":
        return {"kind": "Node", "name": meta.get("name") or node_name, "uid": meta.get("name") or node_name}
    ref: dict[str, Any] = {
        "kind": kind,
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": objects.uid(obj),
        "apiVersion": obj.get("apiVersion") or ("v1" if kind == "Pod" else ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    if field_path:
        ref["fieldPath"] = field_path
    return {k: v for k, v in ref.items() if v}


def make_event(
    ref: Mapping[str, Any], type_: str, reason: str, message: str, node_name: str, now: datetime, name: str
) -> dict[str, Any]:
    stamp = objects.format_time(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": ref.get("namespace") or "default"},
        "involvedObject": dict(ref),
        "reason": reason,
        "message": message,
        "type": type_,
        "source": {"component": COMPONENT, "host": node_name},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "reportingComponent": COMPONENT,
        "reportingInstance": node_name,
    }


def aggregation_key(ref: Mapping[str, Any], type_: str, reason: str, message: str) -> tuple[str, ...]:
    return (
        str(ref.get("kind", "")),
        str(ref.get("namespace", "")),
        str(ref.get("name", "")),
        str(ref.get("uid", "")),
        str(ref.get("fieldPath", "")),
        type_,
        reason,
        message,
    )


@dataclass
class _Sent:
    namespace: str
    name: str
    count: int
    at: datetime  # when the repeats' bucket was last filled
    tokens: float = REPEAT_BURST - 1  # the create took one

    def may_send_repeat(self, now: datetime) -> bool:
        """Take a token of the repeats' bucket (client-go's TryAccept); False: hold it back."""
        elapsed = max(0.0, (now - self.at).total_seconds())
        self.tokens = min(float(REPEAT_BURST), self.tokens + elapsed * REPEAT_REFILL_PER_SECOND)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


@dataclass(frozen=True)
class _Pending:
    ref: dict[str, Any]
    type_: str
    reason: str
    message: str
    now: datetime


class EventRecorder:
    def __init__(
        self,
        client: KubeClient | None,
        node_name: str,
        *,
        queue_size: int = QUEUE_SIZE,
        retry_seconds: float = RETRY_SECONDS,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._client = client
        self._retry_seconds = retry_seconds
        self.node_name = node_name
        self._clock = clock
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(maxsize=queue_size)
        self._sent: OrderedDict[tuple[str, ...], _Sent] = OrderedDict()
        self._task = BackgroundTask("event recorder")
        self._last_ns = 0
        self.dropped = 0
        self.held_back = 0  # repeats counted but not sent (the spam filter)

    def event(
        self, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, field_path: str = ""
    ) -> None:
        """Record an event about `obj` (an API object dict); `field_path` like `spec.containers{web}`."""
        try:
            ref = involved_reference(obj, self.node_name, field_path)
            pending = _Pending(ref, type_, reason, message, self._clock())
            log.debug(
                "event",
                extra={
                    "type": type_,
                    "reason": reason,
                    "kind": ref.get("kind"),
                    "object": ref.get("name"),
                    "detail": message,
                },
            )
            if self._client is None:
                log.info(
                    "event not sent: apiserver unavailable",
                    extra={"type": type_, "reason": reason, "object": ref.get("name"), "detail": message},
                )
                return
            self._queue.put_nowait(pending)
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("event queue full; event dropped", extra={"reason": reason, "detail": message})
        except Exception:
            log.exception("could not record an event", extra={"reason": reason})

    async def start(self) -> None:
        if self._client is not None:
            self._task.start(self._run)

    async def stop(self) -> None:
        """Send what is queued (for a short while), then stop."""
        if self._task.running:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), STOP_FLUSH_SECONDS)
        await self._task.stop()

    def _unique_name(self, ref: Mapping[str, Any]) -> str:
        stamp = max(time.time_ns(), self._last_ns + 1)
        self._last_ns = stamp
        return f"{ref.get('name', 'unknown')}.{stamp:x}"

    async def _run(self) -> None:
        while True:
            pending = await self._queue.get()
            try:
                await self._send(pending)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("event could not be sent", extra={"reason": pending.reason})
            finally:
                self._queue.task_done()

    async def _send(self, pending: _Pending) -> None:
        key = aggregation_key(pending.ref, pending.type_, pending.reason, pending.message)
        previous = self._sent.get(key)
        if previous is not None and not previous.may_send_repeat(pending.now):
            previous.count += 1  # as client-go's correlator: the next one sent carries it
            self.held_back += 1
            log.debug(
                "event repeat held back: too many at once",
                extra={"type": pending.type_, "reason": pending.reason, "object": pending.ref.get("name")},
            )
            return
        for attempt in range(1, SEND_ATTEMPTS + 1):
            try:
                if previous is not None and await self._bump(previous, pending):
                    self._sent.move_to_end(key)
                    return
                self._remember(key, await self._create(pending))
                return
            except (ApiConnectionError, ApiStatusError) as exc:
                retriable = isinstance(exc, ApiConnectionError) or exc.status >= 500 or exc.status == 429
                if not retriable or attempt == SEND_ATTEMPTS:
                    log.warning(
                        "event not sent",
                        extra={"reason": pending.reason, "object": pending.ref.get("name"), "err": str(exc)},
                    )
                    return
                first = attempt == 1
                await asyncio.sleep(random.uniform(0, self._retry_seconds) if first else self._retry_seconds)

    async def _create(self, pending: _Pending) -> _Sent:
        assert self._client is not None
        body = make_event(
            pending.ref,
            pending.type_,
            pending.reason,
            pending.message,
            self.node_name,
            pending.now,
            self._unique_name(pending.ref),
        )
        namespace = body["metadata"]["namespace"]
        await self._client.create(f"/api/v1/namespaces/{namespace}/events", body)
        return _Sent(namespace, body["metadata"]["name"], 1, pending.now)

    async def _bump(self, sent: _Sent, pending: _Pending) -> bool:
        """PATCH count and lastTimestamp of the Event already sent; False when it is gone."""
        assert self._client is not None
        patch = {
            "count": sent.count + 1,
            "lastTimestamp": objects.format_time(pending.now),
            "message": pending.message,
        }
        try:
            await self._client.patch(f"/api/v1/namespaces/{sent.namespace}/events/{sent.name}", patch)
        except ApiStatusError as exc:
            if exc.status == 404:
                return False
            raise
        sent.count += 1
        return True

    def _remember(self, key: tuple[str, ...], sent: _Sent) -> None:
        self._sent[key] = sent
        self._sent.move_to_end(key)
        while len(self._sent) > CACHE_SIZE:
            self._sent.popitem(last=False)
