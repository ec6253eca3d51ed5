"""Setting up a pod's API-backed volumes on the engine host (the kubelet's volume manager, small).

What lives here: `write_atomically(dir, files, group)`, the kubelet's AtomicWriter layout (the
payload in a timestamped directory, `..data` a symlink to it swapped atomically, user-visible
names symlinks through `..data`, so a bind-mounted volume changes in place; the files get the
owners `pods.volumes` computed, the directories the fsGroup; the directories above the
volume's are created 0700, so no other user of the host reaches the files, whatever their
mode; old payloads go through the guarded `paths.remove_under`), and
`PodVolumes`, which for one pod fetches the referenced ConfigMaps and Secrets through the
injected getter and service account tokens through the injected TokenRequest function
(cached until 80% of their lifetime), the ClusterTrustBundles of clusterTrustBundle
projections through the injected lister (read again at every sync, so a changed bundle
reaches the file as a kubelet's informer-backed cache does) and the key and chain of each
podCertificate source from the injected `PodCertificates`, computes each volume's files
(`pods.volumes`) and writes them into the directory the runtime names; ownership (fsGroup, a
token's fsUser) is applied only when this process may chown (root with CAP_CHOWN), else the
files keep the pod's modes. When the runtime names no directory (an engine that does not share our
filesystem) the files, owners included, go to the injected shipper (`Runtime.ship_volume`).
`make_token_requester(client)` builds the TokenRequest function from the KubeClient.
Must not: decide the pod's status or emit Events (the pod worker does), or log file contents.

Upstream: pkg/volume/util/atomic_writer.go, pkg/volume/volume_linux.go (SetVolumeOwnership),
pkg/kubelet/token/token_manager.go.
"""

from __future__ import annotations

import asyncio
import os
import stat
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vk_common.guarded_paths import UnsafePathError, make_private_dirs, remove_under
from vk_common.logging import get_logger
from vk_common.objects import meta, parse_time
from vk_common.objects import uid as uid_of
from vk_provider.kube.client import ApiStatusError, KubeClient
from vk_provider.pods.env import ObjectGetter
from vk_provider.pods.pod_certificates import CredentialsPending, PodCertificates
from vk_provider.pods.volumes import (
    Fetched,
    TokenSource,
    TrustBundleQuery,
    VolumeSetupError,
    api_volumes,
    fs_group,
    pod_certificate_sources,
    referenced_objects,
    token_request_body,
    token_sources,
    trust_bundle_queries,
    volume_files,
)
from vk_provider.runtime.types import RuntimeFailure, VolumeFile

log = get_logger("pods.volumes")

TRUST_BUNDLES = "/apis/certificates.k8s.io/v1/clustertrustbundles"
DATA_DIR = "..data"
DATA_TMP = "..data_tmp"
DIR_MODE = 0o755  # inside the volume: a non-root container must traverse it
GROUP_DIR_BITS = 0o2550  # volume_linux.go: setgid + roMask + execMask for an fsGroup's directories
CAP_CHOWN = 0  # its bit in /proc/self/status CapEff (linux/capability.h)
TOKEN_REFRESH_FRACTION = 0.8  # token_manager.go: refresh once 80% of the TTL has passed
TOKEN_MAX_AGE = 24 * 3600.0  # ... or after 24 hours

# (namespace, service account, TokenRequest body) -> the TokenRequest answered by the apiserver.
TokenRequester = Callable[[str, str, dict[str, Any]], Awaitable[Mapping[str, Any]]]
# pod UID, volume name -> the host directory of that volume; None when the engine is not local.
VolumeDir = Callable[[str, str], Path | None]
# The ClusterTrustBundles a clusterTrustBundle projection selects ([] for a name not found).
TrustBundleLister = Callable[[TrustBundleQuery], Awaitable[Sequence[Mapping[str, Any]]]]
# pod, volume name, files, fsGroup -> written (False: unchanged); Runtime.ship_volume.
VolumeShipper = Callable[[Mapping[str, Any], str, Sequence[VolumeFile], int | None], Awaitable[bool]]


def make_trust_bundle_lister(client: KubeClient) -> TrustBundleLister:
    """ClusterTrustBundles from certificates.k8s.io/v1: one by name, or a signer's bundles
    the label selector matches (the apiserver filters by `spec.signerName` and labels)."""

    async def find(query: TrustBundleQuery) -> Sequence[Mapping[str, Any]]:
        if query.name:
            try:
                return [await client.get(f"{TRUST_BUNDLES}/{query.name}")]
            except ApiStatusError as exc:
                if exc.status == 404:
                    return []
                raise
        if query.selector is None:
            return []  # a nil selector matches nothing
        params = {"fieldSelector": f"spec.signerName={query.signer}", "labelSelector": query.selector}
        return list((await client.get(TRUST_BUNDLES, params)).get("items") or [])

    return find


def make_token_requester(client: KubeClient) -> TokenRequester:
    async def request(namespace: str, service_account: str, body: dict[str, Any]) -> Mapping[str, Any]:
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token"
        return await client.create(path, body)

    return request


