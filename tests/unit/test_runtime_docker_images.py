import pytest

from vk_provider.runtime.docker.images import inspect_error, parse_image, pull_error
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


def test_kubelet_messages() -> None:
    err = inspect_error("x:1", "engine down")
    assert (err.reason, err.message) == ("ImageInspectError", 'Failed to inspect image "x:1": engine down')
    err = pull_error(["manifest unknown"])
    assert (err.reason, err.message) == ("ErrImagePull", "manifest unknown")
    # one error per credential tried, aggregated as utilerrors.NewAggregate prints them
    assert pull_error(["denied", "unauthorized", "denied"]).message == "[denied, unauthorized]"
