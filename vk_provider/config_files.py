"""The files and the engine address a configuration names, checked as `vk-provider run` uses them.

What lives here: `check_config_files(config, source)`, which `vk-provider check-config` and
`vk-provider run` both call (run before anything starts), so the two cannot disagree. It
checks the kubeconfig `kube.client.kubeconfig_path` picks (`kubernetes.kubeconfig`, else
`$KUBECONFIG`, else in a pod the service account's env and files, else `~/.kube/config`) as
kubernetes_asyncio reads it (files merged, the current context's cluster and server, the files
it names); the kubelet API's serving certificate and key (`kubeletServer.tls`, mode `files`)
and client CA bundle (`kubeletServer.clientCAFile`, unless `auth: none`) as PEM and then as
`ssl` loads them; and the engine address (`docker.host`, else `$DOCKER_HOST`) as docker-py
parses it. A problem is a `ConfigError` naming the key path, the file and the reason; what a
file holds is never printed. Must not: connect to anything (an engine or apiserver that does
not answer is a start-up failure, not a configuration error), run a kubeconfig's exec plugin
or auth provider, or write a file.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from docker.constants import IS_WINDOWS_PLATFORM
from docker.errors import DockerException
from docker.utils import parse_host
from kubernetes_asyncio.config.incluster_config import (
    SERVICE_CERT_FILENAME,
    SERVICE_HOST_ENV_NAME,
    SERVICE_PORT_ENV_NAME,
    SERVICE_TOKEN_FILENAME,
)
from kubernetes_asyncio.config.kube_config import ENV_KUBECONFIG_PATH_SEPARATOR

from vk_provider.config import Config, DockerConfig, KubeletServerConfig, KubernetesConfig
from vk_provider.config_load import ConfigError
from vk_provider.kube.client import kubeconfig_path
from vk_provider.runtime.docker.engine import engine_url

# Certificates, keys and kubeconfigs are a few KiB; more is not one (and /dev/zero never ends).
MAX_FILE_BYTES = 1 << 20

KUBECONFIG = "kubernetes.kubeconfig"
_KUBECONFIG_LISTS = ("clusters", "contexts", "users")


class _Problem(Exception):
    """One reason, raised where it is found; `check_config_files` adds the source."""

    def __init__(self, key_path: str, reason: str) -> None:
        super().__init__(reason)
        self.key_path = key_path
        self.reason = reason


def check_config_files(config: Config, source: str) -> None:
    """Raise `ConfigError(source, key path, reason)` for the first file or address `run` could
    not use; return when all of them would do."""
    try:
        _check_kubeconfig(config.kubernetes)
        _check_serving_pair(config.kubelet_server)
        _check_client_ca(config.kubelet_server)
        _check_engine(config.docker)
    except _Problem as exc:
        # One line whatever a path or $DOCKER_HOST holds: control characters escaped.
        reason = "".join(c if c.isprintable() else repr(c)[1:-1] for c in exc.reason)
        raise ConfigError(source, exc.key_path, reason) from None


def _read(key_path: str, path: str) -> bytes:
    """The bytes of a regular file of at most MAX_FILE_BYTES; the reason names `path`."""
    try:
        if not Path(path).is_file():
            reason = "not a regular file" if os.path.exists(path) else "no such file"
            raise _Problem(key_path, f"{path}: {reason}")
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise _Problem(key_path, f"{path}: cannot read: {exc.strerror or type(exc).__name__}") from None
    if len(data) > MAX_FILE_BYTES:
        raise _Problem(key_path, f"{path}: larger than {MAX_FILE_BYTES} bytes")
    return data


# --- the apiserver's credentials ---------------------------------------------------------------


def _check_kubeconfig(cfg: KubernetesConfig) -> None:
    value = kubeconfig_path(cfg)
    if value is None:
        _check_in_cluster()
        return
    if cfg.kubeconfig:
        origin = ""
    elif value == os.environ.get("KUBECONFIG"):
        origin = "empty, so $KUBECONFIG: "
    else:
        origin = "empty, so the default "
    try:
        _check_kubeconfig_files(value)
    except _Problem as exc:
        raise _Problem(KUBECONFIG, f"{origin}{exc.reason}") from None


def _check_in_cluster() -> None:
    if not os.environ.get(SERVICE_HOST_ENV_NAME):
        raise _Problem(
            KUBECONFIG,
            "empty, and there is no $KUBECONFIG, no ~/.kube/config and no in-cluster service "
            "account ($KUBERNETES_SERVICE_HOST): set it to a kubeconfig file",
        )
    in_cluster = "empty, so the in-cluster service account"
    if not os.environ.get(SERVICE_PORT_ENV_NAME):
        raise _Problem(KUBECONFIG, f"{in_cluster}: ${SERVICE_PORT_ENV_NAME} is not set")
    for path in (SERVICE_TOKEN_FILENAME, SERVICE_CERT_FILENAME):
        try:
            data = _read(KUBECONFIG, path)
        except _Problem as exc:
            raise _Problem(KUBECONFIG, f"{in_cluster}: {exc.reason}") from None
        if not data.strip():
            raise _Problem(KUBECONFIG, f"{in_cluster}: {path}: empty")


def _kubeconfig_document(path: str) -> dict[Any, Any]:
    """One kubeconfig file as kubernetes_asyncio's KubeConfigMerger takes it."""
    try:
        text = _read(KUBECONFIG, path).decode("utf-8")
        data = yaml.safe_load(text)
    except UnicodeDecodeError:
        raise _Problem(KUBECONFIG, f"{path}: not a kubeconfig: not UTF-8 text") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise _Problem(KUBECONFIG, f"{path}: not a kubeconfig: not valid YAML{where}") from None
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, AttributeError, LookupError):
        raise _Problem(KUBECONFIG, f"{path}: not a kubeconfig: not valid YAML") from None
    if not isinstance(data, dict):
        raise _Problem(KUBECONFIG, f"{path}: not a kubeconfig: not a YAML mapping")
    for item in _KUBECONFIG_LISTS:
        entries = data.get(item) or []
        if not isinstance(entries, list) or not all(
            isinstance(entry, dict) and isinstance(entry.get("name"), str) for entry in entries
        ):
            raise _Problem(KUBECONFIG, f"{path}: not a kubeconfig: {item} is not a list of named entries")
    return data


