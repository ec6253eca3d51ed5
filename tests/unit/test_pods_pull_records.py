"""Pull records (pods/pull_records.py): which pods may use an image pulled with a secret."""

from __future__ import annotations

from vk_provider.kube.keyring import RegistryAuth, SecretRef
from vk_provider.pods.pull_records import PullRecords, repository_of

IMAGE = "reg.example:5000/team/app:1"
SECRET = SecretRef("ns", "creds", "uid-1")


def auth(secret: SecretRef | None = SECRET, password: str = "pw") -> RegistryAuth:
    return RegistryAuth("user", password, secret=secret)


def test_repository_of_drops_tag_and_digest_not_the_port() -> None:
    assert repository_of(IMAGE) == "reg.example:5000/team/app"
    assert repository_of("reg.example:5000/app@sha256:" + "a" * 64) == "reg.example:5000/app"
    assert repository_of("busybox") == "busybox"


def test_preloaded_and_anonymously_pulled_images_are_for_every_pod() -> None:
    records = PullRecords()
    assert not records.tracked("sha256:pre", IMAGE)
    assert not records.must_pull("sha256:pre", IMAGE, ())
    records.record("sha256:anon", IMAGE, None)
    assert not records.tracked("sha256:anon", IMAGE)
    assert not records.must_pull("sha256:anon", IMAGE, ())


def test_an_image_pulled_with_a_secret_needs_that_secret_or_that_credential() -> None:
    records = PullRecords()
    records.record("sha256:priv", IMAGE, auth())
    assert records.tracked("sha256:priv", IMAGE)
    assert records.must_pull("sha256:priv", IMAGE, ())
    assert records.must_pull("sha256:priv", IMAGE, (auth(SecretRef("ns", "other", "uid-2"), "wrong"),))
    assert not records.must_pull("sha256:priv", IMAGE, (auth(),))
    # the same credential under another secret, and a rotated secret, are accepted (and remembered)
    elsewhere = SecretRef("other-ns", "copy", "uid-3")
    assert not records.must_pull("sha256:priv", IMAGE, (auth(elsewhere),))
    assert not records.must_pull("sha256:priv", IMAGE, (auth(SECRET, "rotated"),))
    assert not records.must_pull("sha256:priv", IMAGE, (auth(SecretRef("x", "y", "z"), "rotated"),))
    # another repository naming the same image id was never pulled by this secret
    assert records.must_pull("sha256:priv", "reg.example:5000/other:1", (auth(),))
