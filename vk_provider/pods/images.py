"""The kubelet's image manager for one container: pull policy, pull secrets, Events, back-off.

What lives here: `ImageManager.ensure`, which makes a container's image present before it is
created, as `pkg/kubelet/images/image_manager.go` EnsureImageExists does: ask the runtime
whether the image is there; `IfNotPresent` / `Never` use it (`Pulled`: already present on
machine and can be accessed by the pod) unless it was pulled with a pull secret the pod does
not hold (`pods/pull_records.py`: then it is pulled again with the pod's own credentials),
`Never` without it fails with `ErrImageNeverPull`; otherwise, unless the image is
in its back-off (`ImagePullBackOff`, the message carrying the last pull error), fetch the
pod's `imagePullSecrets` (`pkg/kubelet/kubelet_pods.go` getPullSecretsForPod; the
ServiceAccount admission plugin has already copied the service account's into the pod),
turn them into a keyring (`kube/keyring.py`) and pull (`Pulling`, then `Pulled` with the
durations and size, or `Failed` and `ErrImagePull`; a missing secret adds the kubelet's
`FailedToRetrieveImagePullSecret` warning when the pull failed, `pkg/kubelet/kubelet.go`).
Every failure also gets kuberuntime's `Failed` Event `Error: <reason>`
(`pkg/kubelet/kuberuntime/kuberuntime_container.go` startContainer).
`ImageManager.look_ahead` starts the presence check of a new pod's first image while its sandbox
is made, for `ensure` to take.
Must not: know the engine (the runtime pulls, one pull per image at a time), or start containers.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vk_common.logging import get_logger, pod_fields
from vk_common.objects import default_pull_policy, meta
from vk_common.objects import uid as uid_of
from vk_provider.kube.keyring import BadPullSecret, Keyring, RegistryAuth, make_keyring
from vk_provider.metrics import image_size_bucket
from vk_provider.pods.backoff import image_backoff_message, image_key
from vk_provider.pods.deps import SyncDeps
from vk_provider.pods.policy import ERROR_RETRY_SECONDS, field_path, jitter
from vk_provider.pods.pull_records import PullRecords
from vk_provider.pods.work import SyncPass
from vk_provider.runtime.types import ContainerRole, ImagePullError, PulledImage

log = get_logger("pods.workers")

PULL_ALWAYS = "Always"
PULL_NEVER = "Never"


@dataclass(frozen=True)
class PullSecrets:
    """The pod's pull secrets that could be read, and the names of those that could not."""

    found: tuple[Mapping[str, Any], ...]
    missing: tuple[str, ...]


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String() of a duration truncated to milliseconds: 512ms, 1.234s, 2m3.5s."""
    ms = max(math.floor(seconds * 1000), 0)
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, frac = divmod(rest, 1000)
    text = f"{secs}.{frac:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    return f"{minutes}m{text}" if minutes else text


def present_message(image: str) -> str:
    """With KubeletEnsureSecretPulledImages (on by default since 1.35) every present image is
    checked against the pull records first, hence the longer message."""
    return f'Container image "{image}" already present on machine and can be accessed by the pod'


def never_pull_message(image: str) -> str:
    return f'Container image "{image}" is not present with pull policy of Never'


def pulled_message(image: str, pulled: PulledImage, total_seconds: float) -> str:
    return (
        f'Successfully pulled image "{image}" in {go_duration(pulled.pull_seconds)} '
        f"({go_duration(total_seconds)} including waiting). Image size: {pulled.size_bytes} bytes."
    )


class ImageManager:
    def __init__(self, deps: SyncDeps) -> None:
        self._deps = deps
        self._records = PullRecords()
        # pod uid -> image -> (epoch, message) of the image's last failed pull
        self._failures: dict[str, dict[str, tuple[float, str]]] = {}

    def forget(self, uid: str) -> None:
        self._failures.pop(uid, None)

    def look_ahead(self, sync: SyncPass, image: str) -> None:
        """Start asking the runtime whether `image` is present, beside what the sync does now
        (a new pod's sandbox); `ensure` of that image in the same sync takes the answer instead
        of asking again. A look-up no step takes is dropped with the sync."""
        if image and image not in sync.image_lookups:
            sync.image_lookups[image] = asyncio.ensure_future(self._deps.runtime.image_id(image))

    async def ensure(
        self, sync: SyncPass, pod: Mapping[str, Any], container: Mapping[str, Any], role: ContainerRole
    ) -> bool:
        """True when the image is present; else the container's waiting reason is set and the
        pod's timer armed (the back-off's end, or the kubelet's retry of a failed sync)."""
        name = container["name"]
        fp = field_path(role, name)
        image = str(container.get("image", ""))
        policy = str(container.get("imagePullPolicy") or default_pull_policy(image))
        ahead = sync.image_lookups.pop(image, None)
        try:
            present = await (ahead if ahead is not None else self._deps.runtime.image_id(image))
        except ImagePullError as exc:  # InvalidImageName, ImageInspectError
            self._event(pod, "Warning", "InspectFailed", exc.message, fp)
            return self._failed(sync, pod, name, fp, exc.reason, exc.message, jitter(ERROR_RETRY_SECONDS))
        if present is not None and policy != PULL_ALWAYS:
            credentials: tuple[RegistryAuth, ...] = ()
            if self._records.tracked(present, image):  # only then do the pod's secrets matter
                found = await self._credentials(sync, pod, name, fp)
                if found is None:
                    return False
                credentials = found[0].lookup_image(image)
            if not self._records.must_pull(present, image, credentials):
                self._event(pod, "Normal", "Pulled", present_message(image), fp)
                return True
        if policy == PULL_NEVER:
            message = never_pull_message(image)
            self._event(pod, "Warning", "ErrImageNeverPull", message, fp)
            return self._failed(
                sync, pod, name, fp, "ErrImageNeverPull", message, jitter(ERROR_RETRY_SECONDS)
            )
        return await self._pull(sync, pod, name, fp, image)

    async def _credentials(
        self, sync: SyncPass, pod: Mapping[str, Any], name: str, fp: str
    ) -> tuple[Keyring, tuple[str, ...]] | None:
        """The pod's keyring and its missing secrets; None when a secret is not the JSON of its
        type (the container waits with the parse error)."""
        secrets = await self._pull_secrets(pod)
        try:
            return make_keyring(secrets.found), secrets.missing
        except BadPullSecret as exc:
            self._failed(sync, pod, name, fp, "ErrImagePull", str(exc), jitter(ERROR_RETRY_SECONDS))
            return None

    async def _pull(self, sync: SyncPass, pod: Mapping[str, Any], name: str, fp: str, image: str) -> bool:
        key = image_key(pod, image)
        failure = self._failures.get(uid_of(pod), {}).get(image)
        if failure is not None:
            left = self._deps.backoff.remaining(key, failure[0])
            if left > 0:
                self._event(pod, "Normal", "BackOff", image_backoff_message(image), fp)
                message = f"{image_backoff_message(image)}: ErrImagePull: {failure[1]}"
                return self._failed(sync, pod, name, fp, "ImagePullBackOff", message, left)
        found = await self._credentials(sync, pod, name, fp)
        if found is None:
            return False
        return await self._pull_with(sync, pod, name, fp, image, *found)

    async def _pull_with(
        self,
        sync: SyncPass,
        pod: Mapping[str, Any],
        name: str,
        fp: str,
        image: str,
        keyring: Keyring,
        missing: tuple[str, ...],
    ) -> bool:
        key = image_key(pod, image)
        self._event(pod, "Normal", "Pulling", f'Pulling image "{image}"', fp)
        began = time.monotonic()
        try:
            pulled = await self._deps.runtime.pull_image(image, keyring)
        except ImagePullError as exc:
            self._count_pull("failure")
            at = time.time()
            self._event(pod, "Warning", "Failed", f'Failed to pull image "{image}": {exc.message}', fp)
            delay = self._deps.backoff.next(key, at)
            self._failures.setdefault(uid_of(pod), {})[image] = (at, exc.message)
            if missing:
                self._event(
                    pod,
                    "Warning",
                    "FailedToRetrieveImagePullSecret",
                    f"Unable to retrieve some image pull secrets ({', '.join(missing)}); "
                    "attempting to pull the image may not succeed.",
                    "",
                )
            # The next sync, within the back-off window, shows ImagePullBackOff.
            return self._failed(sync, pod, name, fp, exc.reason, exc.message, min(1.0, delay / 2))
        self._count_pull("success")
        if self._deps.metrics is not None:
            bucket = image_size_bucket(pulled.size_bytes)
            self._deps.metrics.image_pull_duration.labels(bucket).observe(time.monotonic() - began)
        self._records.record(pulled.image_id, image, pulled.auth)
        if self._failures.get(uid_of(pod), {}).pop(image, None) is not None:
            self._deps.backoff.reset(key)
        self._event(pod, "Normal", "Pulled", pulled_message(image, pulled, time.monotonic() - began), fp)
        log.info("pulled image", extra=pod_fields(pod, image=image, bytes=pulled.size_bytes))
        return True

    def _count_pull(self, result: str) -> None:
        if self._deps.metrics is not None:
            self._deps.metrics.image_pulls.labels(result).inc()

    async def _pull_secrets(self, pod: Mapping[str, Any]) -> PullSecrets:
        """getPullSecretsForPod: each named secret of `spec.imagePullSecrets`; any failure to
        read one (absent, forbidden, the API down) makes it missing, and the pull goes on."""
        namespace = str(meta(pod).get("namespace") or "")
        found: list[Mapping[str, Any]] = []
        missing: list[str] = []
        for ref in (pod.get("spec") or {}).get("imagePullSecrets") or []:
            secret_name = str((ref or {}).get("name") or "")
            if not secret_name:
                continue  # validation allowed empty names (issue 99454): skipped without a warning
            try:
                secret = await self._deps.getter("secret", namespace, secret_name)
            except Exception as exc:  # the kubelet treats every error as a missing secret
                log.info("pull secret not used", extra=pod_fields(pod, secret=secret_name, reason=str(exc)))
                secret = None
            if secret is None:
                missing.append(secret_name)
            else:
                found.append(secret)
        return PullSecrets(tuple(found), tuple(missing))

    def _event(self, pod: Mapping[str, Any], type_: str, reason: str, message: str, fp: str) -> None:
        self._deps.recorder.event(pod, type_, reason, message, field_path=fp)

    def _failed(
        self,
        sync: SyncPass,
        pod: Mapping[str, Any],
        name: str,
        fp: str,
        reason: str,
        message: str,
        retry: float,
    ) -> bool:
        """The container waits with `reason`; kuberuntime's `Error: <reason>` Event; a timer."""
        log.info("image not ready", extra=pod_fields(pod, container=name, reason=reason, detail=message))
        sync.wait(name, reason, message, retry)
        self._event(pod, "Warning", "Failed", f"Error: {reason}", fp)
        return False
