"""Image references and pull-policy decisions, as the kubelet's image manager makes them (pure).

What lives here: parsing and normalising an image reference (`:latest` when there is no
tag or digest), whether to pull given what is present, and the
kubelet's failure messages (`InvalidImageName`, `ErrImageNeverPull`, `ErrImagePull`).
Upstream: kubernetes `pkg/kubelet/images/image_manager.go` (EnsureImageExists,
shouldPullImage) and distribution's reference grammar. Must not: call Docker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vk_provider.runtime.types import ImagePullError

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_DOMAIN_RE = re.compile(rf"^{_DOMAIN}$")
_PATH_RE = re.compile(
    rf"^(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?$"
)

PULL_ALWAYS = "Always"
PULL_IF_NOT_PRESENT = "IfNotPresent"
PULL_NEVER = "Never"
PULL_POLICIES = (PULL_ALWAYS, PULL_IF_NOT_PRESENT, PULL_NEVER)


@dataclass(frozen=True)
class ImageRef:
    """A parsed reference; `domain` is empty for Docker Hub short names."""

    domain: str
    path: str
    tag: str
    digest: str

    @property
    def repository(self) -> str:
        return f"{self.domain}/{self.path}" if self.domain else self.path

    def normalized(self) -> str:
        """The reference with `:latest` applied when it has neither tag nor digest."""
        text = self.repository
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def _split_domain(reference: str) -> tuple[str, str]:
    """The first component is a registry host when it has a dot or colon, or is localhost."""
    first, sep, rest = reference.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        return first, rest
    return "", reference


def parse_image(image: str) -> ImageRef:
    """Parse and apply the default tag; raise ImagePullError(InvalidImageName) as the kubelet does."""
    if not image:
        raise ImagePullError(
            f'Failed to apply default image tag "{image}": invalid reference format', "InvalidImageName"
        )
    domain, remainder = _split_domain(image)
    match = _PATH_RE.match(remainder)
    if match is None or (domain and not _DOMAIN_RE.match(domain)):
        lowered = remainder.lower()
        why = (
            "repository name must be lowercase"
            if remainder != lowered and _PATH_RE.match(lowered)
            else "invalid reference format"
        )
        raise ImagePullError(f'Failed to apply default image tag "{image}": {why}', "InvalidImageName")
    tag = match.group("tag") or ""
    digest = match.group("digest") or ""
    if not tag and not digest:
        tag = "latest"
    return ImageRef(domain=domain, path=match.group("path"), tag=tag, digest=digest)


def should_pull(pull_policy: str, present: bool) -> bool:
    if pull_policy == PULL_ALWAYS:
        return True
    if pull_policy == PULL_NEVER:
        return False
    return not present


def never_pull_error(image: str) -> ImagePullError:
    return ImagePullError(
        f'Container image "{image}" is not present with pull policy of Never', "ErrImageNeverPull"
    )


def pull_error(image: str, engine_message: str) -> ImagePullError:
    return ImagePullError(f'Failed to pull image "{image}": {engine_message}', "ErrImagePull")
