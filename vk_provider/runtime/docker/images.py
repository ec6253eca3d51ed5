"""Image references and pull-policy decisions, as the kubelet's image manager makes them (pure).

What lives here: parsing and normalising an image reference (`:latest` when there is no
tag or digest), and the kubelet's
failure messages of the engine's side (`InvalidImageName`, `ImageInspectError`,
`ErrImagePull`). The pull policy is decided above the runtime (`pods/images.py`).
Upstream: kubernetes `pkg/kubelet/images/image_manager.go` (applyDefaultImageTag,
evalCRIPullErr) and distribution's reference grammar. Must not: call Docker.
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


def inspect_error(image: str, engine_message: str) -> ImagePullError:
    """imagePullPrecheck's failure: `Failed to inspect image "i": ...`, ImageInspectError."""
    return ImagePullError(f'Failed to inspect image "{image}": {engine_message}', "ImageInspectError")


def pull_error(engine_messages: list[str]) -> ImagePullError:
    """The CRI pull's error as the kubelet keeps it (evalCRIPullErr's fallback: the error's own
    text; one per credential tried, aggregated as k8s.io/apimachinery's utilerrors does)."""
    unique = list(dict.fromkeys(engine_messages))
    text = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    return ImagePullError(text, "ErrImagePull")
