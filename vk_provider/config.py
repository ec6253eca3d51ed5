"""The provider's configuration: typed dataclasses with their defaults.

What lives here: the shape of the configuration file (docs/configuration.md, config.example.yaml) as
frozen dataclasses,
every field with its default. Durations are held as float seconds and quantities as
their strings as written. Loading, strict validation and the CLI overrides are in
`vk_provider.config_load`; an empty `kubeconfig`, `docker.host` or `node.internalIP` means
"fall back to the environment" and is resolved where it is used. Must not: touch the
network, Docker or the filesystem.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vk_common.vocabulary import PROVIDER_TAINT_EFFECT, PROVIDER_TAINT_KEY


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str = ""


DEFAULT_TAINT = Taint(key=PROVIDER_TAINT_KEY, value="docker", effect=PROVIDER_TAINT_EFFECT)


@dataclass(frozen=True)
class NodeCapacity:
    """Each value is a Kubernetes quantity, or `auto` to take it from Docker's info."""

    cpu: str = "auto"
    memory: str = "auto"
    pods: str = "110"
    ephemeral_storage: str = "auto"


@dataclass(frozen=True)
class NodeConfig:
    name: str = "vk-docker"
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = (DEFAULT_TAINT,)
    capacity: NodeCapacity = field(default_factory=NodeCapacity)
    provider_id: str = ""  # empty: docker://<name>
    internal_ip: str = ""  # empty: $NODE_IP, then $POD_IP, then detected
    lease_duration_seconds: int = 40
    status_report_interval: float = 300.0
    cordon_on_shutdown: bool = False


@dataclass(frozen=True)
class KubernetesConfig:
    kubeconfig: str = ""  # empty: $KUBECONFIG, then in-cluster
    qps: float = 50.0
    burst: int = 100
    # serviceAccount: the kubeconfig's (or in-cluster) credentials for every call; node: those
    # only bootstrap a `system:node:<name>` client certificate (docs/credentials.md).
    credentials: str = "serviceAccount"
    certificate_dir: str = ""  # empty: <docker.stateDir>/pki


@dataclass(frozen=True)
class DockerAllow:
    privileged: bool = False
    host_path: bool = False
    host_network: bool = False
    host_pid: bool = False
    host_ipc: bool = False
    capabilities: tuple[str, ...] = ()
    # Sysctls (or `prefix*` patterns) allowed besides the kubelet's safe ones (--allowed-unsafe-sysctls).
    unsafe_sysctls: tuple[str, ...] = ()
    # Unconfined seccomp / AppArmor profiles and procMount Unmasked (Docker's systempaths=unconfined).
    unconfined: bool = False


@dataclass(frozen=True)
class DockerConfig:
    engine: str = "docker"  # docker | podman (its API service): which engine answers on `host`
    host: str = ""  # empty: $DOCKER_HOST, then the local socket
    engine_location: str = "auto"  # auto | local | remote: does the engine see our filesystem?
    max_concurrency: int = 8
    network: str = "bridge"
    sandbox_image: str = "registry.k8s.io/pause:3.10"
    state_dir: str = "/var/lib/vk-provider"  # per-node files the engine bind-mounts (termination messages)
    # Where Localhost seccomp profiles are read (the kubelet's <root-dir>/seccomp); empty: refused.
    seccomp_profile_root: str = ""
    allow: DockerAllow = field(default_factory=DockerAllow)
    # RuntimeClass handler -> the engine's runtime (`docker info` Runtimes) that runs its pods;
    # the handler "" (no runtimeClassName) is always the engine's default runtime.
    runtimes: dict[str, str] = field(default_factory=lambda: {"runc": "runc"})
    # A cgroup per pod under <cgroupRoot>/<node> (the kubelet's cgroupsPerQOS), where the engine
    # is local and the provider may write the host's cgroups (else off, with a warning at start).
    pod_cgroups: bool = True
    cgroup_root: str = "/vk-provider"


@dataclass(frozen=True)
class PodsConfig:
    max_concurrent_syncs: int = 16
    resync_interval: float = 60.0
    cluster_dns: tuple[str, ...] = ()  # the kubelet's clusterDNS; empty: ClusterFirst falls back to Default
    cluster_domain: str = "cluster.local"  # the kubelet's clusterDomain; "": no cluster search domains
    resolv_conf: str = "/etc/resolv.conf"  # the kubelet's resolvConf; "": none (no host resolver)


@dataclass(frozen=True)
class NetworkConfig:
    plugin: str = "docker"  # docker (the engine's networks) | cni (plugins on a sandbox with no network)
    cni_conf_dir: str = "/etc/cni/net.d"  # the kubelet's --cni-conf-dir
    cni_bin_dir: tuple[str, ...] = ("/opt/cni/bin",)  # the kubelet's --cni-bin-dir (a search path)
    cni_timeout: float = 120.0  # one plugin run (ADD, CHECK, DEL) at most this long


@dataclass(frozen=True)
class StaticPodsConfig:
    path: str = ""  # empty: static pods are off
    relist_interval: float = 20.0


@dataclass(frozen=True)
class KubeletTLS:
    mode: str = "selfSigned"  # files | selfSigned | csr
    cert_file: str = ""
    key_file: str = ""


@dataclass(frozen=True)
class KubeletServerConfig:
    listen: str = "0.0.0.0:10250"
    tls: KubeletTLS = field(default_factory=KubeletTLS)
    client_ca_file: str = ""
    auth: str = "webhook"  # webhook | x509 | none
    healthz_listen: str = ""  # host:port of the plain-HTTP /healthz; "" for none
    # /logs/ (kubeletapi/node_logs.py), the kubelet's switches and defaults: the log directory as
    # files, and the node log query (this provider's own lines, journald units) when enabled.
    enable_system_log_handler: bool = True
    enable_system_log_query: bool = False
    system_log_dir: str = "/var/log"


@dataclass(frozen=True)
class StatusConfig:
    sync_period: float = 10.0


@dataclass(frozen=True)
class LoggingConfig:
    level: str = "info"
    format: str = "text"  # text | json
    components: dict[str, str] = field(default_factory=dict)  # component -> level (`pods: debug`)


@dataclass(frozen=True)
class MetricsConfig:
    enabled: bool = True


@dataclass(frozen=True)
class Config:
    node: NodeConfig = field(default_factory=NodeConfig)
    kubernetes: KubernetesConfig = field(default_factory=KubernetesConfig)
    docker: DockerConfig = field(default_factory=DockerConfig)
    pods: PodsConfig = field(default_factory=PodsConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    static_pods: StaticPodsConfig = field(default_factory=StaticPodsConfig)
    kubelet_server: KubeletServerConfig = field(default_factory=KubeletServerConfig)
    status: StatusConfig = field(default_factory=StatusConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
