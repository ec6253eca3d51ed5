"""Loading the configuration file: YAML in, a validated `Config` out, and back for display.

What lives here: `load_config(path)`, `config_from_mapping(data, source)`,
`apply_overrides(config, ...)` for the CLI flags, `effective_config(config)` (the
YAML-shaped dict with every key and its value), `config_json_schema()` (the file's JSON
Schema, for the Helm chart's values.schema.json) and `ConfigError`, whose message is one
line `<file>: <key.path>: <reason>`. One declarative table maps each YAML key (camelCase)
to its dataclass field and kind, so loading, strict validation and display cannot drift
apart. Whatever the file holds ends in a ConfigError, never in a traceback: YAML the parser
cannot take (nesting too deep for it included), keys that are lists or mappings, values out of
range (quantities and durations are bounded in `vk_common.quantity`; unsafe sysctl patterns
are checked by `sysctls.sysctl_pattern_problem`, as the kubelet's NewAllowlist). A message
never prints what a file that is no configuration holds (a symlink to `/etc/shadow`): an
unknown or duplicate key is named only when it could be a mistyped key name, a top-level
value that is no mapping only by its type. The files the configuration names are checked
in `vk_provider.config_files`. Environment
fallbacks (`KUBECONFIG`, `DOCKER_HOST`, `NODE_IP`/`POD_IP`) are applied where the value is
used, not here. Must not: touch the network, Docker, or any file other
than the one it is asked to load.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

import yaml

from vk_common.sysctls import sysctl_pattern_problem
from vk_provider.config import (
    Config,
    DockerAllow,
    DockerConfig,
    KubeletServerConfig,
    KubeletTLS,
    KubernetesConfig,
    LoggingConfig,
    MetricsConfig,
    NetworkConfig,
    NodeCapacity,
    NodeConfig,
    PodsConfig,
    StaticPodsConfig,
    StatusConfig,
    Taint,
)
from vk_provider.config_kinds import (
    SHOWN_KEY,
    Bool,
    Duration,
    Enum,
    Invalid,
    ListOf,
    PositiveInt,
    PositiveNumber,
    Quantity,
    Section,
    Str,
    StrList,
    StrMap,
    join_path,
    show,
    type_of,
)

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TLS_MODES = ("files", "selfSigned", "csr")
AUTH_MODES = ("webhook", "x509", "none")
CREDENTIALS_MODES = ("serviceAccount", "node")

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_CAPABILITY = re.compile(r"[A-Z][A-Z0-9_]*")


class ConfigError(Exception):
    """A configuration that cannot be used. `str()` is one line naming the file and key."""

    def __init__(self, source: str, key_path: str, reason: str) -> None:
        self.source = source
        self.key_path = key_path
        self.reason = reason
        super().__init__(f"{source}: {key_path}: {reason}" if key_path else f"{source}: {reason}")


class _Labels(StrMap):
    what = "a mapping of label keys to values"

    def entry(self, key: Any, value: Any, where: str) -> str:
        if not isinstance(key, str):
            raise Invalid(where, f"expected a string label key, got {show(key)}")
        if problem := _label_key_problem(key):
            raise Invalid(where, f"invalid label key: {problem}")
        if not isinstance(value, str):
            raise Invalid(where, f"expected a string label value, got {show(value)}")
        if problem := _label_value_problem(value):
            raise Invalid(where, f"invalid label value: {problem}")
        return value


class _ComponentLevels(StrMap):
    """`logging.components`: a log level per component (`pods`, `kube.client`, ...), as klog's
    `-vmodule` sets one file's verbosity; a component is the logger's name under `vk_provider.`."""

    what = "a mapping of components to log levels"

    def entry(self, key: Any, value: Any, where: str) -> str:
        if not isinstance(key, str) or not _COMPONENT.fullmatch(key):
            raise Invalid(where, f"expected a component such as pods or kube.client, got {show(key)}")
        return _LOG_LEVEL.parse(value, where)

    def value_schema(self) -> dict[str, Any]:
        return _LOG_LEVEL.json_schema()


def _cgroup_root_problem(value: str) -> str | None:
    parts = value.split("/")
    if not value.startswith("/") or any(p in (".", "..") for p in parts) or value.rstrip("/") == "":
        return f"expected an absolute cgroup path other than / (e.g. /vk-provider), got {value!r}"
    if parts[1] == "kubepods" or parts[1].startswith("kubepods."):
        return (
            "must not be the kubelet's kubepods: a kubelet on the same host removes cgroups it does not know"
        )
    return None


class _RuntimeHandlers(StrMap):
    """`docker.runtimes`: a RuntimeClass handler (a DNS-1123 label, as RuntimeClass validation
    wants it) -> the engine runtime that runs it."""

    what = "a mapping of RuntimeClass handlers to engine runtimes"

    def entry(self, key: Any, value: Any, where: str) -> str:
        if not isinstance(key, str) or len(key) > 63 or not re.fullmatch(_DNS1123_LABEL, key):
            raise Invalid(where, f"expected a RuntimeClass handler (a DNS-1123 label), got {show(key)}")
        if not isinstance(value, str) or not value.strip():
            raise Invalid(where, f"expected the name of one of the engine's runtimes, got {show(value)}")
        return value


def _dns_subdomain_problem(value: str) -> str | None:
    if len(value) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(value):
        return (
            f"must be a DNS-1123 subdomain (lower case letters, digits, '-' and '.', "
            f"starting and ending with a letter or digit, at most 253 characters), got {value!r}"
        )
    return None


def _label_key_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or _dns_subdomain_problem(prefix)):
        return f"{key!r} has a prefix that is not a DNS-1123 subdomain"
    if len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return (
            f"{key!r}: the name part must be at most 63 characters of letters, digits, '-', '_' "
            f"and '.', starting and ending with a letter or digit"
        )
    return None


def _label_value_problem(value: str) -> str | None:
    if value and (len(value) > 63 or not _QUALIFIED_NAME.fullmatch(value)):
        return (
            f"{value!r} must be empty or at most 63 characters of letters, digits, '-', '_' "
            f"and '.', starting and ending with a letter or digit"
        )
    return None


def _ip_problem(value: str) -> str | None:
    if not value:
        return None
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return f"expected an IP address or empty, got {value!r}"
    return None


def _cluster_dns_problem(value: str) -> str | None:
    return _ip_problem(value) if value else "expected an IP address, got ''"


def _cluster_domain_problem(value: str) -> str | None:
    return _dns_subdomain_problem(value) if value else None


def _listen_problem(value: str) -> str | None:
    host, colon, port = value.rpartition(":")
    bad = f"expected host:port like '0.0.0.0:10250' or '[::]:10250', got {value!r}"
    if not colon or not re.fullmatch(r"[0-9]{1,5}", port) or int(port) > 65535:  # ASCII digits only
        return bad
    if host.startswith("[") and host.endswith("]"):
        return None if _ip_problem(host[1:-1]) is None and ":" in host else bad
    if ":" in host:
        return bad
    return None


def _optional_listen_problem(value: str) -> str | None:
    return _listen_problem(value) if value else None


def _docker_host_problem(value: str) -> str | None:
    if value and not re.fullmatch(r"(unix|tcp|ssh|npipe|http|https)://\S+", value):
        example = "'unix:///var/run/docker.sock' or 'tcp://host:2376'"
        return f"expected a Docker host URL like {example}, got {value!r}"
    return None


def _nonempty(value: str) -> str | None:
    return "must not be empty" if not value.strip() else None


def _absolute_or_empty(value: str) -> str | None:
    return None if not value or value.startswith("/") else f"expected an absolute path, got {value!r}"


def _capability_problem(value: str) -> str | None:
    if not _CAPABILITY.fullmatch(value):
        return f"expected a capability name like 'NET_ADMIN', got {value!r}"
    return None


def _absolute(value: str) -> str | None:
    return None if value.startswith("/") else "must be an absolute path"


class _PathList(StrList):
    """One absolute path or a list of them (`network.cniBinDir`: a search path)."""

    def __init__(self) -> None:
        super().__init__(Str(_absolute))

    def parse(self, value: Any, path: str) -> tuple[str, ...]:
        paths = super().parse([value] if isinstance(value, str) else value, path)
        if not paths:
            raise Invalid(path, "expected at least one directory")
        return paths

    def json_schema(self) -> dict[str, Any]:
        return {"oneOf": [self.item.json_schema(), super().json_schema()]}


def _check_network(config: Config) -> None:
    """CNI mode enters the sandbox's network namespace on this host: the engine must be here."""
    docker = config.docker
    remote = docker.engine_location == "remote" or (
        docker.engine_location == "auto" and bool(docker.host) and not docker.host.startswith("unix://")
    )
    if config.network.plugin == "cni" and remote:
        reason = (
            "cni needs the Docker engine on this host (its sandboxes' network namespaces are entered "
            f"from here); docker.host {docker.host or '(engineLocation remote)'} is not"
        )
        raise Invalid("network.plugin", reason)


