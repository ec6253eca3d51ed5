"""Loading the configuration file: YAML in, a validated `Config` out, and back for display.

What lives here: `load_config(path)`, `config_from_mapping(data, source)`,
`apply_overrides(config, ...)` for the CLI flags, `effective_config(config)` (the
YAML-shaped dict with every key and its value), `config_json_schema()` (the file's JSON
Schema, for the Helm chart's values.schema.json) and `ConfigError`, whose message is one
line `<file>: <key.path>: <reason>`. One declarative table maps each YAML key (camelCase)
to its dataclass field and kind, so loading, strict validation and display cannot drift
apart. Whatever the file holds ends in a ConfigError, never in a traceback: YAML the parser
cannot take (nesting too deep for it included), keys that are lists or mappings, values out of
range (quantities and durations are bounded in `vk_provider.quantity`; unsafe sysctl patterns
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

import abc
import dataclasses
import ipaddress
import json
import math
import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

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
from vk_provider.quantity import (
    MAX_QUANTITY,
    DurationOutOfRange,
    QuantityOutOfRange,
    format_duration,
    parse_duration,
    parse_quantity,
)
from vk_provider.sysctls import sysctl_pattern_problem

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


class _Invalid(Exception):
    """Raised while walking the data; turned into a ConfigError with the source name."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason


def _show(value: Any) -> str:
    """How a bad value appears in a message: as the user would have written it in YAML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _type_of(value: Any) -> str:
    """What a value is, without its content: for data that may not be a configuration at all."""
    if isinstance(value, str):
        return "text"
    if value is None or isinstance(value, bool | list | Mapping):
        return _show(value)
    return "a number" if isinstance(value, int | float) else f"a YAML {type(value).__name__}"


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")
# An unknown key is named in a message only when it could be a mistyped key (the longest known
# one has 20 characters): a file that is no configuration (a symlink to /etc/shadow, a private
# key) must not have its content printed as "unknown keys".
_SHOWN_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,23}")


def _unknown_key(path: str, key: Any, known: Iterable[str]) -> _Invalid:
    """The error for a key no table knows: its path when the key is shown, else the section's."""
    known_keys = f"known keys here: {', '.join(known)}"
    if isinstance(key, str) and _SHOWN_KEY.fullmatch(key):
        return _Invalid(_join(path, key), f"unknown key ({known_keys})")
    return _Invalid(path, f"unknown key, not shown as it is not a key name ({known_keys})")


def _join(path: str, key: str) -> str:
    """`path.key`, or `path["key"]` (JSON-escaped) for a key a message could not show plainly."""
    if not _PLAIN_KEY.fullmatch(key):
        return f"{path}[{json.dumps(key)}]"
    return f"{path}.{key}" if path else key


# --- value kinds: parse a YAML value into the dataclass value, and dump it back -----------------


class _Kind(abc.ABC):
    @abc.abstractmethod
    def parse(self, value: Any, path: str) -> Any: ...

    @abc.abstractmethod
    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema (draft 7) of the values `parse` may accept: their shape and types;
        `parse` keeps the finer checks (quantities, durations, label syntax)."""

    def dump(self, value: Any) -> Any:
        return value


class _Bool(_Kind):
    def parse(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise _Invalid(path, f"expected true or false, got {_show(value)}")
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "boolean"}


class _PositiveInt(_Kind):
    def parse(self, value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _Invalid(path, f"expected a positive integer, got {_show(value)}")
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "integer", "minimum": 1}


class _PositiveNumber(_Kind):
    def parse(self, value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
            raise _Invalid(path, f"expected a positive number, got {_show(value)}")
        return float(value)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "number", "exclusiveMinimum": 0}


class _Str(_Kind):
    def __init__(self, check: Callable[[str], str | None] | None = None, pattern: str | None = None) -> None:
        self.check = check
        self.pattern = pattern  # for the JSON Schema only: a coarse form of `check`

    def parse(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise _Invalid(path, f"expected a string, got {_show(value)}")
        problem = self.check(value) if self.check else None
        if problem:
            raise _Invalid(path, problem)
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": self.pattern} if self.pattern else {"type": "string"}


class _Enum(_Kind):
    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices

    def parse(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or value not in self.choices:
            raise _Invalid(path, f"expected one of {', '.join(self.choices)}, got {_show(value)}")
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"enum": list(self.choices)}


class _Duration(_Kind):
    def parse(self, value: Any, path: str) -> float:
        if not isinstance(value, str):
            raise _Invalid(path, f"expected a duration like '10s', '5m' or '1h30m', got {_show(value)}")
        try:
            seconds = parse_duration(value)
        except DurationOutOfRange:
            raise _Invalid(
                path, f"expected a duration of at most 2562047h47m16.854775807s, got {value!r}"
            ) from None
        except ValueError:
            raise _Invalid(path, f"expected a duration like '10s', '5m' or '1h30m', got {value!r}") from None
        if seconds <= 0:
            raise _Invalid(path, f"expected a positive duration, got {value!r}")
        return seconds

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "description": "a duration like '10s', '5m' or '1h30m'"}

    def dump(self, value: Any) -> str:
        return format_duration(value)


def _plain_text(value: Any) -> str:
    """A scalar as the text a quantity is parsed from ("" for anything else)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return ""
    try:
        return str(value)
    except ValueError:  # an int of more digits than str() converts
        return ""


