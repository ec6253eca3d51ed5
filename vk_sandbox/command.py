"""The `vk-provider sandbox` subcommand: a local control plane plus N providers, on one machine.

What lives here: `add_parser(subparsers)` (returns the parser), `run_sandbox(args) -> int`
(the handler `cli.py` calls), `serve(args) -> int` (the same, as a coroutine), and
`provider_config(...)`, which turns the user's `--config` file into one provider config per
sandbox node. The control plane is the emulator (`--control-plane emulator`, the default) or the
real upstream components (`--control-plane real`, `sandbox/real/`); either listens on 127.0.0.1
only and writes `<state-dir>/kubeconfig`. The providers run as
`python -m vk_cli run --config <state-dir>/providers/<node>.yaml` subprocesses; on the real
control plane each has a kubeconfig of its own with the identity `--provider-identity` names.
Ctrl-C or SIGTERM stops the providers, then the control plane; `--clean` then runs
`python -m vk_cli clean --config <state-dir>/providers/<node>.yaml` for each node, which
removes the containers, volumes and files of the node's pods through the provider's runtime.
Must not: import the provider's internals; the sandbox meets the provider only through the
command line, its config file and HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import ipaddress
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from vk_common.logging import ObjectRef, get_logger, setup_logging
from vk_common.ports import free_port
from vk_sandbox.kubeconfig import Credentials
from vk_sandbox.pki.authority import SandboxPKI

if TYPE_CHECKING:
    from vk_sandbox.real.node_cni import NodeCNIConfigs

log = get_logger("sandbox")

DEFAULT_STATE_DIR = ".sandbox"
NODE_PREFIX = "sandbox-"
PROVIDER_STOP_SECONDS = 40.0


class SandboxUsageError(Exception):
    """A bad flag or --config file; reported on one line with exit code 2."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `sandbox` subcommand to `subparsers` (argparse's _SubParsersAction)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sandbox",
        help="run a local Kubernetes control plane with virtual Docker nodes (no cluster needed)",
        description=(
            "Start the embedded control plane on 127.0.0.1, write STATE_DIR/kubeconfig and run one "
            "provider per virtual node (sandbox-1, sandbox-2, ...) against the local Docker engine."
        ),
    )
    parser.add_argument(
        "--state-dir",
        default=DEFAULT_STATE_DIR,
        metavar="DIR",
        help="kubeconfig, certificates, stored objects and provider configs (default: ./.sandbox)",
    )
    parser.add_argument(
        "--port", type=int, default=0, metavar="N", help="API port on 127.0.0.1 (default: any free)"
    )
    parser.add_argument(
        "--nodes", type=int, default=1, metavar="N", help="number of virtual nodes (default: 1)"
    )
    parser.add_argument(
        "--config", metavar="FILE", help="provider configuration (YAML) applied to every sandbox node"
    )
    parser.add_argument(
        "--node-prefix",
        default=NODE_PREFIX,
        metavar="PREFIX",
        help="node names are PREFIX1, PREFIX2, ... (default: sandbox-)",
    )
    parser.add_argument(
        "--control-plane",
        choices=("emulator", "real"),
        default="emulator",
        help="emulator: the embedded API server (starts in a second); real: the upstream kube-apiserver, "
        "controller manager, scheduler and etcd built by scripts/ensure-kube.sh (default: emulator)",
    )
    parser.add_argument(
        "--kube-bin",
        metavar="DIR",
        help="with --control-plane real: the directory holding etcd, kube-apiserver, "
        "kube-controller-manager and kube-scheduler (default: the scripts/ensure-kube.sh cache)",
    )
    parser.add_argument(
        "--provider-identity",
        choices=("auto", "chart", "node"),
        default="auto",
        help="with --control-plane real: the providers' credentials. chart: a service account with the "
        "Helm chart's RBAC rules; node: a kubelet's certificate (system:node:<name>) under the Node "
        "authorizer; auto: chart when the chart and helm are at hand, else node (default: auto)",
    )
    parser.add_argument(
        "--apiserver-address",
        metavar="IP",
        help="with --control-plane real: also serve the API on IP (the apiserver listens on every "
        "address and its certificate names IP), e.g. the Docker bridge's gateway, so that the "
        "provider of a Helm chart running in a container reaches it (default: 127.0.0.1 only)",
    )
    parser.add_argument(
        "--node-address",
        metavar="IP",
        default="127.0.0.1",
        help="the nodes' InternalIP, where their kubelet API listens and the apiserver dials it; the "
        "real apiserver refuses to proxy to a loopback address (nodes/proxy), so give a host address "
        "such as the Docker bridge's gateway when that matters (default: 127.0.0.1)",
    )
    parser.add_argument(
        "--kubelet-port",
        type=int,
        default=0,
        metavar="N",
        help="the first node's kubelet API port, N+1 the second's...; the upstream e2e framework "
        "reaches a node's kubelet through nodes/proxy on the kubelet's default port 10250 "
        "(default: a free port per node)",
    )
    parser.add_argument(
        "--cluster-network",
        action="store_true",
        help="with --control-plane real: a cluster, not only a control plane: node CIDRs, kube-proxy "
        "on this host and CoreDNS behind kube-dns, the providers' clusterDNS pointing at it (root; "
        "one per host; docs/networking.md)",
    )
    parser.add_argument(
        "--pod-network",
        choices=("docker", "cni"),
        default="docker",
        help="with --cluster-network: the nodes' pod networking: docker (a Docker network per node "
        "on its podCIDR) or cni (a bridge conflist per node the sandbox writes once the node has "
        "its podCIDR, Debian's plugins; docs/networking.md) (default: docker)",
    )
    parser.add_argument(
        "--coredns-image",
        metavar="IMAGE",
        help="with --cluster-network: the CoreDNS image (default: what scripts/ensure-coredns.sh builds)",
    )
    parser.add_argument("--no-provider", action="store_true", help="run the control plane alone")
    parser.add_argument(
        "--clean",
        action="store_true",
        help="on exit, remove the containers, volumes and files of the sandbox nodes' pods",
    )
    parser.add_argument(
        "--node-grace-seconds",
        type=float,
        default=50.0,
        metavar="S",
        help="node monitor grace period before a silent node goes Ready=Unknown (default: 50)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="enable fault injection and request counters (/debug/sandbox/...)",
    )
    parser.add_argument("--log-level", default="info", metavar="LEVEL", help="debug, info, warning or error")
    return parser


