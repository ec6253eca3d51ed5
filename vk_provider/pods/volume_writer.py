"""Setting up a pod's API-backed volumes on the engine host (the kubelet's volume manager, small).

What lives here: `write_atomically(dir, files)`, the kubelet's AtomicWriter layout (the
payload in a timestamped directory, `..data` a symlink to it swapped atomically, user-visible
names symlinks through `..data`, so a bind-mounted volume changes in place), and
`PodVolumes`, which for one pod fetches the referenced ConfigMaps and Secrets through the
injected getter and service account tokens through the injected TokenRequest function
(cached until 80% of their lifetime), computes each volume's files (`pods.volumes`) and
writes them into the directory the runtime names. `make_token_requester(client)` builds the
TokenRequest function from the KubeClient.
Must not: decide the pod's status or emit Events (the pod worker does), or log file contents.

Upstream: pkg/volume/util/atomic_writer.go, pkg/kubelet/token/token_manager.go.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vk_provider.kube.client import ApiStatusError, KubeClient
from vk_provider.pods.env import ObjectGetter
from vk_provider.pods.volumes import (
    Fetched,
    TokenSource,
    VolumeFile,
    VolumeSetupError,
    api_volumes,
    referenced_objects,
    token_request_body,
    token_sources,
    volume_files,
)

DATA_DIR = "..data"
DATA_TMP = "..data_tmp"
DIR_MODE = 0o755
TOKEN_REFRESH_FRACTION = 0.8  # token_manager.go: refresh once 80% of the TTL has passed
TOKEN_MAX_AGE = 24 * 3600.0  # ... or after 24 hours

# (namespace, service account, TokenRequest body) -> the TokenRequest answered by the apiserver.
TokenRequester = Callable[[str, str, dict[str, Any]], Awaitable[Mapping[str, Any]]]
# pod UID, volume name -> the host directory of that volume; None when the engine is not local.
VolumeDir = Callable[[str, str], Path | None]


def make_token_requester(client: KubeClient) -> TokenRequester:
    async def request(namespace: str, service_account: str, body: dict[str, Any]) -> Mapping[str, Any]:
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token"
        return await client.create(path, body)

    return request


# ---------------------------------------------------------------- the atomic writer


def _current(target: Path) -> dict[str, tuple[bytes, int]]:
    """The payload now under `target/..data`: relative path -> (content, mode)."""
    data = target / DATA_DIR
    if not data.is_dir():
        return {}
    out: dict[str, tuple[bytes, int]] = {}
    for root, _, names in os.walk(data):
        for name in names:
            path = Path(root) / name
            out[str(path.relative_to(data))] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return out


def _check_path(path: str) -> None:
    parts = Path(path).parts
    if not path or Path(path).is_absolute() or ".." in parts or parts[0].startswith(".."):
        raise VolumeSetupError(f"invalid path {path!r}: must be relative and may not contain '..'")


def write_atomically(target: Path, files: Sequence[VolumeFile]) -> bool:
    """Make `target` hold exactly `files`; False when it already did (nothing written)."""
    for f in files:
        _check_path(f.path)
    wanted = {f.path: (f.data, f.mode) for f in files}
    if (target / DATA_DIR).is_symlink() and _current(target) == wanted:
        return False
    target.mkdir(parents=True, exist_ok=True)
    os.chmod(target, DIR_MODE)
    stamp = datetime.now(UTC).strftime("..%Y_%m_%d_%H_%M_%S.")
    new_dir = Path(tempfile.mkdtemp(prefix=stamp, dir=target))
    os.chmod(new_dir, DIR_MODE)
    for f in files:
        path = new_dir / f.path
        for parent in reversed(path.relative_to(new_dir).parents[:-1]):
            (new_dir / parent).mkdir(mode=DIR_MODE, exist_ok=True)
        path.write_bytes(f.data)
        os.chmod(path, f.mode)
    old = os.readlink(target / DATA_DIR) if (target / DATA_DIR).is_symlink() else None
    tmp_link = target / DATA_TMP
    with contextlib.suppress(FileNotFoundError):
        tmp_link.unlink()
    tmp_link.symlink_to(new_dir.name)
    os.replace(tmp_link, target / DATA_DIR)
    visible = {Path(f.path).parts[0] for f in files}
    for name in visible:
        link = target / name
        if not link.is_symlink():
            link.symlink_to(f"{DATA_DIR}/{name}")
    for entry in target.iterdir():
        if not entry.name.startswith("..") and entry.name not in visible and entry.is_symlink():
            entry.unlink()
    if old is not None and old != new_dir.name:
        _remove_tree(target / old)
    return True


def _remove_tree(path: Path) -> None:
    for root, dirs, names in os.walk(path, topdown=False):
        for name in names:
            os.unlink(os.path.join(root, name))
        for name in dirs:
            os.rmdir(os.path.join(root, name))
    os.rmdir(path)


# ---------------------------------------------------------------- tokens


@dataclass
class _Token:
    token: str
    issued: float
    ttl: float

    def needs_refresh(self, now: float) -> bool:
        age = now - self.issued
        return age > self.ttl * TOKEN_REFRESH_FRACTION or age > TOKEN_MAX_AGE


def _ttl(answer: Mapping[str, Any], asked: int, now: float) -> float:
    expires = (answer.get("status") or {}).get("expirationTimestamp")
    if expires:
        with contextlib.suppress(ValueError):
            return datetime.fromisoformat(str(expires).replace("Z", "+00:00")).timestamp() - now
    return float(asked)


# ---------------------------------------------------------------- per pod


class PodVolumes:
    """Sets up the configMap, secret, downwardAPI and projected volumes of pods."""

    def __init__(
        self,
        volume_dir: VolumeDir,
        getter: ObjectGetter,
        request_token: TokenRequester | None,
        node_allocatable: Callable[[], Mapping[str, str]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._volume_dir = volume_dir
        self._getter = getter
        self._request_token = request_token
        self._node_allocatable = node_allocatable
        self._clock = clock
        self._tokens: dict[tuple[str, TokenSource], _Token] = {}  # (pod uid, source) -> token

    def forget(self, uid: str) -> None:
        """The pod is gone: drop its cached tokens."""
        for key in [k for k in self._tokens if k[0] == uid]:
            del self._tokens[key]

    async def setup(self, pod: Mapping[str, Any]) -> dict[str, str]:
        """Write every API-backed volume of the pod; the failed ones as volume name -> error text."""
        volumes = api_volumes(pod)
        if not volumes:
            return {}
        try:
            fetched = await self._fetch(pod, volumes)
        except ApiStatusError as exc:
            return {str(v.get("name", "")): exc.message for v in volumes}
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        allocatable = self._node_allocatable()
        failed: dict[str, str] = {}
        for volume in volumes:
            name = str(volume.get("name", ""))
            target = self._volume_dir(uid, name)
            try:
                if target is None:
                    raise VolumeSetupError("the container engine is not local: no host directory for volumes")
                files = volume_files(pod, volume, fetched, allocatable)
                await asyncio.to_thread(write_atomically, target, files)
            except VolumeSetupError as exc:
                failed[name] = str(exc)
            except OSError as exc:
                failed[name] = f"cannot write the volume's files: {exc}"
        return failed

    async def _fetch(self, pod: Mapping[str, Any], volumes: Sequence[Mapping[str, Any]]) -> Fetched:
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        refs = sorted(set().union(*(referenced_objects(v) for v in volumes)))
        found = await asyncio.gather(*(self._getter(kind, namespace, name) for kind, name in refs))
        tokens: dict[TokenSource, str] = {}
        errors: dict[TokenSource, str] = {}
        for source in {s for v in volumes for s in token_sources(pod, v)}:
            try:
                tokens[source] = await self._token(pod, source)
            except ApiStatusError as exc:
                errors[source] = f"failed to fetch token: {exc.message}"
        return Fetched(objects=dict(zip(refs, found, strict=True)), tokens=tokens, token_errors=errors)

    async def _token(self, pod: Mapping[str, Any], source: TokenSource) -> str:
        meta = pod.get("metadata") or {}
        key = (str(meta.get("uid", "")), source)
        now = self._clock()
        cached = self._tokens.get(key)
        if cached is not None and not cached.needs_refresh(now):
            return cached.token
        if self._request_token is None:
            raise ApiStatusError(0, "ServiceUnavailable", "no TokenRequest client configured")
        body = token_request_body(pod, source)
        try:
            answer = await self._request_token(str(meta.get("namespace", "")), source.service_account, body)
        except ApiStatusError:
            if cached is not None and now - cached.issued < cached.ttl:
                return cached.token  # token_manager.go: keep a token that has not expired yet
            raise
        token = str((answer.get("status") or {}).get("token") or "")
        self._tokens[key] = _Token(token, now, _ttl(answer, source.expiration_seconds, now))
        return token