class _Quantity(_Kind):
    """A non-negative Kubernetes quantity, kept as written; `auto` where Docker can tell."""

    def __init__(self, allow_auto: bool) -> None:
        self.allow_auto = allow_auto

    def parse(self, value: Any, path: str) -> str:
        if self.allow_auto and value == "auto":
            return "auto"
        text = _plain_text(value)
        try:
            valid = parse_quantity(text) >= 0
        except QuantityOutOfRange:
            raise _Invalid(
                path, f"expected a Kubernetes quantity of at most {MAX_QUANTITY}, got {_show(value)}"
            ) from None
        except ValueError:
            valid = False
        if not valid:
            auto = " or 'auto'" if self.allow_auto else ""
            raise _Invalid(
                path, f"expected a Kubernetes quantity like '500m', '16Gi' or '4'{auto}, got {_show(value)}"
            )
        return text

    def json_schema(self) -> dict[str, Any]:
        auto = " or 'auto'" if self.allow_auto else ""
        return {"type": ["string", "number"], "description": f"a Kubernetes quantity{auto}"}


class _StrList(_Kind):
    def __init__(self, item: _Str) -> None:
        self.item = item

    def parse(self, value: Any, path: str) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise _Invalid(path, f"expected a list of strings, got {_show(value)}")
        return tuple(self.item.parse(v, f"{path}[{i}]") for i, v in enumerate(value))

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.json_schema()}

    def dump(self, value: Any) -> list[str]:
        return list(value)


class _Labels(_Kind):
    def parse(self, value: Any, path: str) -> dict[str, str]:
        if not isinstance(value, Mapping):
            raise _Invalid(path, f"expected a mapping of label keys to values, got {_show(value)}")
        labels: dict[str, str] = {}
        for key, val in value.items():
            where = f"{path}[{json.dumps(str(key))}]"
            if not isinstance(key, str):
                raise _Invalid(where, f"expected a string label key, got {_show(key)}")
            if problem := _label_key_problem(key):
                raise _Invalid(where, f"invalid label key: {problem}")
            if not isinstance(val, str):
                raise _Invalid(where, f"expected a string label value, got {_show(val)}")
            if problem := _label_value_problem(val):
                raise _Invalid(where, f"invalid label value: {problem}")
            labels[key] = val
        return labels

    def json_schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": {"type": "string"}}

    def dump(self, value: Any) -> dict[str, str]:
        return dict(value)


class _ComponentLevels(_Kind):
    """`logging.components`: a log level per component (`pods`, `kube.client`, ...), as klog's
    `-vmodule` sets one file's verbosity; a component is the logger's name under `vk_provider.`."""

    def parse(self, value: Any, path: str) -> dict[str, str]:
        if not isinstance(value, Mapping):
            raise _Invalid(path, f"expected a mapping of components to log levels, got {_show(value)}")
        levels: dict[str, str] = {}
        for key, level in value.items():
            where = f"{path}[{json.dumps(str(key))}]"
            if not isinstance(key, str) or not _COMPONENT.fullmatch(key):
                raise _Invalid(where, f"expected a component such as pods or kube.client, got {_show(key)}")
            levels[key] = _LOG_LEVEL.parse(level, where)
        return levels

    def json_schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": _LOG_LEVEL.json_schema()}

    def dump(self, value: Any) -> dict[str, str]:
        return dict(value)