def run_sandbox(args: argparse.Namespace) -> int:
    """Handler for `vk-provider sandbox`: runs until Ctrl-C or SIGTERM; returns the exit code."""
    setup_logging(args.log_level, "text")
    return asyncio.run(serve(args))


def node_names(count: int, prefix: str = NODE_PREFIX) -> list[str]:
    return [f"{prefix}{i}" for i in range(1, count + 1)]


def load_user_config(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SandboxUsageError(f"--config {path}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SandboxUsageError(f"--config {path}: the top level must be a mapping")
    return data


def _section(config: dict[str, Any], key: str) -> dict[str, Any]:
    section = config.get(key)
    if section is None:
        section = config[key] = {}
    if not isinstance(section, dict):
        raise SandboxUsageError(f"--config: {key} must be a mapping")
    return section


def provider_config(
    user: dict[str, Any],
    *,
    node: str,
    kubeconfig: Path,
    listen_port: int,
    ca_file: Path,
    state_dir: Path,
    kubelet_auth: str = "x509",
    node_address: str = "127.0.0.1",
) -> dict[str, Any]:
    """The user's config with what the sandbox decides filled in (camelCase keys as in
    config.example.yaml): the node name, the API connection, the kubelet address that the
    apiserver dials, and the sandbox CA as the kubelet's client CA. `kubelet_auth` is the
    kubelet API's auth unless the user chose one: x509 on the emulator (it serves no
    TokenReview), webhook on the real control plane (as a kubelet)."""
    config = copy.deepcopy(user)
    node_section = _section(config, "node")
    node_section["name"] = node
    node_section["internalIP"] = node_address  # the proxy dials the node's InternalIP
    _section(config, "kubernetes")["kubeconfig"] = str(kubeconfig)
    server = _section(config, "kubeletServer")
    host = f"[{node_address}]" if ":" in node_address else node_address
    server["listen"] = f"{host}:{listen_port}"
    server["clientCAFile"] = str(ca_file)
    server.setdefault("auth", kubelet_auth)
    # Per-container files live with the sandbox's other files unless the user says otherwise.
    _section(config, "docker").setdefault("stateDir", str(state_dir / "docker"))
    return config


class _Providers:
    """The provider subprocesses, one per sandbox node."""

    def __init__(self) -> None:
        self.procs: dict[str, asyncio.subprocess.Process] = {}
        self.configs: dict[str, Path] = {}

    async def start(self, node: str, config_path: Path) -> None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "vk_cli", "run", "--config", str(config_path)
        )
        self.procs[node] = proc
        self.configs[node] = config_path
        log.info("started provider", extra={"node": node, "pid": proc.pid})

    async def stop(self) -> None:
        for node, proc in self.procs.items():
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
                log.info("stopping provider", extra={"node": node})
        for node, proc in self.procs.items():
            try:
                await asyncio.wait_for(proc.wait(), PROVIDER_STOP_SECONDS)
            except TimeoutError:
                log.warning("provider did not stop in time; killing it", extra={"node": node})
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()

    async def clean(self) -> bool:
        """Remove what each node's pods left in the engine, through `vk-provider clean` (the
        provider's own runtime: the sandbox knows nothing of the engine). True when all went."""
        ok = True
        for node, config_path in self.configs.items():
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "vk_cli", "clean", "--config", str(config_path)
            )
            if await proc.wait() != 0:
                log.error("could not remove the pods of the node from the engine", extra={"node": node})
                ok = False
        return ok

    async def watch_exits(self) -> None:
        """Report providers that exit on their own (the control plane keeps running)."""

        async def one(node: str, proc: asyncio.subprocess.Process) -> None:
            code = await proc.wait()
            log.warning("provider exited", extra={"node": node, "exitCode": code})

        await asyncio.gather(*(one(n, p) for n, p in self.procs.items()))