def _check_tls(tls: KubeletTLS, path: str) -> None:
    if tls.mode == "files":
        for key, value in (("certFile", tls.cert_file), ("keyFile", tls.key_file)):
            if not value:
                raise Invalid(join_path(path, key), "is required when mode is 'files'")


def _check_server(server: KubeletServerConfig, path: str) -> None:
    if server.auth == "x509" and not server.client_ca_file:
        raise Invalid(join_path(path, "clientCAFile"), "is required when auth is 'x509'")
    port = server.healthz_listen.rpartition(":")[2]
    if server.healthz_listen and port != "0" and port == server.listen.rpartition(":")[2]:
        raise Invalid(join_path(path, "healthzListen"), f"port {port} is the kubelet API's (listen)")


# --- the table ----------------------------------------------------------------------------------

_TAINT = Section(
    Taint,
    [
        ("key", "key", Str(_label_key_problem)),
        ("value", "value", Str(_label_value_problem)),
        ("effect", "effect", Enum(TAINT_EFFECTS)),
    ],
)

_NODE_NAME = Str(_dns_subdomain_problem)
_LOG_LEVEL = Enum(LOG_LEVELS)
_COMPONENT = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*")
_LOG_FORMAT = Enum(LOG_FORMATS)

_SCHEMA = Section(
    Config,
    [
        (
            "node",
            "node",
            Section(
                NodeConfig,
                [
                    ("name", "name", _NODE_NAME),
                    ("labels", "labels", _Labels()),
                    ("taints", "taints", ListOf(_TAINT)),
                    (
                        "capacity",
                        "capacity",
                        Section(
                            NodeCapacity,
                            [
                                ("cpu", "cpu", Quantity(allow_auto=True)),
                                ("memory", "memory", Quantity(allow_auto=True)),
                                ("pods", "pods", Quantity(allow_auto=False)),
                                ("ephemeral-storage", "ephemeral_storage", Quantity(allow_auto=True)),
                            ],
                        ),
                    ),
                    ("providerID", "provider_id", Str()),
                    ("internalIP", "internal_ip", Str(_ip_problem)),
                    ("leaseDurationSeconds", "lease_duration_seconds", PositiveInt()),
                    ("statusReportInterval", "status_report_interval", Duration()),
                    ("cordonOnShutdown", "cordon_on_shutdown", Bool()),
                ],
            ),
        ),
        (
            "kubernetes",
            "kubernetes",
            Section(
                KubernetesConfig,
                [
                    ("kubeconfig", "kubeconfig", Str()),
                    ("qps", "qps", PositiveNumber()),
                    ("burst", "burst", PositiveInt()),
                    ("credentials", "credentials", Enum(CREDENTIALS_MODES)),
                    ("certificateDir", "certificate_dir", Str(_absolute_or_empty)),
                ],
            ),
        ),
        (
            "docker",
            "docker",
            Section(
                DockerConfig,
                [
                    ("engine", "engine", Enum(("docker", "podman"))),
                    ("host", "host", Str(_docker_host_problem)),
                    ("engineLocation", "engine_location", Enum(("auto", "local", "remote"))),
                    ("maxConcurrency", "max_concurrency", PositiveInt()),
                    ("network", "network", Str(_nonempty)),
                    ("sandboxImage", "sandbox_image", Str(_nonempty)),
                    ("stateDir", "state_dir", Str(_nonempty)),
                    ("seccompProfileRoot", "seccomp_profile_root", Str(_absolute_or_empty)),
                    (
                        "allow",
                        "allow",
                        Section(
                            DockerAllow,
                            [
                                ("privileged", "privileged", Bool()),
                                ("hostPath", "host_path", Bool()),
                                ("hostNetwork", "host_network", Bool()),
                                ("hostPID", "host_pid", Bool()),
                                ("hostIPC", "host_ipc", Bool()),
                                ("capabilities", "capabilities", StrList(Str(_capability_problem))),
                                ("unsafeSysctls", "unsafe_sysctls", StrList(Str(sysctl_pattern_problem))),
                                ("unconfined", "unconfined", Bool()),
                            ],
                        ),
                    ),
                    ("runtimes", "runtimes", _RuntimeHandlers()),
                    ("podCgroups", "pod_cgroups", Bool()),
                    ("cgroupRoot", "cgroup_root", Str(_cgroup_root_problem)),
                ],
            ),
        ),
        (
            "pods",
            "pods",
            Section(
                PodsConfig,
                [
                    ("maxConcurrentSyncs", "max_concurrent_syncs", PositiveInt()),
                    ("resyncInterval", "resync_interval", Duration()),
                    ("clusterDNS", "cluster_dns", StrList(Str(_cluster_dns_problem))),
                    ("clusterDomain", "cluster_domain", Str(_cluster_domain_problem)),
                    ("resolvConf", "resolv_conf", Str(_absolute_or_empty)),
                ],
            ),
        ),
        (
            "network",
            "network",
            Section(
                NetworkConfig,
                [
                    ("plugin", "plugin", Enum(("docker", "cni"))),
                    ("cniConfDir", "cni_conf_dir", Str(_absolute)),
                    ("cniBinDir", "cni_bin_dir", _PathList()),
                    ("cniTimeout", "cni_timeout", Duration()),
                ],
            ),
        ),
        (
            "staticPods",
            "static_pods",
            Section(
                StaticPodsConfig,
                [("path", "path", Str()), ("relistInterval", "relist_interval", Duration())],
            ),
        ),
        (
            "kubeletServer",
            "kubelet_server",
            Section(
                KubeletServerConfig,
                [
                    ("listen", "listen", Str(_listen_problem, pattern=":[0-9]{1,5}$")),
                    (
                        "tls",
                        "tls",
                        Section(
                            KubeletTLS,
                            [
                                ("mode", "mode", Enum(TLS_MODES)),
                                ("certFile", "cert_file", Str()),
                                ("keyFile", "key_file", Str()),
                            ],
                            _check_tls,
                        ),
                    ),
                    ("clientCAFile", "client_ca_file", Str()),
                    ("auth", "auth", Enum(AUTH_MODES)),
                    (
                        "healthzListen",
                        "healthz_listen",
                        Str(_optional_listen_problem, pattern="^$|:[0-9]{1,5}$"),
                    ),
                    ("enableSystemLogHandler", "enable_system_log_handler", Bool()),
                    ("enableSystemLogQuery", "enable_system_log_query", Bool()),
                    ("systemLogDir", "system_log_dir", Str(_absolute)),
                ],
                _check_server,
            ),
        ),
        ("status", "status", Section(StatusConfig, [("syncPeriod", "sync_period", Duration())])),
        (
            "logging",
            "logging",
            Section(
                LoggingConfig,
                [
                    ("level", "level", _LOG_LEVEL),
                    ("format", "format", _LOG_FORMAT),
                    ("components", "components", _ComponentLevels()),
                ],
            ),
        ),
        ("metrics", "metrics", Section(MetricsConfig, [("enabled", "enabled", Bool())])),
    ],
    lambda config, _: _check_network(config),
)