def _check_kubeconfig_files(value: str) -> None:
    """`value` (paths joined by ':') merged as kubernetes_asyncio merges them: missing files
    skipped, the first entry of a name kept, the last file's current-context taken."""
    paths = [os.path.expanduser(p) for p in value.split(ENV_KUBECONFIG_PATH_SEPARATOR) if p]
    present = [p for p in paths if os.path.exists(p)]
    if not present:
        raise _Problem(KUBECONFIG, f"{value}: no such file")
    named: dict[str, dict[str, tuple[str, dict[Any, Any]]]] = {item: {} for item in _KUBECONFIG_LISTS}
    current: Any = None
    for path in present:
        data = _kubeconfig_document(path)
        for item in _KUBECONFIG_LISTS:
            for entry in data.get(item) or []:
                named[item].setdefault(entry["name"], (path, entry))
        if "current-context" in data:
            current = data["current-context"]
    if not isinstance(current, str) or not current:
        raise _Problem(KUBECONFIG, f"{value}: no current-context")
    if current not in named["contexts"]:
        raise _Problem(KUBECONFIG, f"{value}: current-context names no entry of contexts")
    path, entry = named["contexts"][current]
    context = entry.get("context")
    if not isinstance(context, dict) or not isinstance(context.get("cluster"), str):
        raise _Problem(KUBECONFIG, f"{path}: the current context names no cluster")
    if context["cluster"] not in named["clusters"]:
        raise _Problem(KUBECONFIG, f"{value}: the current context's cluster is not in clusters")
    cluster_path, entry = named["clusters"][context["cluster"]]
    cluster = entry.get("cluster")
    if not isinstance(cluster, dict) or not isinstance(cluster.get("server"), str) or not cluster["server"]:
        raise _Problem(KUBECONFIG, f"{cluster_path}: the current context's cluster has no server")
    user: Any = {}
    if isinstance(context.get("user"), str) and context["user"]:
        # client-go refuses a context naming an absent user (tools/clientcmd/validation.go,
        # validateContext: "user %q was not found for context %q"); kubernetes_asyncio would
        # go on without credentials and every call would answer 401.
        if context["user"] not in named["users"]:
            raise _Problem(KUBECONFIG, f"{value}: the current context's user is not in users")
        user_path, entry = named["users"][context["user"]]
        user = entry.get("user")
        if not isinstance(user, dict):
            raise _Problem(KUBECONFIG, f"{user_path}: the current context's user has no user section")
    if cluster["server"].startswith("https"):
        base = os.path.abspath(os.path.dirname(cluster_path))  # relative names: the cluster's file's
        files = ((cluster, "certificate-authority"), (user, "client-certificate"), (user, "client-key"))
        for section, key in files:
            _check_file_or_data(cluster_path, section, key, base)


