"""The emulator against the real kube-apiserver under concurrency and through real clients (issue 31, 3).

One emulator and one real control plane (`vk-provider sandbox [--control-plane real] --no-provider`,
started side by side as for test_emulator_fidelity.py) serve the module. Each burst of
tests/support/fidelity/bursts.py (100 writers to one ConfigMap with and without preconditions,
50 generateName creates, deletes racing updates, each with a watch open through it) is sent to
both; the answers' counts, messages and final objects must be equal, and every invariant must hold
on both (where the real server's counts race, only the invariants and the messages are compared).
Then the official `kubernetes` client (in threads), kubernetes_asyncio and the pinned kubectl
(apply, patch, label, replace, wait, get -w) run the same sequence against both, and what they
printed must be equal line for line. Real tier only:
`pytest --control-plane=real tests/integration/test_emulator_concurrency.py`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from tests.support.fidelity.bursts import BURST_NAMES, burst, compare_bursts, run_burst_pair
from tests.support.fidelity.clients import client_transcript, kubectl_transcript
from tests.support.fidelity.harness import Server, cleanup, running_pair

pytestmark = [pytest.mark.real_only, pytest.mark.kubectl]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    """(real, emulator), started side by side, stopped after the module."""
    with running_pair(tmp_path_factory.mktemp("concurrency")) as pair:
        yield pair


@pytest.mark.parametrize("name", BURST_NAMES)
async def test_burst(control_plane: str, servers: tuple[Server, Server], name: str) -> None:
    b = burst(name)
    real, emulator = await run_burst_pair(*servers, b)
    for outcome in (real, emulator):
        print(f"{name} {outcome.server}: {outcome.counts()} watch {outcome.event_counts()}")
    problems = compare_bursts(b, real, emulator)
    assert not problems, "the servers differ:\n" + "\n".join(problems)


async def _printed_by(
    servers: tuple[Server, Server], run: Callable[[Server], Awaitable[list[str]]]
) -> dict[str, list[str]]:
    """What `run` printed against each server, one after the other; each cleaned up after."""
    printed = {}
    for server in servers:
        try:
            printed[server.name] = await run(server)
        finally:
            async with server.session() as session:
                await cleanup(session, server)
    return printed


@pytest.mark.parametrize("flavour", ["kubernetes", "kubernetes_asyncio"])
async def test_python_client_prints_the_same(
    control_plane: str, servers: tuple[Server, Server], flavour: str
) -> None:
    printed = await _printed_by(servers, lambda server: client_transcript(server, flavour))
    assert "30 concurrent patches: 30 x 200" in printed["emulator"]
    assert printed["emulator"] == printed["real"]


async def test_kubectl_prints_the_same(
    control_plane: str, servers: tuple[Server, Server], tmp_path: Path
) -> None:
    printed = await _printed_by(servers, lambda server: kubectl_transcript(server, tmp_path / server.name))
    assert any(line.endswith("condition met") for line in printed["emulator"])
    assert printed["emulator"] == printed["real"]
