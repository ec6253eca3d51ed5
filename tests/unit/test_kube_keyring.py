"""Pull-secret keyrings matched as pkg/credentialprovider/keyring.go matches them."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from vk_provider.kube.keyring import BadPullSecret, RegistryAuth, SecretRef, make_keyring, normalized_name


def secret(name: str, auths: dict[str, Any], kind: str = "kubernetes.io/dockerconfigjson") -> dict[str, Any]:
    if kind == "kubernetes.io/dockerconfigjson":
        key, body = ".dockerconfigjson", {"auths": auths}
    else:
        key, body = ".dockercfg", auths
    data = base64.b64encode(json.dumps(body).encode()).decode()
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    return {"metadata": meta, "type": kind, "data": {key: data}}


def creds(user: str, password: str = "pw") -> dict[str, str]:
    return {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}


def users(found: tuple[RegistryAuth, ...]) -> list[str]:
    return [a.username for a in found]


def test_both_secret_types_and_the_auth_field_or_plain_fields() -> None:
    keyring = make_keyring(
        [
            secret("a", {"reg.example:5000": creds("alice", "pa:ss")}),
            secret("b", {"other.example": {"username": "bob", "password": "pb"}}, "kubernetes.io/dockercfg"),
            {"metadata": {"name": "opaque"}, "type": "Opaque", "data": {".dockerconfigjson": "e30="}},
        ]
    )
    (alice,) = keyring.lookup("reg.example:5000/team/app")
    assert (alice.username, alice.password, alice.secret) == ("alice", "pa:ss", SecretRef("ns", "a", "uid-a"))
    assert users(keyring.lookup("other.example/x")) == ["bob"]
    assert "pa:ss" not in repr(alice)


@pytest.mark.parametrize(
    ("key", "name", "matches"),
    [
        ("reg.example:5000", "reg.example:5000/app", True),
        ("reg.example:5000", "reg.example/app", False),  # the port must be the same
        ("reg.example", "reg.example:5000/app", False),
        ("https://reg.example/v2/", "reg.example/app", True),  # scheme and /v2/ are dropped
        ("http://reg.example/v1/team", "reg.example/team/app", True),
        ("reg.example/team", "reg.example/other/app", False),  # a path is a prefix
        ("*.example", "reg.example/app", True),  # a glob per host label
        ("*.example", "a.reg.example/app", False),  # ...with as many labels
        ("reg.*.example", "reg.eu.example/app", True),
        ("127.0.0.1:5000", "127.0.0.1:5001/app", False),
    ],
)
def test_registry_matching(key: str, name: str, matches: bool) -> None:
    keyring = make_keyring([secret("s", {key: creds("u")})])
    assert bool(keyring.lookup(name)) is matches


def test_most_specific_key_first_then_every_match_in_turn() -> None:
    keyring = make_keyring(
        [
            secret("host", {"reg.example": creds("host")}),
            secret("path", {"reg.example/team": creds("team"), "reg.example/team/app": creds("app")}),
            secret("again", {"reg.example": creds("host2")}),
        ]
    )
    assert users(keyring.lookup("reg.example/team/app")) == ["app", "team", "host", "host2"]


@pytest.mark.parametrize("key", ["https://index.docker.io/v1/", "index.docker.io", "docker.io"])
def test_docker_hub_keys_match_hub_names(key: str) -> None:
    keyring = make_keyring([secret("hub", {key: creds("hub")})])
    assert users(keyring.lookup("docker.io/library/busybox")) == ["hub"]
    assert keyring.lookup("quay.io/x/y") == ()


def test_bad_secret_data_is_an_error() -> None:
    bad = {
        "metadata": {"name": "bad"},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": "bm9wZQ=="},
    }
    with pytest.raises(BadPullSecret, match="secret bad"):
        make_keyring([bad])
    with pytest.raises(BadPullSecret, match="base64"):
        make_keyring([secret("s", {"reg.example": {"auth": base64.b64encode(b"nocolon").decode()}})])


@pytest.mark.parametrize(
    ("image", "name"),
    [
        ("busybox", "docker.io/library/busybox"),
        ("docker.io/busybox:1", "docker.io/library/busybox"),
        ("index.docker.io/team/app", "docker.io/team/app"),
        ("vk-test/busybox:1", "docker.io/vk-test/busybox"),
        ("127.0.0.1:5000/busybox:1", "127.0.0.1:5000/busybox"),
        ("localhost/team/app@sha256:" + "a" * 64, "localhost/team/app"),
    ],
)
def test_fully_qualified_name_as_distribution_normalises_it(image: str, name: str) -> None:
    assert normalized_name(image) == name
