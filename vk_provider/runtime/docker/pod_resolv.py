"""The pod's own resolv.conf where Docker would answer with its embedded resolver.

On a user-defined network (the node's pod network, or a `docker.network` other than the
default bridge) Docker writes `nameserver 127.0.0.11` into the sandbox's resolv.conf and
forwards from there; a pod must see the nameservers the kubelet's rules gave it (the cluster
DNS), so the file is written here, `<state>/<node>/<uid>/resolv.conf`, and bind-mounted over
each container's /etc/resolv.conf, as dockershim rewrote the sandbox's file
(pkg/kubelet/dockershim/docker_sandbox.go rewriteResolvFile, k8s.io/kubernetes@v1.23.17).
What lives here: `write_resolv_file` (blocking: in the engine's pool) and `resolv_file`.
Not written: on the default bridge (Docker copies the `dns*` options into the file itself),
for a configuration that is None (the engine's copy of its host's file: `kuberuntime/dns.py`)
or empty (dockershim left the file alone too), or for a remote engine (no pod directory).
Must not: decide the DNS rules (kuberuntime/dns.py does) or write outside the pod directory.
"""

from __future__ import annotations

from pathlib import Path

from vk_common import guarded_paths as paths
from vk_provider.runtime.configs import ResolvConf

RESOLV_FILE = "resolv.conf"
ENGINE_RESOLVED_NETWORKS = ("bridge", "default", "host")


def write_resolv_file(pod_dir: Path | None, dns: ResolvConf | None, network: str) -> None:
    """Write the pod's file for a sandbox on `network`, or remove one an earlier sandbox of the
    pod left when this one does not need it."""
    if pod_dir is None:
        return
    path = pod_dir / RESOLV_FILE
    text = resolv_conf_text(dns) if dns is not None and network not in ENGINE_RESOLVED_NETWORKS else ""
    if not text:
        path.unlink(missing_ok=True)
        return
    paths.make_private_dirs(pod_dir)
    path.write_text(text)
    path.chmod(0o644)


def resolv_file(pod_dir: Path | None) -> str | None:
    """The pod's file to mount over a container's /etc/resolv.conf (None: Docker's own)."""
    if pod_dir is None:
        return None
    path = pod_dir / RESOLV_FILE
    return str(path) if path.is_file() else None


def resolv_conf_text(config: ResolvConf) -> str:
    """The pod's resolv.conf file, as dockershim wrote it over the sandbox's for a network the
    engine would otherwise answer through its own resolver (docker_sandbox.go rewriteResolvFile,
    k8s.io/kubernetes@v1.23: nameserver lines, one search line, one options line)."""
    lines = [f"nameserver {s}" for s in config.servers]
    if config.searches:
        lines.append("search " + " ".join(config.searches))
    if config.options:
        lines.append("options " + " ".join(config.options))
    return "".join(f"{line}\n" for line in lines)