class _Section(_Kind):
    """A nested mapping that becomes a frozen dataclass; unknown keys are refused."""

    def __init__(
        self,
        cls: type[Any],
        fields: Iterable[tuple[str, str, _Kind]],
        check: Callable[[Any, str], None] | None = None,
    ) -> None:
        self.cls = cls
        self.fields = {key: (attr, kind) for key, attr, kind in fields}
        self.check = check
        self._required = {
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }

    def parse(self, value: Any, path: str) -> Any:
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise _Invalid(path, f"expected a mapping, got {_show(value)}")
        kwargs: dict[str, Any] = {}
        for key, item in value.items():
            if key not in self.fields:
                raise _unknown_key(path, key, self.fields)
            attr, kind = self.fields[key]
            kwargs[attr] = kind.parse(item, _join(path, key))
        for key, (attr, _) in self.fields.items():
            if attr not in kwargs and attr in self._required:
                raise _Invalid(_join(path, key), "is required")
        result = self.cls(**kwargs)
        if self.check:
            self.check(result, path)
        return result

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "additionalProperties": False,
            "properties": {key: kind.json_schema() for key, (_, kind) in self.fields.items()},
        }
        required = [key for key, (attr, _) in self.fields.items() if attr in self._required]
        if required:
            schema["required"] = required
        return schema

    def dump(self, value: Any) -> dict[str, Any]:
        return {key: kind.dump(getattr(value, attr)) for key, (attr, kind) in self.fields.items()}


class _List(_Kind):
    def __init__(self, item: _Section) -> None:
        self.item = item

    def parse(self, value: Any, path: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise _Invalid(path, f"expected a list, got {_show(value)}")
        return tuple(self.item.parse(v, f"{path}[{i}]") for i, v in enumerate(value))

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.json_schema()}

    def dump(self, value: Any) -> list[Any]:
        return [self.item.dump(v) for v in value]


# --- checks on single strings -------------------------------------------------------------------


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


class _PathList(_StrList):
    """One absolute path or a list of them (`network.cniBinDir`: a search path)."""

    def __init__(self) -> None:
        super().__init__(_Str(_absolute))

    def parse(self, value: Any, path: str) -> tuple[str, ...]:
        paths = super().parse([value] if isinstance(value, str) else value, path)
        if not paths:
            raise _Invalid(path, "expected at least one directory")
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
        raise _Invalid("network.plugin", reason)


def _check_tls(tls: KubeletTLS, path: str) -> None:
    if tls.mode == "files":
        for key, value in (("certFile", tls.cert_file), ("keyFile", tls.key_file)):
            if not value:
                raise _Invalid(_join(path, key), "is required when mode is 'files'")


def _check_server(server: KubeletServerConfig, path: str) -> None:
    if server.auth == "x509" and not server.client_ca_file:
        raise _Invalid(_join(path, "clientCAFile"), "is required when auth is 'x509'")
    port = server.healthz_listen.rpartition(":")[2]
    if server.healthz_listen and port != "0" and port == server.listen.rpartition(":")[2]:
        raise _Invalid(_join(path, "healthzListen"), f"port {port} is the kubelet API's (listen)")


# --- the table ----------------------------------------------------------------------------------

_TAINT = _Section(
    Taint,
    [
        ("key", "key", _Str(_label_key_problem)),
        ("value", "value", _Str(_label_value_problem)),
        ("effect", "effect", _Enum(TAINT_EFFECTS)),
    ],
)

_NODE_NAME = _Str(_dns_subdomain_problem)
_LOG_LEVEL = _Enum(LOG_LEVELS)
_COMPONENT = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*")
_LOG_FORMAT = _Enum(LOG_FORMATS)