def _check_file_or_data(path: str, section: dict[Any, Any], key: str, base: str) -> None:
    """`<key>-data` (base64) or the file `<key>` (relative to `base`), as FileOrData.as_file."""
    if f"{key}-data" in section:
        data = section[f"{key}-data"]
        try:
            base64.standard_b64decode(data.encode() if isinstance(data, str) else data or b"")
        except (binascii.Error, TypeError, ValueError):
            raise _Problem(KUBECONFIG, f"{path}: {key}-data is not base64") from None
    elif key in section:
        if not isinstance(section[key], str):
            raise _Problem(KUBECONFIG, f"{path}: {key} is not a file name")
        named = os.path.normpath(os.path.join(base, section[key]))
        if not os.path.isfile(named):
            raise _Problem(KUBECONFIG, f"{path}: {key} {named}: no such file")


# --- the kubelet API's TLS ---------------------------------------------------------------------


def _certificates(key_path: str, path: str) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(_read(key_path, path))
    except ValueError:
        raise _Problem(key_path, f"{path}: not a PEM certificate") from None


def _public_key_der(key: Any) -> bytes:
    der: bytes = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return der


def _check_serving_pair(server: KubeletServerConfig) -> None:
    """Mode `files`: a PEM certificate, an unencrypted PEM key that is its key, loaded as
    `kubeletapi.tls.server_ssl_context` loads them."""
    tls = server.tls
    if tls.mode != "files":
        return
    certificate = _certificates("kubeletServer.tls.certFile", tls.cert_file)[0]
    key_path = "kubeletServer.tls.keyFile"
    try:
        key = serialization.load_pem_private_key(_read(key_path, tls.key_file), password=None)
    except TypeError:  # cryptography's "Password was not given but private key is encrypted"
        raise _Problem(key_path, f"{tls.key_file}: an encrypted key; it must not have a passphrase") from None
    except (ValueError, UnsupportedAlgorithm):
        raise _Problem(key_path, f"{tls.key_file}: not a PEM private key") from None
    if _public_key_der(key.public_key()) != _public_key_der(certificate.public_key()):
        raise _Problem(key_path, f"{tls.key_file}: not the key of the certificate in certFile")
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as exc:
        reason = f"the certificate and key do not load: {_ssl_reason(exc)}"
        raise _Problem("kubeletServer.tls", reason) from None


def _check_client_ca(server: KubeletServerConfig) -> None:
    """The CA bundle client certificates are verified against, when the auth mode uses it."""
    if server.auth == "none" or not server.client_ca_file:
        return
    key_path = "kubeletServer.clientCAFile"
    _certificates(key_path, server.client_ca_file)
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_verify_locations(server.client_ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise _Problem(key_path, f"{server.client_ca_file}: does not load: {_ssl_reason(exc)}") from None


def _ssl_reason(exc: OSError) -> str:
    reason = getattr(exc, "reason", None) or exc.strerror
    return str(reason) if reason else type(exc).__name__


# --- the engine ----------------------------------------------------------------------------------


def _check_engine(docker_config: DockerConfig) -> None:
    """The engine address as docker-py parses it (scheme, host, port range); not whether it answers."""
    url = engine_url(docker_config)
    try:
        parse_host(url, IS_WINDOWS_PLATFORM)
    except (DockerException, ValueError) as exc:
        origin = "" if docker_config.host else "empty, so $DOCKER_HOST: "
        raise _Problem("docker.host", f"{origin}{url}: {exc}") from None
