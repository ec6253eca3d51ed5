"""Blocking SDK streams (logs, exec output) read in their own thread and handed to asyncio.

What lives here: `thread_stream`, an async iterator over the items of a blocking stream,
read by a dedicated daemon thread (follow-mode streams must not pin the bounded call
pool) and passed to the event loop with `call_soon_threadsafe`. Leaving the iterator
early closes the stream, which unblocks the thread. Must not: know about Docker objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


_END = object()


async def thread_stream(
    open_stream: Callable[[], Iterator[T]], *, name: str, max_buffered: int = 256
) -> AsyncIterator[T]:
    """Yield the items of `open_stream()` (called in the thread); exceptions are re-raised here."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    room = threading.Semaphore(max_buffered)  # back-pressure: the reader waits for the consumer
    stop = threading.Event()
    holder: list[Any] = []

    def put(item: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening
            loop.call_soon_threadsafe(queue.put_nowait, item)

    def reader() -> None:
        try:
            stream = open_stream()
            holder.append(stream)
            if stop.is_set():  # the consumer left while the stream was opening
                stream.close()  # type: ignore[attr-defined]
                return
            for item in stream:
                while not room.acquire(timeout=0.5):
                    if stop.is_set():
                        return
                if stop.is_set():
                    return
                put(item)
            put(_END)
        except BaseException as exc:  # handed to the consumer, who decides
            put(exc if not stop.is_set() else _END)

    thread = threading.Thread(target=reader, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item = await queue.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            room.release()
            yield item
    finally:
        stop.set()
        if holder:
            with contextlib.suppress(Exception):
                holder[0].close()
