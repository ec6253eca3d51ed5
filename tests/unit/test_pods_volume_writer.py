"""pods.volume_writer: the kubelet's atomic volume layout, fetching, token caching and errors."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

from vk_provider.kube.client import ApiStatusError
from vk_provider.pods.volume_writer import PodVolumes, write_atomically
from vk_provider.pods.volumes import VolumeFile


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_atomic_layout_update_in_place_and_removal(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    assert write_atomically(target, [VolumeFile("a", b"1", 0o644), VolumeFile("d/b", b"2", 0o400)])
    assert (target / "a").read_bytes() == b"1"
    assert (target / "d" / "b").read_bytes() == b"2"
    assert os.readlink(target / "a") == "..data/a"
    assert mode_of(target / "d" / "b") == 0o400
    assert mode_of(target) == 0o755
    assert mode_of(target / os.readlink(target / "..data")) == 0o755
    first = os.readlink(target / "..data")
    assert not write_atomically(target, [VolumeFile("a", b"1", 0o644), VolumeFile("d/b", b"2", 0o400)])
    assert write_atomically(target, [VolumeFile("a", b"changed", 0o644)])
    assert (target / "a").read_bytes() == b"changed"
    assert not (target / "d").exists()
    assert not (target / first).exists()
    assert sorted(p.name for p in target.iterdir() if not p.name.startswith("..")) == ["a"]


def test_paths_may_not_escape(tmp_path: Path) -> None:
    getter = getter_of({("configmap", "c"): {"data": {"a": "1"}}})
    volumes = PodVolumes(lambda uid, name: tmp_path / name, getter, None, dict)
    pod = pod_with([{"name": "v", "configMap": {"name": "c", "items": [{"key": "a", "path": "../x"}]}}])
    failed = asyncio.run(volumes.setup(pod))
    assert "must be relative" in failed["v"]
    assert not (tmp_path / "x").exists()


def getter_of(objects: dict[tuple[str, str], Any]) -> Any:
    async def get(kind: str, namespace: str, name: str) -> Any:
        assert namespace == "ns"
        return objects.get((kind, name))

    return get


def pod_with(volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {"containers": [{"name": "c", "image": "b"}], "volumes": volumes},
    }


TOKEN_VOLUME = {
    "name": "tok",
    "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 1000}}]},
}


def test_setup_writes_volumes_and_reports_failures(tmp_path: Path) -> None:
    objects: dict[tuple[str, str], Any] = {("configmap", "c"): {"data": {"k": "v"}}}
    volumes = PodVolumes(lambda uid, name: tmp_path / uid / name, getter_of(objects), None, dict)
    pod = pod_with(
        [{"name": "cfg", "configMap": {"name": "c"}}, {"name": "sec", "secret": {"secretName": "s"}}]
    )
    failed = asyncio.run(volumes.setup(pod))
    assert failed == {"sec": 'secret "s" not found'}
    assert (tmp_path / "u1" / "cfg" / "k").read_text() == "v"
    assert asyncio.run(volumes.setup(pod_with([{"name": "e", "emptyDir": {}}]))) == {}


def test_no_host_directory_fails_the_volume() -> None:
    volumes = PodVolumes(lambda uid, name: None, getter_of({("configmap", "c"): {}}), None, dict)
    failed = asyncio.run(volumes.setup(pod_with([{"name": "cfg", "configMap": {"name": "c"}}])))
    assert "not local" in failed["cfg"]


def test_no_host_directory_ships_the_files_with_their_owners(tmp_path: Path) -> None:
    shipped: dict[str, tuple[list[VolumeFile], int | None]] = {}

    async def ship(pod: Any, name: str, files: Any, group: int | None) -> bool:
        shipped[name] = (list(files), group)
        return True

    objects = {("configmap", "c"): {"data": {"k": "v"}}}
    volumes = PodVolumes(lambda uid, name: None, getter_of(objects), None, dict, ship=ship)
    pod = pod_with([{"name": "cfg", "configMap": {"name": "c", "defaultMode": 0o600}}])
    pod["spec"]["securityContext"] = {"fsGroup": 2000}
    assert asyncio.run(volumes.setup(pod)) == {}
    # the engine extracts as root: the fsGroup's ownership applies whoever runs the provider
    assert shipped["cfg"] == ([VolumeFile("k", b"v", 0o640, gid=2000)], 2000)
    bad = pod_with([{"name": "v", "configMap": {"name": "c", "items": [{"key": "k", "path": "../x"}]}}])
    assert "must be relative" in asyncio.run(volumes.setup(bad))["v"]
    assert "v" not in shipped


def test_tokens_are_bound_cached_and_refreshed_at_80_percent(tmp_path: Path) -> None:
    now = [1000.0]
    asked: list[tuple[str, str, dict[str, Any]]] = []

    async def request(namespace: str, sa: str, body: dict[str, Any]) -> dict[str, Any]:
        asked.append((namespace, sa, body))
        return {"status": {"token": f"t{len(asked)}"}}

    volumes = PodVolumes(
        lambda uid, name: tmp_path / name, getter_of({}), request, dict, clock=lambda: now[0]
    )
    pod = pod_with([TOKEN_VOLUME])
    assert asyncio.run(volumes.setup(pod)) == {}
    assert (tmp_path / "tok" / "token").read_text() == "t1"
    assert asked[0][:2] == ("ns", "default")
    assert asked[0][2]["spec"]["boundObjectRef"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "p",
        "uid": "u1",
    }
    now[0] += 700
    asyncio.run(volumes.setup(pod))
    assert len(asked) == 1
    now[0] += 200  # 900 s of 1000: past 80%
    asyncio.run(volumes.setup(pod))
    assert (tmp_path / "tok" / "token").read_text() == "t2"
    volumes.forget("u1")
    asyncio.run(volumes.setup(pod))
    assert len(asked) == 3


def test_token_request_failure_message(tmp_path: Path) -> None:
    async def request(namespace: str, sa: str, body: dict[str, Any]) -> dict[str, Any]:
        raise ApiStatusError(404, "NotFound", f'serviceaccounts "{sa}" not found')

    volumes = PodVolumes(lambda uid, name: tmp_path / name, getter_of({}), request, dict)
    assert asyncio.run(volumes.setup(pod_with([TOKEN_VOLUME]))) == {
        "tok": 'failed to fetch token: serviceaccounts "default" not found'
    }
