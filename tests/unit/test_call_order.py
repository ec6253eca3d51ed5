"""The order runtime calls are served in once they queue (`runtime/call_order.py`), and that the
Docker engine's pool follows it (`runtime/docker/engine.py`): oldest pod first, calls outside a
pod before any, arrival order among equals; a pod whose next call follows at once keeps its slot
ahead of younger pods."""

from __future__ import annotations

import asyncio
import threading

from vk_provider.config import DockerConfig
from vk_provider.runtime.call_order import PriorityGate, call_priority
from vk_provider.runtime.docker.engine import Engine


async def _served_order(gate: PriorityGate, priorities: list[int]) -> list[int]:
    """Hold the gate's only slot, queue one waiter per priority (in list order), release, and
    return the priorities in the order the waiters got the slot."""
    await gate.acquire(0)
    served: list[int] = []

    async def wait(priority: int) -> None:
        await gate.acquire(priority)
        served.append(priority)
        gate.release()

    tasks = [asyncio.create_task(wait(p)) for p in priorities]
    await asyncio.sleep(0)  # every waiter is queued
    gate.release()
    await asyncio.gather(*tasks)
    return served


async def test_the_lowest_priority_is_served_first_and_equals_in_arrival_order() -> None:
    assert await _served_order(PriorityGate(1), [5, 2, 9, 2, 0, 5]) == [0, 2, 2, 5, 5, 9]


async def test_free_slots_are_taken_at_once_up_to_the_bound() -> None:
    gate = PriorityGate(2)
    await asyncio.wait_for(gate.acquire(7), 1)
    await asyncio.wait_for(gate.acquire(3), 1)
    third = asyncio.create_task(gate.acquire(0))
    await asyncio.sleep(0.05)
    assert not third.done()  # two slots, both held
    gate.release()
    await asyncio.wait_for(third, 1)


async def test_a_cancelled_waiter_does_not_keep_the_slot() -> None:
    gate = PriorityGate(1)
    await gate.acquire(0)
    cancelled = asyncio.create_task(gate.acquire(1))
    later = asyncio.create_task(gate.acquire(2))
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    gate.release()
    await asyncio.wait_for(later, 1)  # the slot skipped the cancelled waiter


async def test_a_waiter_cancelled_as_it_is_granted_passes_the_slot_on() -> None:
    gate = PriorityGate(1)
    await gate.acquire(0)
    first = asyncio.create_task(gate.acquire(1))
    second = asyncio.create_task(gate.acquire(2))
    await asyncio.sleep(0)
    gate.release()  # grants `first` ...
    first.cancel()  # ... which is cancelled before it runs again
    await asyncio.wait_for(second, 1)


async def test_a_slot_released_and_asked_for_again_at_once_stays_with_the_older_pod() -> None:
    gate = PriorityGate(1)
    await gate.acquire(1)
    younger = asyncio.create_task(gate.acquire(5))
    await asyncio.sleep(0)  # queued
    gate.release()
    await gate.acquire(1)  # in the same step: pod 1's next call
    await asyncio.sleep(0.05)
    assert not younger.done()
    gate.release()
    await asyncio.wait_for(younger, 1)


async def test_an_equal_or_younger_newcomer_does_not_take_a_slot_a_waiter_is_about_to_get() -> None:
    gate = PriorityGate(1)
    await gate.acquire(0)
    waiter = asyncio.create_task(gate.acquire(3))
    await asyncio.sleep(0)
    gate.release()
    newcomer = asyncio.create_task(gate.acquire(3))
    await asyncio.wait_for(waiter, 1)
    await asyncio.sleep(0.05)
    assert not newcomer.done()
    gate.release()
    await asyncio.wait_for(newcomer, 1)


async def test_the_engine_pool_serves_the_oldest_pod_first_and_calls_outside_pods_before_it() -> None:
    engine = Engine(DockerConfig(max_concurrency=1))
    hold = threading.Event()
    served: list[str] = []

    async def call(name: str, priority: int | None) -> None:
        if priority is not None:
            call_priority.set(priority)  # as a pod worker sets its pod's arrival number
        await engine.call(served.append, name)

    holder = asyncio.create_task(engine.call(hold.wait, 10))  # the one thread is busy
    await asyncio.sleep(0.05)
    queued = [
        asyncio.create_task(call(name, priority))
        for name, priority in [("pod 3", 3), ("pod 1", 1), ("relist", None), ("pod 2", 2), ("pod 1 again", 1)]
    ]
    await asyncio.sleep(0.05)
    hold.set()
    await asyncio.wait_for(asyncio.gather(holder, *queued), 10)
    await engine.close()
    assert served == ["relist", "pod 1", "pod 1 again", "pod 2", "pod 3"]


async def test_a_pods_calls_one_after_another_go_before_a_younger_pods_waiting_call() -> None:
    engine = Engine(DockerConfig(max_concurrency=1))
    hold = threading.Event()
    served: list[str] = []

    async def pod(priority: int, calls: list[str]) -> None:
        call_priority.set(priority)
        for name in calls:
            await engine.call(served.append, name)

    holder = asyncio.create_task(engine.call(hold.wait, 10))
    await asyncio.sleep(0.05)
    younger = asyncio.create_task(pod(2, ["pod 2: create"]))
    older = asyncio.create_task(pod(1, ["pod 1: create", "pod 1: start", "pod 1: inspect"]))
    await asyncio.sleep(0.05)
    hold.set()
    await asyncio.wait_for(asyncio.gather(holder, younger, older), 10)
    await engine.close()
    assert served == ["pod 1: create", "pod 1: start", "pod 1: inspect", "pod 2: create"]
