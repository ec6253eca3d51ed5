"""The files of configMap, secret, downwardAPI and projected volumes (pods.volumes), and their binds."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.support import docker_kwargs, manifests
from tests.support.launches import launch
from vk_provider.pods.volumes import (
    Fetched,
    TokenSource,
    VolumeSetupError,
    api_volumes,
    failed_mount_message,
    referenced_objects,
    token_request_body,
    token_sources,
    volume_files,
)


def b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


MAIN = {"name": "main", "image": "b", "resources": {"limits": {"memory": "64Mi"}}}


def make_pod(
    volumes: list[dict[str, Any]], containers: list[dict[str, Any]] | None = None, **spec_fields: Any
) -> dict[str, Any]:
    """The pod `web` (labelled, annotated; one container of 64Mi unless told) with these volumes."""
    return manifests.pod(
        "web",
        containers if containers is not None else [MAIN],
        namespace="ns",
        uid="u1",
        labels={"app": "web", "tier": "front"},
        annotations={"note": "hi"},
        serviceAccountName="robot",
        volumes=volumes,
        **spec_fields,
    )


CM = {"data": {"a": "alpha", "b": "beta"}, "binaryData": {"bin": b64(b"\x00\x01")}}
SECRET = {"data": {"user": b64("admin"), "pass": b64("s3cret")}}


def fetched(objects: dict[tuple[str, str], Any] | None = None, **kw: Any) -> Fetched:
    return Fetched(objects=objects or {}, tokens=kw.get("tokens", {}), token_errors=kw.get("errors", {}))


def files_of(pod: dict[str, Any], f: Fetched) -> dict[str, tuple[bytes, int]]:
    (volume,) = api_volumes(pod)
    return {x.path: (x.data, x.mode) for x in volume_files(pod, volume, f, {"memory": "1Gi"})}


def test_configmap_every_key_with_default_mode() -> None:
    pod = make_pod([{"name": "cfg", "configMap": {"name": "c"}}])
    assert files_of(pod, fetched({("configmap", "c"): CM})) == {
        "a": (b"alpha", 0o644),
        "b": (b"beta", 0o644),
        "bin": (b"\x00\x01", 0o644),
    }


def test_configmap_items_paths_and_modes() -> None:
    pod = make_pod(
        [
            {
                "name": "cfg",
                "configMap": {
                    "name": "c",
                    "defaultMode": 0o600,
                    "items": [
                        {"key": "a", "path": "dir/a.txt"},
                        {"key": "b", "path": "b.txt", "mode": 0o400},
                    ],
                },
            }
        ]
    )
    assert files_of(pod, fetched({("configmap", "c"): CM})) == {
        "dir/a.txt": (b"alpha", 0o600),
        "b.txt": (b"beta", 0o400),
    }


def test_missing_configmap_and_key_have_the_kubelets_messages() -> None:
    pod = make_pod([{"name": "cfg", "configMap": {"name": "c"}}])
    with pytest.raises(VolumeSetupError) as exc:
        files_of(pod, fetched({("configmap", "c"): None}))
    assert failed_mount_message("cfg", str(exc.value)) == (
        'MountVolume.SetUp failed for volume "cfg" : configmap "c" not found'
    )
    pod = make_pod([{"name": "cfg", "configMap": {"name": "c", "items": [{"key": "zz", "path": "z"}]}}])
    with pytest.raises(VolumeSetupError, match=r"^configmap references non-existent config key: zz$"):
        files_of(pod, fetched({("configmap", "c"): CM}))


def test_optional_configmap_missing_object_or_key_gives_what_exists() -> None:
    pod = make_pod([{"name": "cfg", "configMap": {"name": "c", "optional": True}}])
    assert files_of(pod, fetched({("configmap", "c"): None})) == {}
    pod = make_pod(
        [
            {
                "name": "cfg",
                "configMap": {
                    "name": "c",
                    "optional": True,
                    "items": [{"key": "zz", "path": "z"}, {"key": "a", "path": "a"}],
                },
            }
        ]
    )
    assert files_of(pod, fetched({("configmap", "c"): CM})) == {"a": (b"alpha", 0o644)}


def test_secret_decoded_with_secret_name_and_messages() -> None:
    pod = make_pod([{"name": "creds", "secret": {"secretName": "s", "defaultMode": 0o440}}])
    assert referenced_objects(api_volumes(pod)[0]) == {("secret", "s")}
    assert files_of(pod, fetched({("secret", "s"): SECRET})) == {
        "pass": (b"s3cret", 0o440),
        "user": (b"admin", 0o440),
    }
    with pytest.raises(VolumeSetupError, match=r'^secret "s" not found$'):
        files_of(pod, fetched({("secret", "s"): None}))
    pod = make_pod([{"name": "creds", "secret": {"secretName": "s", "items": [{"key": "x", "path": "x"}]}}])
    with pytest.raises(VolumeSetupError, match=r"^references non-existent secret key: x$"):
        files_of(pod, fetched({("secret", "s"): SECRET}))


def test_downward_api_fields_and_resources() -> None:
    pod = make_pod(
        [
            {
                "name": "info",
                "downwardAPI": {
                    "items": [
                        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}, "mode": 0o400},
                        {"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}},
                        {"path": "uid", "fieldRef": {"fieldPath": "metadata.uid"}},
                        {"path": "tier", "fieldRef": {"fieldPath": "metadata.labels['tier']"}},
                        {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}},
                        {
                            "path": "mem",
                            "resourceFieldRef": {
                                "containerName": "main",
                                "resource": "limits.memory",
                                "divisor": "1Mi",
                            },
                        },
                        {
                            "path": "cpu",
                            "resourceFieldRef": {"containerName": "main", "resource": "limits.cpu"},
                        },
                    ]
                },
            }
        ]
    )
    assert files_of(pod, fetched()) == {
        "labels": (b'app="web"\ntier="front"', 0o644),
        "name": (b"web", 0o400),
        "ns": (b"ns", 0o644),
        "uid": (b"u1", 0o644),
        "tier": (b"front", 0o644),
        "annotations": (b'note="hi"', 0o644),
        "mem": (b"64", 0o644),
        "cpu": (b"0", 0o644),  # no cpu limit and none allocatable given
    }


def service_account_volume() -> dict[str, Any]:
    """The volume the ServiceAccount admission adds."""
    return {
        "name": "kube-api-access-abcde",
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]
                    }
                },
            ],
        },
    }


def test_projected_service_account_volume() -> None:
    pod = make_pod([service_account_volume()])
    volume = api_volumes(pod)[0]
    source = TokenSource("robot", "", 3607)
    assert token_sources(pod, volume) == [source]
    assert referenced_objects(volume) == {("configmap", "kube-root-ca.crt")}
    root_ca = {"data": {"ca.crt": "PEM"}}
    got = files_of(pod, fetched({("configmap", "kube-root-ca.crt"): root_ca}, tokens={source: "jwt"}))
    assert got == {"token": (b"jwt", 0o644), "ca.crt": (b"PEM", 0o644), "namespace": (b"ns", 0o644)}
    body = token_request_body(pod, source)
    assert body["spec"] == {
        "expirationSeconds": 3607,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "u1"},
    }
    assert token_request_body(pod, TokenSource("robot", "vault", 600))["spec"]["audiences"] == ["vault"]


def test_projected_collects_every_sources_error() -> None:
    pod = make_pod([service_account_volume()])
    source = TokenSource("robot", "", 3607)
    errors = {source: 'failed to fetch token: serviceaccounts "robot" not found'}
    with pytest.raises(VolumeSetupError) as exc:
        files_of(pod, fetched({("configmap", "kube-root-ca.crt"): None}, errors=errors))
    assert str(exc.value) == (
        '[failed to fetch token: serviceaccounts "robot" not found, configmap "kube-root-ca.crt" not found]'
    )


def test_projected_item_modes_and_secret_source() -> None:
    pod = make_pod(
        [
            {
                "name": "all",
                "projected": {
                    "defaultMode": 0o640,
                    "sources": [
                        {"secret": {"name": "s", "items": [{"key": "user", "path": "u", "mode": 0o400}]}},
                        {"configMap": {"name": "c", "items": [{"key": "a", "path": "cfg/a"}]}},
                    ],
                },
            }
        ]
    )
    objects = {("secret", "s"): SECRET, ("configmap", "c"): CM}
    assert files_of(pod, fetched(objects)) == {"u": (b"admin", 0o400), "cfg/a": (b"alpha", 0o640)}


def test_docker_binds_of_api_volumes_are_read_only_with_subpath() -> None:
    pod = make_pod(
        [{"name": "cfg", "configMap": {"name": "c"}}, {"name": "scratch", "emptyDir": {}}],
        containers=[
            {
                "name": "main",
                "image": "b",
                "volumeMounts": [
                    {"name": "cfg", "mountPath": "/etc/cfg"},
                    {"name": "cfg", "mountPath": "/etc/a.conf", "subPath": "a", "readOnly": False},
                ],
            }
        ],
    )
    kw = docker_kwargs.container_create_kwargs(
        launch(pod),
        node_name="n",
        termination_file=None,
        volumes_root="/st/u1/volumes",
        resolve_subpath=lambda m: f"{m.source}/{m.sub}",  # the shell's walk and bind on a local engine
    )
    assert kw["volumes"] == ["/st/u1/volumes/cfg:/etc/cfg:ro", "/st/u1/volumes/cfg/a:/etc/a.conf:ro"]
