"""Which pods may use an image this provider pulled with a pull secret (pure, in memory).

What lives here: `PullRecords`, the kubelet's image pull records (feature
KubeletEnsureSecretPulledImages, on by default since 1.35, with its default policy
`NeverVerifyPreloadedImages`): after a pull, the image id and repository are recorded with
the credential that worked, node-wide when the pull was anonymous, else the secret's
coordinates and the credential's hash; `must_pull` tells whether a present image must be
pulled again (with the pod's own credentials) before a pod that does not hold that secret,
or the same credential under another secret, may use it. An image this provider did not pull
(loaded by hand, pulled before a restart: the records live in memory) counts as preloaded
and is not verified. Upstream: `pkg/kubelet/images/pullmanager/image_pull_manager.go`
(MustAttemptImagePull, writePulledRecordIfChanged) and `image_manager.go`
(trackedToImagePullCreds).
Must not: pull, read secrets or persist anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from vk_provider.kube.keyring import RegistryAuth, SecretRef


@dataclass
class _Access:
    node_wide: bool = False
    secrets: dict[SecretRef, str] = field(default_factory=dict)  # coordinates -> credential hash


def repository_of(image: str) -> str:
    """The reference without its tag and digest (trimImageTagDigest)."""
    name = image.partition("@")[0]
    head, slash, last = name.rpartition("/")
    return f"{head}{slash}{last.partition(':')[0]}"


class PullRecords:
    def __init__(self) -> None:
        self._records: dict[str, dict[str, _Access]] = {}  # image id -> repository -> access

    def record(self, image_id: str, image: str, auth: RegistryAuth | None) -> None:
        """A pull of `image` succeeded with `auth` (None: anonymously, so any pod may use it)."""
        access = self._records.setdefault(image_id, {}).setdefault(repository_of(image), _Access())
        if auth is None or auth.secret is None:
            access.node_wide = True
        else:
            access.secrets[auth.secret] = auth.credential_hash

    def tracked(self, image_id: str, image: str) -> bool:
        """Whether the pod's credentials matter: the image was pulled here, and not anonymously."""
        record = self._records.get(image_id)
        access = None if record is None else record.get(repository_of(image))
        return record is not None and not (access is not None and access.node_wide)

    def must_pull(self, image_id: str, image: str, pod_credentials: Iterable[RegistryAuth]) -> bool:
        """Whether a pod holding `pod_credentials` must pull the present `image` again."""
        record = self._records.get(image_id)
        if record is None:
            return False  # preloaded: NeverVerifyPreloadedImages
        access = record.get(repository_of(image))
        if access is None:
            return True
        if access.node_wide:
            return False
        for auth in pod_credentials:
            if auth.secret is None:
                continue
            same_secret = access.secrets.get(auth.secret)
            if auth.credential_hash in access.secrets.values() or same_secret is not None:
                # a rotated secret, or the same credential under another secret, is remembered too
                access.secrets[auth.secret] = auth.credential_hash
                return False
        return True