# --- YAML reading -------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if not isinstance(key, Hashable):  # a complex key: `? [a]`, `? {a: 1}`
            problem = "a mapping key must be a plain value, not a list or a mapping"
            raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
        if key in seen:
            shown = f" {key!r}" if isinstance(key, str) and SHOWN_KEY.fullmatch(key) else ""
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key{shown}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _line_column(text: str, position: int) -> str:
    """`line:column` (both from 1) of a character offset into `text`."""
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"{line}:{column}"


def _parse_yaml(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise ConfigError(where, "", f"invalid YAML: {exc.problem or exc.context}") from None
    except yaml.reader.ReaderError as exc:  # a character YAML refuses; no mark, a two-line str()
        where = f"{source}:{_line_column(text, exc.position)}"
        raise ConfigError(where, "", f"invalid YAML: unacceptable character #x{exc.character:04x}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, "", f"invalid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(source, "", "invalid YAML: nested too deeply") from None
    except (ValueError, TypeError, OverflowError) as exc:  # a constructor's, e.g. `2001-02-30`
        raise ConfigError(source, "", f"invalid YAML: {exc}") from None
    except (AttributeError, LookupError):  # PyYAML's on tags it cannot read: `!!float`, `!!bool x`
        raise ConfigError(source, "", "invalid YAML: a tagged value that does not fit its tag") from None


# --- public API ---------------------------------------------------------------------------------


def config_from_mapping(data: Any, source: str = "<config>") -> Config:
    """Validate already-parsed data (a mapping, or None for all defaults) into a Config."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        reason = f"expected a mapping of sections at the top level, got {type_of(data)}"
        raise ConfigError(source, "", reason)
    try:
        config: Config = _SCHEMA.parse(data, "")
    except Invalid as exc:
        raise ConfigError(source, exc.path, exc.reason) from None
    return config


def load_config(path: str | Path) -> Config:
    """Read, parse and validate the configuration file at `path`."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, "", "no such file") from None
    except IsADirectoryError:
        raise ConfigError(source, "", "is a directory, not a configuration file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, "", f"cannot read: {exc}") from None
    return config_from_mapping(_parse_yaml(text, source), source)


def apply_overrides(
    config: Config,
    *,
    node_name: str | None = None,
    kubeconfig: str | None = None,
    log_level: str | None = None,
    log_format: str | None = None,
) -> Config:
    """Apply the CLI flags over a loaded Config, validating them like the file's keys."""
    try:
        if node_name is not None:
            name = _NODE_NAME.parse(node_name, "--node-name")
            config = dataclasses.replace(config, node=dataclasses.replace(config.node, name=name))
        if kubeconfig is not None:
            kube = dataclasses.replace(config.kubernetes, kubeconfig=kubeconfig)
            config = dataclasses.replace(config, kubernetes=kube)
        if log_level is not None:
            level = _LOG_LEVEL.parse(log_level, "--log-level")
            config = dataclasses.replace(config, logging=dataclasses.replace(config.logging, level=level))
        if log_format is not None:
            fmt = _LOG_FORMAT.parse(log_format, "--log-format")
            config = dataclasses.replace(config, logging=dataclasses.replace(config.logging, format=fmt))
    except Invalid as exc:
        raise ConfigError("command line", exc.path, exc.reason) from None
    return config


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of the configuration file, from the same table as the loader: every
    section closed (an unknown key is an error), every key typed."""
    return _SCHEMA.json_schema()


def effective_config(config: Config) -> dict[str, Any]:
    """The YAML-shaped configuration with every key and its value (durations as `10s`)."""
    result: dict[str, Any] = _SCHEMA.dump(config)
    return result
