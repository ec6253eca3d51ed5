"""The sandbox works on a small request object on the event loop and on a big one in a thread."""

from __future__ import annotations

import threading

from vk_sandbox.api.off_loop import INLINE_BYTES, run_sized


async def test_a_small_object_is_handled_on_the_loop_and_a_big_one_off_it() -> None:
    loop_thread = threading.get_ident()
    assert await run_sized(2_000, threading.get_ident) == loop_thread
    assert await run_sized(INLINE_BYTES, threading.get_ident) == loop_thread
    assert await run_sized(3 << 20, threading.get_ident) != loop_thread


async def test_arguments_and_errors_pass_through() -> None:
    def add(a: int, *, b: int) -> int:
        if b < 0:
            raise ValueError("negative")
        return a + b

    assert await run_sized(10, add, 1, b=2) == 3
    assert await run_sized(3 << 20, add, 1, b=2) == 3
    for size in (10, 3 << 20):
        try:
            await run_sized(size, add, 1, b=-1)
        except ValueError as exc:
            assert str(exc) == "negative"
        else:
            raise AssertionError("the error was lost")