def _prepare(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """Check the flags, create the state directory, read --config (blocking)."""
    if args.nodes < 1 and not args.no_provider:
        raise SandboxUsageError("--nodes must be at least 1")
    if args.apiserver_address is not None:
        if args.control_plane != "real":
            raise SandboxUsageError("--apiserver-address needs --control-plane real")
        try:
            ipaddress.ip_address(args.apiserver_address)
        except ValueError:
            shown = repr(args.apiserver_address)
            raise SandboxUsageError(f"--apiserver-address: not an IP address: {shown}") from None
    if args.cluster_network and args.control_plane != "real":
        raise SandboxUsageError("--cluster-network needs --control-plane real")
    if args.pod_network == "cni" and not args.cluster_network:
        raise SandboxUsageError("--pod-network cni needs --cluster-network")
    if not 0 <= args.kubelet_port <= 65535 - max(args.nodes - 1, 0):
        raise SandboxUsageError(f"--kubelet-port: not a port for {args.nodes} node(s): {args.kubelet_port}")
    try:
        ipaddress.ip_address(args.node_address)
    except ValueError:
        raise SandboxUsageError(f"--node-address: not an IP address: {args.node_address!r}") from None
    user_config = load_user_config(args.config)
    if args.cluster_network:
        from vk_sandbox.real.coredns import with_cluster_dns

        user_config = with_cluster_dns(user_config)
    state_dir = Path(args.state_dir).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    return state_dir, user_config


def write_provider_configs(
    state_dir: Path,
    user_config: dict[str, Any],
    kubeconfigs: dict[str, Path],
    ca_file: Path,
    kubelet_auth: str = "x509",
    node_address: str = "127.0.0.1",
    kubelet_port: int = 0,
    network_of: Callable[[str], dict[str, Any]] | None = None,
) -> list[Path]:
    """Write `<state_dir>/providers/<node>.yaml` for each node of `kubeconfigs` (blocking);
    returns the paths. The kubelet API of node i listens on `kubelet_port + i - 1`, or on a
    free port when `kubelet_port` is 0; `network_of(node)` is the node's `network` section."""
    config_dir = state_dir / "providers"
    config_dir.mkdir(exist_ok=True)
    paths = []
    for index, (node, kubeconfig) in enumerate(kubeconfigs.items()):
        config = provider_config(
            user_config,
            node=node,
            kubeconfig=kubeconfig,
            listen_port=kubelet_port + index if kubelet_port else free_port(node_address),
            ca_file=ca_file,
            state_dir=state_dir,
            kubelet_auth=kubelet_auth,
            node_address=node_address,
        )
        if network_of is not None:
            config["network"] = network_of(node)
        path = config_dir / f"{node}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        paths.append(path)
    return paths


def _banner(url: str, kubeconfig: Path, nodes: list[str]) -> str:
    lines = [
        f"vk-provider sandbox: API server at {url}",
        f"  kubeconfig: {kubeconfig}",
        "  point kubectl at it:",
        f"    export KUBECONFIG={kubeconfig}",
        "    kubectl get nodes",
    ]
    if nodes:
        lines.append(f"  nodes: {', '.join(nodes)}")
    else:
        lines.append("  no providers started (--no-provider)")
    lines.append("  stop with Ctrl-C")
    return "\n".join(lines)


class ControlPlane(Protocol):
    """What the command needs of the emulator (`SandboxServer`) and of `RealControlPlane`."""

    @property
    def pki(self) -> SandboxPKI: ...

    @property
    def url(self) -> str: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def write_kubeconfig(self, path: Path) -> Path: ...


def _control_plane(args: argparse.Namespace, state_dir: Path) -> ControlPlane:
    if args.control_plane == "real":
        from vk_sandbox.real.cluster import RealControlPlane
        from vk_sandbox.real.coredns import default_coredns_image

        coredns_image = args.coredns_image or (default_coredns_image() if args.cluster_network else None)
        return RealControlPlane(
            state_dir=state_dir,
            port=args.port,
            kube_bin=Path(args.kube_bin) if args.kube_bin else None,
            node_monitor_grace_seconds=args.node_grace_seconds,
            extra_address=args.apiserver_address,
            cluster=args.cluster_network,
            coredns_image=coredns_image,
        )
    from vk_sandbox.server import SandboxServer

    return SandboxServer(
        host="127.0.0.1",
        port=args.port,
        state_dir=state_dir,
        node_monitor_grace_seconds=args.node_grace_seconds,
        debug=args.debug,
    )


def _node_cni(
    args: argparse.Namespace, plane: ControlPlane, state_dir: Path, nodes: list[str]
) -> NodeCNIConfigs | None:
    """The writer of the nodes' CNI configurations with `--pod-network cni`, else None."""
    if args.pod_network != "cni" or not nodes:
        return None
    from vk_sandbox.real.cluster import RealControlPlane
    from vk_sandbox.real.node_cni import NodeCNIConfigs

    assert isinstance(plane, RealControlPlane) and plane.admin is not None  # --cluster-network
    return NodeCNIConfigs(plane.admin, state_dir, nodes)


async def _real_provider_kubeconfigs(
    args: argparse.Namespace, plane: ControlPlane, state_dir: Path, nodes: list[str], user: dict[str, Any]
) -> dict[str, Path]:
    """One kubeconfig per node with the identity --provider-identity asks for (real control plane)."""
    from vk_sandbox.real import identities
    from vk_sandbox.real.cluster import RealControlPlane

    assert isinstance(plane, RealControlPlane) and plane.admin is not None
    config_dir = state_dir / "providers"
    config_dir.mkdir(exist_ok=True)
    tools = identities.find_chart_tools()
    identity = args.provider_identity
    if identity == "auto":
        identity = "chart" if tools is not None else "node"
    if identity == "node":
        log.info("providers run as kubelets: system:node:<name> under the Node authorizer")
        return {
            node: plane.write_kubeconfig(
                config_dir / f"{node}.kubeconfig", identities.node_identity(plane.pki, node)
            )
            for node in nodes
        }
    if tools is None:
        raise SandboxUsageError(
            "--provider-identity chart needs charts/vk-provider of a source checkout and helm "
            "(on PATH or next to this Python); use --provider-identity node"
        )
    objects = await asyncio.to_thread(identities.render_chart_rbac, tools, identities.chart_values(user))
    credentials: Credentials = await identities.chart_identity(plane.admin, objects, plane.pki.ca_cert_path)
    log.info(
        "providers run as a service account with the chart's RBAC rules",
        extra={
            "serviceAccount": ObjectRef(
                next(o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"),
                identities.CHART_NAMESPACE,
            ),
            "chart": str(tools.chart),
        },
    )
    path = plane.write_kubeconfig(config_dir / "chart-identity.kubeconfig", credentials)
    return dict.fromkeys(nodes, path)


async def serve(args: argparse.Namespace) -> int:
    """Run the sandbox until SIGINT/SIGTERM. 0 on a clean stop, 1 if it cannot start (or --clean
    could not remove a node's pods), 2 on bad usage."""
    from vk_sandbox.real.admin import ApiError
    from vk_sandbox.real.cluster import ControlPlaneError
    from vk_sandbox.real.identities import IdentityError

    try:
        state_dir, user_config = await asyncio.to_thread(_prepare, args)
    except SandboxUsageError as exc:
        print(f"vk-provider sandbox: {exc}", file=sys.stderr)
        return 2

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)

    plane = _control_plane(args, state_dir)
    try:
        await plane.start()
    except (OSError, ControlPlaneError) as exc:
        print(f"vk-provider sandbox: cannot start the API server: {exc}", file=sys.stderr)
        await plane.stop()
        return 1
    kubeconfig = plane.write_kubeconfig(state_dir / "kubeconfig")
    nodes = [] if args.no_provider else node_names(args.nodes, args.node_prefix)
    providers = _Providers()
    node_cni = _node_cni(args, plane, state_dir, nodes)
    watcher: asyncio.Task[None] | None = None
    code = 0
    try:
        if nodes:
            real = args.control_plane == "real"
            kubeconfigs = (
                await _real_provider_kubeconfigs(args, plane, state_dir, nodes, user_config)
                if real
                else dict.fromkeys(nodes, kubeconfig)
            )
            paths = await asyncio.to_thread(
                write_provider_configs,
                state_dir,
                user_config,
                kubeconfigs,
                plane.pki.ca_cert_path,
                "webhook" if real else "x509",
                args.node_address,
                args.kubelet_port,
                None if node_cni is None else node_cni.network_of,
            )
            for node, path in zip(nodes, paths, strict=True):
                await providers.start(node, path)
            if node_cni is not None:
                node_cni.start()
            watcher = asyncio.create_task(providers.watch_exits())
        print(_banner(plane.url, kubeconfig, nodes), flush=True)
        await stopping.wait()
        log.info("stopping the sandbox")
    except SandboxUsageError as exc:
        print(f"vk-provider sandbox: {exc}", file=sys.stderr)
        code = 2
    except (IdentityError, ApiError) as exc:
        print(f"vk-provider sandbox: cannot set up the providers' credentials: {exc}", file=sys.stderr)
        code = 1
    finally:
        if watcher is not None:
            watcher.cancel()
        await providers.stop()
        await plane.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    clean = not args.clean or await providers.clean()
    if node_cni is not None:
        await node_cni.stop()  # the bridges, once the pods' networks were torn down
    return code if clean else 1
