import pytest

from vk_provider.runtime.docker.images import (
    never_pull_error,
    parse_image,
    pull_error,
    should_pull,
)
from vk_provider.runtime.types import ImagePullError


@pytest.mark.parametrize(
    ("image", "normalized"),
    [
        ("busybox", "busybox:latest"),
        ("vk-test/busybox:1", "vk-test/busybox:1"),
        ("localhost:5000/team/app:v1.2", "localhost:5000/team/app:v1.2"),
        ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
        ("app@sha256:" + "a" * 64, "app@sha256:" + "a" * 64),
        ("app:1@sha256:" + "b" * 64, "app:1@sha256:" + "b" * 64),
    ],
)
def test_parse_image_applies_latest_only_without_tag_or_digest(image: str, normalized: str) -> None:
    assert parse_image(image).normalized() == normalized


@pytest.mark.parametrize("image", ["", "bad image", "x::y", "Busybox", "app:", "-x/y"])
def test_invalid_image_names(image: str) -> None:
    with pytest.raises(ImagePullError) as info:
        parse_image(image)
    assert info.value.reason == "InvalidImageName"
    assert info.value.message.startswith(f'Failed to apply default image tag "{image}"')


def test_uppercase_repository_message() -> None:
    with pytest.raises(ImagePullError, match="repository name must be lowercase"):
        parse_image("Busybox")


def test_should_pull() -> None:
    assert should_pull("Always", present=True)
    assert should_pull("IfNotPresent", present=False)
    assert not should_pull("IfNotPresent", present=True)
    assert not should_pull("Never", present=False)


def test_kubelet_messages() -> None:
    err = never_pull_error("x:1")
    assert err.reason == "ErrImageNeverPull"
    assert err.message == 'Container image "x:1" is not present with pull policy of Never'
    err = pull_error("x:1", "manifest unknown")
    assert err.reason == "ErrImagePull"
    assert err.message == 'Failed to pull image "x:1": manifest unknown'
