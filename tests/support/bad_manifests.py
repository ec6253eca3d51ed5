"""Static pod manifests that cannot become a pod, each with the reason the provider must report.

What lives here: `BAD_MANIFESTS`, 50 `BadManifest`s (a file name, its bytes or a special kind of
file, and the words of the reason docs/static-pods.md gives for it: malformed YAML and JSON,
binary garbage, not a Pod, wrong apiVersion, no containers, duplicate names, fields of the wrong
type, references to API objects, an alias bomb, an oversize file, a directory, a dangling symlink,
a FIFO...), `write_bad_manifest` (puts one into a static pod directory) and `good_manifest`, a
good static pod, the one the bad ones are made from. Must not: start or read the provider.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support import manifests
from tests.support.images import BUSYBOX_IMAGE

MAX_MANIFEST_BYTES = 10 * 1024 * 1024  # the provider's limit, as the kubelet's (docs/static-pods.md)
TWIN_OF = "good-0"  # the good static pod a duplicate file defines again


def good_manifest(name: str) -> dict[str, Any]:
    """A static pod running busybox, as a user writes one (no namespace)."""
    container = {"name": "main", "image": BUSYBOX_IMAGE, "command": ["sleep", "3600"]}
    return manifests.pod(name, [container], namespace=None, terminationGracePeriodSeconds=2)


@dataclass(frozen=True)
class BadManifest:
    """`name` (a file name; the test prefixes it per round) holding `content`, or made by `make`
    (a directory, a symlink...); the provider reports it with a reason containing `says`."""

    name: str
    says: str
    content: bytes = b""
    make: Callable[[Path], None] | None = None


def _yaml(doc: Any) -> bytes:
    return yaml.safe_dump(doc).encode()


def _pod(name: str = "bad", **spec: Any) -> dict[str, Any]:
    pod = good_manifest(name)
    pod["spec"].update(spec)
    return pod


def _container(**fields: Any) -> dict[str, Any]:
    return _pod(containers=[{"name": "main", "image": BUSYBOX_IMAGE, **fields}])


def _edit(change: Callable[[dict[str, Any]], None]) -> bytes:
    pod = _pod()
    change(pod)
    return _yaml(pod)


def _laughs(levels: int) -> bytes:
    """A "billion laughs" alias bomb in front of a pod: 9**levels values once expanded."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines).encode() + b"\n" + _yaml(_pod())


def _garbage(seed: int) -> bytes:
    return bytes([0xFF]) + random.Random(seed).randbytes(4096)


def _directory(path: Path) -> None:
    path.mkdir()


def _dangling(path: Path) -> None:
    os.symlink(path.with_name("does-not-exist.yaml"), path)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _oversize(path: Path) -> None:
    with path.open("wb") as sparse:  # no data written: the provider checks the size first
        sparse.truncate(MAX_MANIFEST_BYTES + 1)