# ---------------------------------------------------------------- the atomic writer


def can_change_owner() -> bool:
    """Whether this process may give files another owner: root with CAP_CHOWN effective."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_CHOWN & 1)
    except (OSError, ValueError):
        pass
    return True


def _unchanged(target: Path, files: Sequence[VolumeFile]) -> bool:
    """Whether `target/..data` holds exactly `files` (content, mode, and owner where set)."""
    data = target / DATA_DIR
    if not data.is_symlink() or not data.is_dir():
        return False
    wanted = {f.path: f for f in files}
    seen = 0
    try:
        for root, _, names in os.walk(data):
            for name in names:
                path = Path(root) / name
                f = wanted.get(str(path.relative_to(data)))
                st = path.stat()
                if f is None or stat.S_IMODE(st.st_mode) != f.mode:
                    return False
                if (f.uid is not None and st.st_uid != f.uid) or (f.gid is not None and st.st_gid != f.gid):
                    return False
                if path.read_bytes() != f.data:
                    return False
                seen += 1
    except OSError:
        return False  # e.g. a file given to another owner that this process cannot read back
    return seen == len(wanted)


def _check_path(path: str) -> None:
    parts = Path(path).parts
    if not path or Path(path).is_absolute() or ".." in parts or parts[0].startswith(".."):
        raise VolumeSetupError(f"invalid path {path!r}: must be relative and may not contain '..'")


def _own_dir(path: Path, group: int | None) -> None:
    if group is None:
        os.chmod(path, DIR_MODE)
    else:
        os.chown(path, -1, group, follow_symlinks=False)
        os.chmod(path, DIR_MODE | GROUP_DIR_BITS)


def write_atomically(target: Path, files: Sequence[VolumeFile], group: int | None = None) -> bool:
    """Make `target` hold exactly `files`; False when it already did (nothing written).

    `group` (the pod's fsGroup, when ownership applies) owns the directories, setgid.
    """
    for f in files:
        _check_path(f.path)
    if _unchanged(target, files):
        return False
    make_private_dirs(target.parent)
    target.mkdir(exist_ok=True)
    _own_dir(target, group)
    stamp = datetime.now(UTC).strftime("..%Y_%m_%d_%H_%M_%S.")
    new_dir = Path(tempfile.mkdtemp(prefix=stamp, dir=target))
    _own_dir(new_dir, group)
    for f in files:
        path = new_dir / f.path
        for parent in reversed(path.relative_to(new_dir).parents[:-1]):
            if not (new_dir / parent).is_dir():
                (new_dir / parent).mkdir()
                _own_dir(new_dir / parent, group)
        path.write_bytes(f.data)
        if f.uid is not None or f.gid is not None:
            os.chown(path, -1 if f.uid is None else f.uid, -1 if f.gid is None else f.gid)
        os.chmod(path, f.mode)  # after chown, which may clear bits
    old = os.readlink(target / DATA_DIR) if (target / DATA_DIR).is_symlink() else None
    tmp_link = target / DATA_TMP
    if tmp_link.is_symlink() or tmp_link.exists():
        remove_under(target, tmp_link)
    tmp_link.symlink_to(new_dir.name)
    os.replace(tmp_link, target / DATA_DIR)
    visible = {Path(f.path).parts[0] for f in files}
    for name in visible:
        link = target / name
        if not link.is_symlink():
            link.symlink_to(f"{DATA_DIR}/{name}")
    for entry in target.iterdir():
        if not entry.name.startswith("..") and entry.name not in visible and entry.is_symlink():
            remove_under(target, entry)
    if old is not None and old != new_dir.name:
        remove_under(target, target / old)
    return True


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
    expiry = parse_time(expires)
    return float(asked) if expiry is None else expiry.timestamp() - now


# ---------------------------------------------------------------- per pod


@dataclass(eq=False)
class PodVolumes:
    """Sets up the configMap, secret, downwardAPI and projected volumes of pods."""

    volume_dir: VolumeDir
    getter: ObjectGetter
    request_token: TokenRequester | None
    node_allocatable: Callable[[], Mapping[str, str]]
    clock: Callable[[], float] = time.time
    ship: VolumeShipper | None = None
    trust_bundles: TrustBundleLister | None = None
    pod_certificates: PodCertificates | None = None
    # The tokens by (pod uid, source); whether files may get another owner (asked once).
    _tokens: dict[tuple[str, TokenSource], _Token] = field(default_factory=dict, init=False)
    _ownership: bool | None = field(default=None, init=False)

    def forget(self, uid: str) -> None:
        """The pod is gone: drop its cached tokens and certificates."""
        for key in [k for k in self._tokens if k[0] == uid]:
            del self._tokens[key]
        if self.pod_certificates is not None:
            self.pod_certificates.forget(uid)

    async def setup(self, pod: Mapping[str, Any]) -> dict[str, str]:
        """Write every API-backed volume of the pod; the failed ones as volume name -> error text."""
        volumes = api_volumes(pod)
        if not volumes:
            return {}
        try:
            fetched = await self._fetch(pod, volumes)
        except ApiStatusError as exc:
            return {str(v.get("name", "")): exc.message for v in volumes}
        uid = uid_of(pod)
        allocatable = self.node_allocatable()
        failed: dict[str, str] = {}
        for volume in volumes:
            name = str(volume.get("name", ""))
            try:
                target = self.volume_dir(uid, name)
                if target is None:
                    await self._ship_files(pod, volume, fetched, allocatable)
                    continue
                ownership = await self._may_chown()
                files = volume_files(pod, volume, fetched, allocatable, ownership=ownership)
                group = fs_group(pod) if ownership else None
                await asyncio.to_thread(write_atomically, target, files, group)
            except (VolumeSetupError, UnsafePathError) as exc:
                failed[name] = str(exc)
            except RuntimeFailure as exc:
                failed[name] = exc.message
            except OSError as exc:
                failed[name] = f"cannot write the volume's files: {exc}"
        return failed

    async def _ship_files(
        self,
        pod: Mapping[str, Any],
        volume: Mapping[str, Any],
        fetched: Fetched,
        allocatable: Mapping[str, str],
    ) -> None:
        """An engine without our filesystem: the runtime ships the files, owners included (the
        engine extracts them as root, so ownership always applies)."""
        if self.ship is None:
            raise VolumeSetupError("the container engine is not local: no host directory for volumes")
        files = volume_files(pod, volume, fetched, allocatable, ownership=True)
        for f in files:
            _check_path(f.path)
        await self.ship(pod, str(volume.get("name", "")), files, fs_group(pod))

    async def _may_chown(self) -> bool:
        if self._ownership is None:
            self._ownership = await asyncio.to_thread(can_change_owner)
            if not self._ownership:
                log.info(
                    "volume files keep the pods' modes and this process as owner: fsGroup and "
                    "runAsUser ownership need root with CAP_CHOWN"
                )
        return self._ownership

    async def _fetch(self, pod: Mapping[str, Any], volumes: Sequence[Mapping[str, Any]]) -> Fetched:
        namespace = str(meta(pod).get("namespace", ""))
        refs = sorted(set().union(*(referenced_objects(v) for v in volumes)))
        found = await asyncio.gather(*(self.getter(kind, namespace, name) for kind, name in refs))
        tokens: dict[TokenSource, str] = {}
        errors: dict[TokenSource, str] = {}
        for source in {s for v in volumes for s in token_sources(pod, v)}:
            try:
                tokens[source] = await self._token(pod, source)
            except ApiStatusError as exc:
                errors[source] = f"failed to fetch token: {exc.message}"
        bundles: dict[TrustBundleQuery, Sequence[Mapping[str, Any]]] = {}
        bundle_errors: dict[TrustBundleQuery, str] = {}
        for query in {q for v in volumes for q in trust_bundle_queries(v)}:
            if self.trust_bundles is None:
                bundle_errors[query] = "no ClusterTrustBundle client: the node has no apiserver"
                continue
            try:
                bundles[query] = await self.trust_bundles(query)
            except ApiStatusError as exc:
                bundle_errors[query] = f"while getting ClusterTrustBundles: {exc.message}"
        certificates: dict[tuple[str, int], tuple[bytes, bytes]] = {}
        certificate_errors: dict[tuple[str, int], str] = {}
        for volume in volumes:
            name = str(volume.get("name", ""))
            for index, projection in pod_certificate_sources(volume):
                if self.pod_certificates is None:
                    certificate_errors[(name, index)] = "no pod certificate client: the node has no apiserver"
                    continue
                try:
                    certificates[(name, index)] = await self.pod_certificates.credentials(
                        pod, name, index, projection
                    )
                except CredentialsPending as exc:
                    certificate_errors[(name, index)] = str(exc)
                except ApiStatusError as exc:
                    certificate_errors[(name, index)] = f"while creating PodCertificateRequest: {exc.message}"
        return Fetched(
            objects=dict(zip(refs, found, strict=True)),
            tokens=tokens,
            token_errors=errors,
            trust_bundles=bundles,
            trust_bundle_errors=bundle_errors,
            pod_certificates=certificates,
            pod_certificate_errors=certificate_errors,
        )

    async def _token(self, pod: Mapping[str, Any], source: TokenSource) -> str:
        key = (uid_of(pod), source)
        now = self.clock()
        cached = self._tokens.get(key)
        if cached is not None and not cached.needs_refresh(now):
            return cached.token
        if self.request_token is None:
            raise ApiStatusError(0, "ServiceUnavailable", "no TokenRequest client configured")
        body = token_request_body(pod, source)
        try:
            answer = await self.request_token(
                str(meta(pod).get("namespace", "")), source.service_account, body
            )
        except ApiStatusError:
            if cached is not None and now - cached.issued < cached.ttl:
                return cached.token  # token_manager.go: keep a token that has not expired yet
            raise
        token = str((answer.get("status") or {}).get("token") or "")
        self._tokens[key] = _Token(token, now, _ttl(answer, source.expiration_seconds, now))
        return token
