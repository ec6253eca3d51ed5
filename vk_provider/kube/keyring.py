"""Registry credentials from a pod's image pull secrets, matched as the kubelet matches them (pure).

What lives here: `RegistryAuth` (one username / password pair and the `SecretRef` it came
from), `normalized_name(image)` (the repository credentials are looked up by), `make_keyring(secrets)`, which
reads the `kubernetes.io/dockerconfigjson` (`.dockerconfigjson`, `{"auths": {...}}`) and
`kubernetes.io/dockercfg` (`.dockercfg`, the bare map) secrets into a `Keyring`, and
`Keyring.lookup(name)`: every credential whose registry key matches a normalised repository
name (`docker.io/library/busybox`, `127.0.0.1:5000/team/app`), most specific key first.
Upstream: kubernetes `pkg/credentialprovider/keyring.go` (BasicDockerKeyring.Add / Lookup,
URLsMatch: per-label globs, same port, path prefix; isDefaultRegistryMatch for
`index.docker.io`), `config.go` (DockerConfigEntry's `auth` field, base64 user:password) and
`secrets/secrets.go` (which secret types and keys count).
Must not: fetch secrets, talk to a registry or a container engine.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

DOCKER_CONFIG_JSON_TYPE = "kubernetes.io/dockerconfigjson"
DOCKER_CONFIG_JSON_KEY = ".dockerconfigjson"
DOCKERCFG_TYPE = "kubernetes.io/dockercfg"
DOCKERCFG_KEY = ".dockercfg"
_DEFAULT_REGISTRY_HOST = "index.docker.io"


class BadPullSecret(ValueError):
    """A pull secret of a docker type whose data is not the JSON it must be."""


@dataclass(frozen=True)
class SecretRef:
    """The coordinates of the secret a credential came from (credentialprovider's SecretCoordinates)."""

    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class RegistryAuth:
    """One credential and the secret it came from (not part of its identity)."""

    username: str
    password: str
    email: str = ""
    secret: SecretRef | None = field(default=None, compare=False)

    def __repr__(self) -> str:  # never print the password
        return f"RegistryAuth(username={self.username!r}, secret={self.secret!r})"

    @property
    def credential_hash(self) -> str:
        """keyring.go hashAuthConfig: a digest of the credential, to recognise it again."""
        body = json.dumps([self.username, self.password, self.email]).encode()
        return hashlib.sha256(body).hexdigest()


@dataclass(frozen=True)
class Keyring:
    """Registry keys (host, or host + path prefix), sorted in reverse so longer ones come first."""

    entries: tuple[tuple[str, tuple[RegistryAuth, ...]], ...] = ()

    def lookup_image(self, image: str) -> tuple[RegistryAuth, ...]:
        """The credentials for an image reference (by its normalised repository name)."""
        return self.lookup(normalized_name(image))

    def lookup(self, name: str) -> tuple[RegistryAuth, ...]:
        """The credentials for a normalised repository name, in the order to try them."""
        found = [auth for key, auths in self.entries if _urls_match(key, name) for auth in auths]
        if found:
            return tuple(found)
        if _is_default_registry_match(name):
            return dict(self.entries).get(_DEFAULT_REGISTRY_HOST, ())
        return ()


def normalized_name(image: str) -> str:
    """The fully qualified repository of a reference, tag and digest dropped, as distribution's
    ParseNormalizedNamed names it (`busybox` is `docker.io/library/busybox`); what the kubelet
    looks credentials up by (pkg/util/parsers ParseImageName)."""
    name = image.partition("@")[0]
    head, slash, last = name.rpartition("/")
    name = f"{head}{slash}{last.partition(':')[0]}"
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        if first not in ("docker.io", "index.docker.io"):
            return name
        name = rest
    return f"docker.io/{name if '/' in name else 'library/' + name}"


def make_keyring(secrets: Iterable[Mapping[str, Any]]) -> Keyring:
    """The keyring of the docker-type secrets among `secrets` (others are skipped, as upstream).

    Raises BadPullSecret when a docker-type secret's data is not JSON of its shape."""
    creds: dict[str, list[RegistryAuth]] = {}
    for secret in secrets:
        config = _docker_config(secret)
        meta = secret.get("metadata") or {}
        source = SecretRef(
            str(meta.get("namespace", "")), str(meta.get("name", "")), str(meta.get("uid", ""))
        )
        for registry, entry in config.items():
            key = _registry_key(str(registry))
            if key is None:
                continue
            creds.setdefault(key, []).append(_entry_auth(entry, source))
    return Keyring(tuple((key, tuple(creds[key])) for key in sorted(creds, reverse=True)))


def _docker_config(secret: Mapping[str, Any]) -> Mapping[str, Any]:
    """The registry map of one secret; empty for a secret of another type or without its key."""
    kind = secret.get("type")
    data = secret.get("data") or {}
    if kind == DOCKER_CONFIG_JSON_TYPE and data.get(DOCKER_CONFIG_JSON_KEY):
        parsed = _decode(secret, data[DOCKER_CONFIG_JSON_KEY])
        auths = parsed.get("auths") if isinstance(parsed, dict) else None
        if auths is not None and not isinstance(auths, dict):
            raise BadPullSecret(f"secret {_name(secret)}: .dockerconfigjson: auths is not an object")
        return auths or {}
    if kind == DOCKERCFG_TYPE and data.get(DOCKERCFG_KEY):
        parsed = _decode(secret, data[DOCKERCFG_KEY])
        if not isinstance(parsed, dict):
            raise BadPullSecret(f"secret {_name(secret)}: .dockercfg is not an object")
        return parsed
    return {}


def _name(secret: Mapping[str, Any]) -> str:
    return str((secret.get("metadata") or {}).get("name", ""))


def _decode(secret: Mapping[str, Any], value: Any) -> Any:
    try:
        return json.loads(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError) as exc:
        raise BadPullSecret(f"secret {_name(secret)}: {exc}") from exc


def _entry_auth(entry: Any, source: SecretRef) -> RegistryAuth:
    """DockerConfigEntry.UnmarshalJSON: `auth` (base64 of user:password) wins over the fields."""
    if not isinstance(entry, dict):
        raise BadPullSecret(f"secret {source.name}: a registry entry is not an object")
    username, password = str(entry.get("username") or ""), str(entry.get("password") or "")
    encoded = str(entry.get("auth") or "")
    if encoded:
        padded = encoded.strip() + "=" * (-len(encoded.strip()) % 4)
        try:
            user, sep, secret = base64.b64decode(padded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise BadPullSecret(f"secret {source.name}: {exc}") from exc
        if not sep:
            raise BadPullSecret("unable to parse auth field, must be formatted as base64(username:password)")
        username, password = user, secret
    return RegistryAuth(username, password, str(entry.get("email") or ""), source)


def _registry_key(registry: str) -> str | None:
    """BasicDockerKeyring.Add: host, plus the path without a leading /v1/ or /v2/."""
    if not registry.startswith(("https://", "http://")):
        registry = "https://" + registry
    try:
        parsed = urlsplit(registry)
        host = parsed.netloc
    except ValueError:
        return None
    path = parsed.path
    if path.startswith(("/v2/", "/v1/")):
        path = path[3:]
    return host + path if path and path != "/" else host


def _split(url: str) -> tuple[list[str], str, str]:
    """Host labels, port and path of a scheme-less URL (ParseSchemelessURL, SplitURL)."""
    parsed = urlsplit("https://" + url)
    netloc, path = parsed.netloc, parsed.path
    host, port = netloc, ""
    if netloc.startswith("["):
        end = netloc.find("]")
        host, port = netloc[: end + 1], netloc[end + 2 :] if netloc[end + 1 : end + 2] == ":" else ""
    elif netloc.count(":") == 1:
        host, port = netloc.split(":")
    return host.split("."), port, path


def _urls_match(glob: str, target: str) -> bool:
    """URLsMatch: same port, same number of host labels each matching its glob, path prefix."""
    try:
        glob_parts, glob_port, glob_path = _split(glob)
        target_parts, target_port, target_path = _split(target)
    except ValueError:
        return False
    if glob_port != target_port or len(glob_parts) != len(target_parts):
        return False
    if not target_path.startswith(glob_path):
        return False
    return all(fnmatch.fnmatchcase(t, g) for g, t in zip(glob_parts, target_parts, strict=True))


def _is_default_registry_match(name: str) -> bool:
    first, sep, _ = name.partition("/")
    if not first:
        return False
    if not sep or first in ("docker.io", _DEFAULT_REGISTRY_HOST):
        return True
    return not any(c in first for c in ".:")