_SCHEMA = _Section(
    Config,
    [
        (
            "node",
            "node",
            _Section(
                NodeConfig,
                [
                    ("name", "name", _NODE_NAME),
                    ("labels", "labels", _Labels()),
                    ("taints", "taints", _List(_TAINT)),
                    (
                        "capacity",
                        "capacity",
                        _Section(
                            NodeCapacity,
                            [
                                ("cpu", "cpu", _Quantity(allow_auto=True)),
                                ("memory", "memory", _Quantity(allow_auto=True)),
                                ("pods", "pods", _Quantity(allow_auto=False)),
                                ("ephemeral-storage", "ephemeral_storage", _Quantity(allow_auto=True)),
                            ],
                        ),
                    ),
                    ("providerID", "provider_id", _Str()),
                    ("internalIP", "internal_ip", _Str(_ip_problem)),
                    ("leaseDurationSeconds", "lease_duration_seconds", _PositiveInt()),
                    ("statusReportInterval", "status_report_interval", _Duration()),
                    ("cordonOnShutdown", "cordon_on_shutdown", _Bool()),
                ],
            ),
        ),
        (
            "kubernetes",
            "kubernetes",
            _Section(
                KubernetesConfig,
                [
                    ("kubeconfig", "kubeconfig", _Str()),
                    ("qps", "qps", _PositiveNumber()),
                    ("burst", "burst", _PositiveInt()),
                    ("credentials", "credentials", _Enum(CREDENTIALS_MODES)),
                    ("certificateDir", "certificate_dir", _Str(_absolute_or_empty)),
                ],
            ),
        ),
        (
            "docker",
            "docker",
            _Section(
                DockerConfig,
                [
                    ("host", "host", _Str(_docker_host_problem)),
                    ("engineLocation", "engine_location", _Enum(("auto", "local", "remote"))),
                    ("maxConcurrency", "max_concurrency", _PositiveInt()),
                    ("network", "network", _Str(_nonempty)),
                    ("sandboxImage", "sandbox_image", _Str(_nonempty)),
                    ("stateDir", "state_dir", _Str(_nonempty)),
                    ("seccompProfileRoot", "seccomp_profile_root", _Str(_absolute_or_empty)),
                    (
                        "allow",
                        "allow",
                        _Section(
                            DockerAllow,
                            [
                                ("privileged", "privileged", _Bool()),
                                ("hostPath", "host_path", _Bool()),
                                ("hostNetwork", "host_network", _Bool()),
                                ("hostPID", "host_pid", _Bool()),
                                ("hostIPC", "host_ipc", _Bool()),
                                ("capabilities", "capabilities", _StrList(_Str(_capability_problem))),
                                ("unsafeSysctls", "unsafe_sysctls", _StrList(_Str(sysctl_pattern_problem))),
                                ("unconfined", "unconfined", _Bool()),
                            ],
                        ),
                    ),
                ],
            ),
        ),
        (
            "pods",
            "pods",
            _Section(
                PodsConfig,
                [
                    ("maxConcurrentSyncs", "max_concurrent_syncs", _PositiveInt()),
                    ("resyncInterval", "resync_interval", _Duration()),
                    ("clusterDNS", "cluster_dns", _StrList(_Str(_cluster_dns_problem))),
                    ("clusterDomain", "cluster_domain", _Str(_cluster_domain_problem)),
                    ("resolvConf", "resolv_conf", _Str(_absolute_or_empty)),
                ],
            ),
        ),
        (
            "network",
            "network",
            _Section(
                NetworkConfig,
                [
                    ("plugin", "plugin", _Enum(("docker", "cni"))),
                    ("cniConfDir", "cni_conf_dir", _Str(_absolute)),
                    ("cniBinDir", "cni_bin_dir", _PathList()),
                    ("cniTimeout", "cni_timeout", _Duration()),
                ],
            ),
        ),
        (
            "staticPods",
            "static_pods",
            _Section(
                StaticPodsConfig,
                [("path", "path", _Str()), ("relistInterval", "relist_interval", _Duration())],
            ),
        ),
        (
            "kubeletServer",
            "kubelet_server",
            _Section(
                KubeletServerConfig,
                [
                    ("listen", "listen", _Str(_listen_problem, pattern=":[0-9]{1,5}$")),
                    (
                        "tls",
                        "tls",
                        _Section(
                            KubeletTLS,
                            [
                                ("mode", "mode", _Enum(TLS_MODES)),
                                ("certFile", "cert_file", _Str()),
                                ("keyFile", "key_file", _Str()),
                            ],
                            _check_tls,
                        ),
                    ),
                    ("clientCAFile", "client_ca_file", _Str()),
                    ("auth", "auth", _Enum(AUTH_MODES)),
                    (
                        "healthzListen",
                        "healthz_listen",
                        _Str(_optional_listen_problem, pattern="^$|:[0-9]{1,5}$"),
                    ),
                    ("enableSystemLogHandler", "enable_system_log_handler", _Bool()),
                    ("enableSystemLogQuery", "enable_system_log_query", _Bool()),
                    ("systemLogDir", "system_log_dir", _Str(_absolute)),
                ],
                _check_server,
            ),
        ),
        ("status", "status", _Section(StatusConfig, [("syncPeriod", "sync_period", _Duration())])),
        (
            "logging",
            "logging",
            _Section(
                LoggingConfig,
                [
                    ("level", "level", _LOG_LEVEL),
                    ("format", "format", _LOG_FORMAT),
                    ("components", "components", _ComponentLevels()),
                ],
            ),
        ),
        ("metrics", "metrics", _Section(MetricsConfig, [("enabled", "enabled", _Bool())])),
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
            shown = f" {key!r}" if isinstance(key, str) and _SHOWN_KEY.fullmatch(key) else ""
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
        reason = f"expected a mapping of sections at the top level, got {_type_of(data)}"
        raise ConfigError(source, "", reason)
    try:
        config: Config = _SCHEMA.parse(data, "")
    except _Invalid as exc:
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
    except _Invalid as exc:
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
