"""`ImagePuller`: image pulls on one Docker engine, with credentials, one at a time per image.

What lives here: the pull the runtime's `pull_image` does: the credentials the keyring has
for the image's fully qualified name, tried in turn (none: an anonymous pull; upstream
`pkg/kubelet/kuberuntime/kuberuntime_image.go` PullImage), the engine's progress stream read
to its end (its first error fails the pull), then the image's id and size; and single-flight:
while a pull of one reference with one set of credentials runs, a second caller waits for its
result instead of starting another (a waiter's cancellation does not cancel the pull).
Must not: decide whether to pull (the pull policy is the pods layer's), or block the event loop
(every Docker call goes through `Engine.call`).
"""

from __future__ import annotations

import time
from typing import Any

from requests.exceptions import RequestException

from docker.errors import APIError, DockerException
from vk_common.single_flight import SingleFlight
from vk_provider.kube.keyring import Keyring, RegistryAuth
from vk_provider.runtime.docker import images
from vk_provider.runtime.docker.engine import Engine
from vk_provider.runtime.types import PulledImage

_Key = tuple[str, tuple[RegistryAuth, ...]]


def engine_message(exc: BaseException) -> str:
    if isinstance(exc, APIError) and exc.explanation:
        return str(exc.explanation)
    return str(exc)


class ImagePuller:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._flights: SingleFlight[_Key, PulledImage] = SingleFlight()

    async def pull(self, image: str, keyring: Keyring) -> PulledImage:
        """Pull (or join the pull already running for the same reference and credentials)."""
        ref = images.parse_image(image)
        key: _Key = (ref.normalized(), keyring.lookup_image(image))
        return await self._flights.join(key, lambda: self._pull(ref, key[1]))

    async def _pull(self, ref: images.ImageRef, credentials: tuple[RegistryAuth, ...]) -> PulledImage:
        began = time.monotonic()
        errors: list[str] = []
        used: RegistryAuth | None = None
        for auth in credentials or (None,):
            try:
                await self._engine.call(self._pull_blocking, ref, auth)
                used = auth
                break
            except (DockerException, RequestException) as exc:
                errors.append(engine_message(exc))
        else:
            raise images.pull_error(errors)
        took = time.monotonic() - began
        try:
            inspect: dict[str, Any] = await self._engine.call(
                self._engine.client.api.inspect_image, ref.normalized()
            )
        except (DockerException, RequestException) as exc:
            raise images.pull_error([engine_message(exc)]) from exc
        return PulledImage(str(inspect["Id"]), int(inspect.get("Size") or 0), took, used)

    def _pull_blocking(self, ref: images.ImageRef, auth: RegistryAuth | None) -> None:
        """Pull, failing on the first error the engine reports in its progress stream."""
        config = None if auth is None else {"username": auth.username, "password": auth.password}
        stream = self._engine.client.api.pull(
            ref.repository, tag=ref.digest or ref.tag, stream=True, decode=True, auth_config=config
        )
        for item in stream:
            if isinstance(item, dict) and item.get("error"):
                raise APIError(str(item["error"]), explanation=str(item["error"]))
