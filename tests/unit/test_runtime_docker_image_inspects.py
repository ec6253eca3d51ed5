"""What `image_inspects.ImageInspects` asks the engine, with a stand-in inspect and clock (the
real engine's side is in tests/integration/test_pods_docker_calls.py): one request for a burst,
a found image kept for FRESH_SECONDS and no longer, a miss or an error never kept, `forget`
obeyed even by an answer still on its way."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from docker.errors import APIError, ImageNotFound

from vk_provider.runtime.docker.image_inspects import FRESH_SECONDS, ImageInspects


class StandInEngine:
    """Answers image inspects from `images` as they are when asked (ImageNotFound otherwise),
    each once `gate` opens."""

    def __init__(self) -> None:
        self.images: dict[str, dict[str, Any]] = {"busybox:1": {"Id": "sha256:a"}}
        self.asked: list[str] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.asking = asyncio.Event()  # set as each request reaches the engine
        self.now = 100.0

    async def inspect(self, ref: str) -> dict[str, Any]:
        self.asked.append(ref)
        self.asking.set()
        found = self.images.get(ref)
        await self.gate.wait()
        if ref == "broken:1":
            raise APIError("500 Server Error", explanation="failed to read the layer store")
        if found is None:
            raise ImageNotFound(f"No such image: {ref}")
        return dict(found)


@pytest.fixture
def engine() -> StandInEngine:
    return StandInEngine()


@pytest.fixture
def inspects(engine: StandInEngine) -> ImageInspects:
    return ImageInspects(engine.inspect, clock=lambda: engine.now)


async def test_a_burst_of_look_ups_sends_one_request(engine: StandInEngine, inspects: ImageInspects) -> None:
    engine.gate.clear()
    burst = [asyncio.ensure_future(inspects.get("busybox:1")) for _ in range(20)]
    await asyncio.sleep(0)
    engine.gate.set()
    answers = await asyncio.gather(*burst)
    assert {a["Id"] for a in answers} == {"sha256:a"}
    assert engine.asked == ["busybox:1"]


async def test_an_answer_is_kept_for_fresh_seconds_and_no_longer(
    engine: StandInEngine, inspects: ImageInspects
) -> None:
    assert (await inspects.get("busybox:1"))["Id"] == "sha256:a"
    engine.images["busybox:1"] = {"Id": "sha256:b"}  # re-tagged behind the provider's back
    engine.now += FRESH_SECONDS - 0.1
    assert (await inspects.get("busybox:1"))["Id"] == "sha256:a"
    engine.now += 0.1
    assert (await inspects.get("busybox:1"))["Id"] == "sha256:b"
    assert engine.asked == ["busybox:1", "busybox:1"]


async def test_a_missing_image_and_an_error_are_asked_about_every_time(
    engine: StandInEngine, inspects: ImageInspects
) -> None:
    for _ in range(2):
        with pytest.raises(ImageNotFound):
            await inspects.get("gone:1")
        with pytest.raises(APIError):
            await inspects.get("broken:1")
    assert engine.asked == ["gone:1", "broken:1", "gone:1", "broken:1"]
    engine.images["gone:1"] = {"Id": "sha256:c"}  # pulled meanwhile
    assert (await inspects.get("gone:1"))["Id"] == "sha256:c"


async def test_forget_drops_the_kept_answer_and_the_one_on_its_way(
    engine: StandInEngine, inspects: ImageInspects
) -> None:
    await inspects.get("busybox:1")
    inspects.forget("busybox:1")
    del engine.images["busybox:1"]  # removed: the next look-up must see it
    with pytest.raises(ImageNotFound):
        await inspects.get("busybox:1")

    engine.images["busybox:1"] = {"Id": "sha256:old"}
    engine.gate.clear()
    engine.asking.clear()
    on_its_way = asyncio.ensure_future(inspects.get("busybox:1"))
    await engine.asking.wait()
    inspects.forget("busybox:1")  # e.g. a pull of it landed meanwhile
    engine.images["busybox:1"] = {"Id": "sha256:new"}
    engine.gate.set()
    assert (await on_its_way)["Id"] == "sha256:old"  # its caller gets it
    assert (await inspects.get("busybox:1"))["Id"] == "sha256:new"  # nobody after


async def test_a_cancelled_caller_does_not_cancel_the_others(
    engine: StandInEngine, inspects: ImageInspects
) -> None:
    engine.gate.clear()
    first = asyncio.ensure_future(inspects.get("busybox:1"))
    second = asyncio.ensure_future(inspects.get("busybox:1"))
    await asyncio.sleep(0)
    first.cancel()
    engine.gate.set()
    assert (await second)["Id"] == "sha256:a"
    assert engine.asked == ["busybox:1"]


async def test_only_fresh_answers_stay_kept(engine: StandInEngine, inspects: ImageInspects) -> None:
    for n in range(50):
        engine.images[f"img{n}:1"] = {"Id": f"sha256:{n}"}
        await inspects.get(f"img{n}:1")
        engine.now += FRESH_SECONDS
    await inspects.get("busybox:1")
    assert len(inspects._kept) == 1  # the bound is what is asserted
