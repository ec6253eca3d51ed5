"""The node's directory on the engine's host, `<stateDir>/<node>`: each pod's files under `<uid>/`.

What lives here: `PodDirs(root)`, whose methods are blocking (the runtime calls them through the
engine's pool): `prepare` (the directory 0700, a log line saying whether the pods' files are in
memory or on disk, and the subPath bind-mount probe), `pod_dir`, `volumes_root`,
`termination_file` (the kubelet's termination-log file of one container instance), `hosts_file`
(the kubelet-managed /etc/hosts), `drop_container_dir`, `pod_uids` (the kubelet's
listPodsFromDisk), `clean_subpaths` and `drop_pod_dir`. Only a local engine has one: its
containers bind these files.
Must not: call the engine; build a path from a UID or name that is not one plain name (it
raises or logs `paths.UnsafePathError`); remove anything outside `root`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from vk_common import guarded_paths as paths
from vk_common.logging import get_logger, pod_fields
from vk_provider.runtime import subpath_mounts
from vk_provider.runtime.configs import PodMetadata
from vk_provider.runtime.docker import labels as lb

log = get_logger("runtime.docker")


class PodDirs:
    def __init__(self, root: Path) -> None:
        self.root = root

    def prepare(self) -> str | None:
        """Make the node's directory 0700 (nobody else on the host reaches the pods' files) and
        log whether those files (secrets, tokens) are in memory or on disk; then probe whether
        sub-paths can be bind-mounted here: None if they can, else why not."""
        try:
            paths.make_private_dir(self.root)
            real = os.path.realpath(self.root)
            point, fstype = paths.mount_of(real, paths.read_mountinfo())
        except OSError as exc:
            log.warning("cannot prepare the state directory", extra={"path": str(self.root), "err": str(exc)})
            return f"the state directory {self.root} cannot be prepared: {exc}"
        refusal = self._probe_subpath_mounts()
        if fstype == "tmpfs":
            log.info(
                "pod volume files (secrets, tokens) are in memory",
                extra={"path": str(real), "tmpfs": str(point)},
            )
        else:
            log.info(
                "pod volume files (secrets, tokens) are on disk, readable by root only;"
                " mount a tmpfs there to keep them in memory (docs/security.md)",
                extra={
                    "path": str(real),
                    "fstype": fstype or "unknown filesystem",
                    "mountPoint": str(point or "?"),
                },
            )
        return refusal

    def _probe_subpath_mounts(self) -> str | None:
        try:
            refusal = subpath_mounts.probe_bind_mounts(self.root)
        except (OSError, paths.UnsafePathError) as exc:
            refusal = f"the bind-mount probe under {self.root} failed: {exc}"
        if refusal is None:
            log.info("subPath mounts are checked and bind-mounted", extra={"path": str(self.root)})
        else:
            log.warning(
                "subPath on emptyDir and hostPath volumes is refused (docs/security.md)",
                extra={"reason": refusal},
            )
        return refusal

    def pod_dir(self, uid: str) -> Path:
        """`<root>/<uid>`; raises paths.UnsafePathError unless the UID is one plain name."""
        if not paths.is_safe_name(uid):
            raise paths.UnsafePathError(f"pod UID {uid!r} cannot be a directory name")
        return self.root / uid

    def volumes_root(self, uid: str) -> Path:
        """Where the pod's API-backed volumes live: `<root>/<uid>/volumes/<name>`."""
        return self.pod_dir(uid) / "volumes"

    def termination_file(self, pod: PodMetadata, name: str, attempt: int) -> str | None:
        """Create the empty termination-message file bind-mounted into this container instance."""
        try:
            pod_dir = self.pod_dir(pod.uid)
            if not paths.is_safe_name(name):
                raise paths.UnsafePathError(f"container name {name!r} cannot be a directory name")
            path = pod_dir / f"{name}_{attempt}" / "termination-log"
            paths.make_private_dirs(pod_dir)
            path.parent.mkdir(exist_ok=True)
            path.touch()
            # Writable by any user of the container, whatever the umask: the kubelet chmods
            # it 0666 (pkg/kubelet/kuberuntime/kuberuntime_container.go, makeMounts).
            path.chmod(0o666)
        except (OSError, paths.UnsafePathError) as exc:
            log.warning(
                "no termination message file", extra=pod_fields(pod.as_object(), container=name, err=str(exc))
            )
            return None
        return str(path)

    def hosts_file(self, pod: PodMetadata, content: str) -> str | None:
        """Write the pod's kubelet-managed /etc/hosts, `<root>/<uid>/etc-hosts` (kubelet:
        makeHostsMount), with the content the kuberuntime layer made."""
        try:
            pod_dir = self.pod_dir(pod.uid)
            paths.make_private_dirs(pod_dir)
            path = pod_dir / "etc-hosts"
            path.write_text(content)
            path.chmod(0o644)
        except (OSError, paths.UnsafePathError) as exc:
            log.warning("no managed /etc/hosts", extra=pod_fields(pod.as_object(), err=str(exc)))
            return None
        return str(path)

    def drop_container_dir(self, uid: str, labels: Mapping[str, str]) -> None:
        """Remove the directory of a removed container instance's termination-log file."""
        path = labels.get(lb.TERMINATION_MESSAGE_FILE)
        if not path:
            return
        try:
            paths.remove_under(self.pod_dir(uid), Path(path).parent)
        except paths.UnsafePathError as exc:
            log.error("unsafe path not removed", extra={"uid": uid, "err": str(exc)})
        except OSError as exc:
            log.warning(
                "cannot remove a directory",
                extra={"uid": uid, "path": str(Path(path).parent), "err": str(exc)},
            )

    def pod_uids(self) -> set[str]:
        """The pod directories under the node's directory (`<root>/<uid>`)."""
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return set()
        return {e.name for e in entries if e.is_dir(follow_symlinks=False) and paths.is_safe_name(e.name)}

    def clean_subpaths(self, uid: str) -> None:
        """Detach the pod's sub-path mounts (the kubelet's CleanSubPaths); a pod left by a
        killed provider is cleaned the same way when it is found orphaned."""
        try:
            subpath_mounts.clean_subpaths(self.pod_dir(uid))
        except (OSError, paths.UnsafePathError) as exc:
            log.error("cannot detach the subPath mounts of a pod", extra={"uid": uid, "err": str(exc)})

    def drop_pod_dir(self, uid: str) -> None:
        """Remove the pod's directory, then the node's once it is empty."""
        try:
            paths.remove_under(self.root, self.pod_dir(uid))
        except paths.UnsafePathError as exc:
            log.error("unsafe path not removed", extra={"uid": uid, "err": str(exc)})
        except OSError as exc:
            log.warning(
                "cannot remove a directory", extra={"uid": uid, "path": str(self.root / uid), "err": str(exc)}
            )
        with contextlib.suppress(OSError):
            self.root.rmdir()