_SECRET_VOLUME = {"name": "v", "secret": {"secretName": "creds"}}
_CONFIGMAP_VOLUME = {"name": "v", "configMap": {"name": "settings"}}
_PVC_VOLUME = {"name": "v", "persistentVolumeClaim": {"claimName": "data"}}
_TOKEN = {"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
_SECRET_ENV = [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k"}}}]
_TWO = [{"name": "main", "image": BUSYBOX_IMAGE}, {"name": "main", "image": BUSYBOX_IMAGE}]
_SCHEMA = "invalid Pod: "
_REFERENCE = "static pods may not reference "

BAD_MANIFESTS: tuple[BadManifest, ...] = (
    # Not YAML, not JSON, not text.
    BadManifest(
        "bad-indent.yaml", "invalid YAML/JSON at line 3", b"apiVersion: v1\nkind: Pod\n  bad: indent\n"
    ),
    BadManifest("truncated.json", "invalid YAML/JSON at line 1", b'{"apiVersion": "v1", "kind": "Pod", '),
    BadManifest("tab-indent.yaml", "invalid YAML/JSON", b"metadata:\n\tname: x\n"),
    BadManifest("control-char.yaml", "unacceptable character #x001f", b"apiVersion: v1\nkind: Pod\x1f\n"),
    BadManifest("nul-byte.yaml", "unacceptable character #x0000", b"apiVersion: v1\nkind: Pod\x00\n"),
    BadManifest("garbage.yaml", "not UTF-8 text (byte 0)", _garbage(1)),
    BadManifest("latin-1.yaml", "not UTF-8 text", "metadata: {name: café}\n".encode("latin-1")),
    BadManifest("deep.yaml", "invalid YAML/JSON: nested too deeply", b"[" * 5000),
    BadManifest("bad-date.yaml", "invalid YAML/JSON: day is out of range for month", b"x: 2001-02-30\n"),
    BadManifest("alias-bomb.yaml", "invalid YAML/JSON: document contains excessive aliasing", _laughs(7)),
    # Not one Pod.
    BadManifest("empty.yaml", "the file is empty; expected one Pod"),
    BadManifest("two-docs.yaml", "the file holds 2 documents", _yaml(_pod()) + b"---\n" + _yaml(_pod("b"))),
    BadManifest("a-list.yaml", "expected a Pod object, got a list", b"- a\n- b\n"),
    BadManifest("a-string.yaml", "expected a Pod object, got a str", b"just some text\n"),
    BadManifest(
        "deployment.yaml",
        "kind 'Deployment': a static pod manifest must be kind 'Pod'",
        _yaml({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
    ),
    BadManifest(
        "list-kind.json",
        "kind 'List'",
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [_pod()]}).encode(),
    ),
    BadManifest(
        "no-kind.yaml", "no kind: a static pod manifest must be kind 'Pod'", _edit(lambda p: p.pop("kind"))
    ),
    BadManifest(
        "apps-v1.yaml",
        "apiVersion 'apps/v1': a Pod must have apiVersion 'v1'",
        _edit(lambda p: p.update(apiVersion="apps/v1")),
    ),
    # Identity.
    BadManifest("no-metadata.yaml", "metadata.name is missing", _edit(lambda p: p.pop("metadata"))),
    BadManifest(
        "no-name.yaml", "metadata.name is missing", _edit(lambda p: p.update(metadata={"labels": {}}))
    ),
    BadManifest(
        "bad-uid.yaml", "invalid Pod: metadata.uid: '../x'", _edit(lambda p: p["metadata"].update(uid="../x"))
    ),
    BadManifest(
        "bad-name.yaml",
        "invalid Pod: metadata.name: 'Bad_Name'",
        _edit(lambda p: p["metadata"].update(name="Bad_Name")),
    ),
    BadManifest(
        "bad-namespace.yaml",
        "invalid Pod: metadata.namespace: 'Kube_System' is not a DNS-1123 label",
        _edit(lambda p: p["metadata"].update(namespace="Kube_System")),
    ),
    # The pod's own rules.
    BadManifest("no-spec.yaml", "at least one container is required", _edit(lambda p: p.pop("spec"))),
    BadManifest("no-containers.yaml", "at least one container is required", _yaml(_pod(containers=[]))),
    BadManifest(
        "no-image.yaml",
        "spec.containers[0].image: an image is required",
        _yaml(_pod(containers=[{"name": "main", "command": ["sleep", "1"]}])),
    ),
    BadManifest(
        "blank-image.yaml", "spec.containers[0].image: an image is required", _yaml(_container(image="  "))
    ),
    BadManifest("twin-containers.yaml", "duplicate container name 'main'", _yaml(_pod(containers=_TWO))),
    BadManifest(
        "twin-volumes.yaml",
        "duplicate volume name 'v'",
        _yaml(_pod(volumes=[{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}])),
    ),
    BadManifest("upper-container.yaml", "'Main' is not a DNS-1123 label", _yaml(_container(name="Main"))),
    BadManifest(
        "bad-volume-name.yaml",
        "'../x' is not a DNS-1123 label",
        _yaml(_pod(volumes=[{"name": "../x", "emptyDir": {}}])),
    ),
    # Fields of the wrong type, unknown fields (the schema, strict).
    BadManifest(
        "containers-string.yaml",
        "spec.containers: 'main' is not of type 'array'",
        _yaml(_pod(containers="main")),
    ),
    BadManifest(
        "image-int.yaml", "spec.containers[0].image: 42 is not of type 'string'", _yaml(_container(image=42))
    ),
    BadManifest(
        "port-name.yaml",
        "spec.containers[0].ports[0].containerPort: 'eighty' is not of type 'integer'",
        _yaml(_container(ports=[{"containerPort": "eighty"}])),
    ),
    BadManifest(
        "command-string.yaml",
        "spec.containers[0].command: 'sleep 1' is not of type 'array'",
        _yaml(_container(command="sleep 1")),
    ),
    BadManifest(
        "env-map.yaml",
        "spec.containers[0].env: {'X': '1'} is not of type 'array'",
        _yaml(_container(env={"X": "1"})),
    ),
    BadManifest(
        "unknown-field.yaml",
        "'commandd' was unexpected",
        _yaml(_container(commandd=["sleep"])),
    ),
    BadManifest(
        "unknown-top.yaml",
        "(top level): Additional properties are not allowed ('specs'",
        _edit(lambda p: p.update(specs={})),
    ),
    # References to API objects (a static pod must start without the apiserver).
    BadManifest(
        "secret-volume.yaml",
        _REFERENCE + "secrets (spec.volumes[0].secret",
        _yaml(_pod(volumes=[_SECRET_VOLUME])),
    ),
    BadManifest(
        "configmap-volume.yaml",
        _REFERENCE + "configmaps (spec.volumes[0].configMap",
        _yaml(_pod(volumes=[_CONFIGMAP_VOLUME])),
    ),
    BadManifest("pvc-volume.yaml", _REFERENCE + "persistentvolumeclaims", _yaml(_pod(volumes=[_PVC_VOLUME]))),
    BadManifest(
        "token.yaml",
        _REFERENCE + "serviceaccounts (spec.volumes[0].projected.sources[0]",
        _yaml(_pod(volumes=[_TOKEN])),
    ),
    BadManifest(
        "service-account.yaml",
        _REFERENCE + "serviceaccounts (spec.serviceAccountName",
        _yaml(_pod(serviceAccountName="default")),
    ),
    BadManifest(
        "pull-secret.yaml",
        _REFERENCE + "secrets (spec.imagePullSecrets[0]",
        _yaml(_pod(imagePullSecrets=[{"name": "reg"}])),
    ),
    BadManifest(
        "secret-env.yaml",
        _REFERENCE + "secrets (spec.containers[0].env[0]",
        _yaml(_container(env=_SECRET_ENV)),
    ),
    # The same pod twice; files that are not regular files or too large.
    BadManifest("twin-of-good.yaml", "is already defined by", _yaml(good_manifest(TWIN_OF))),
    BadManifest("dir.yaml", "is a directory, not a manifest file", make=_directory),
    BadManifest("dangling.yaml", "cannot read: No such file or directory", make=_dangling),
    BadManifest("fifo.yaml", "is not a regular file", make=_fifo),
    BadManifest("oversize.yaml", "file is larger than 10485760 bytes (10 MiB)", make=_oversize),
)


def write_bad_manifest(directory: Path, name: str, bad: BadManifest) -> Path:
    """Put `bad` into `directory` as `name` (what it becomes is in `bad`); the path."""
    path = directory / name
    if bad.make is not None:
        bad.make(path)
    else:
        path.write_bytes(bad.content)
    return path
