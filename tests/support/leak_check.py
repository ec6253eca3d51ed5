"""What the test suite left behind on this host, checked after it: `python -m tests.support.leak_check`.

What lives here: `leftovers()`, per engine (Docker's socket, and Podman's when its service
answers) the containers and volumes that carry a node label (every test pod's do, and every test
deletes its pods or has the `node_name` fixture remove them), and the pod cgroups
(`<cgroupRoot>/<node>/[burstable|besteffort/]pod<uid>` in any hierarchy) still on the host;
`main` prints them with a count per kind and exits 1 when there is any (`make test` runs it
last: issue 27's "nothing leaks"). `--record FILE` (run first by `make test`) writes what is
already there before the tests start, and `--baseline FILE` then leaves those out of the count
and lists them apart: what a run that was cut short (the host's engine stopped mid-test) left is
not this run's leak. Must not: remove anything (a leak is a bug to see, not to tidy away).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import docker
from docker.errors import DockerException
from requests.exceptions import RequestException

from tests.support.engine import PODMAN_SOCKET
from vk_provider.config import DockerConfig
from vk_provider.runtime.docker import labels as lb
from vk_provider.runtime.docker.engine import LOCAL_SOCKET
from vk_provider.runtime.pod_cgroups import CGROUP_MOUNT


def engine_objects(url: str) -> list[str] | None:
    """The labelled containers and volumes on the engine at `url`; None when it does not answer."""
    try:
        client = docker.DockerClient(base_url=url, timeout=30)
        client.ping()
    except (DockerException, RequestException):
        return None
    try:
        found = [
            f"container {c.name} ({c.status})"
            for c in client.containers.list(all=True, filters={"label": lb.NODE})
        ]
        found += [f"volume {v.name}" for v in client.volumes.list(filters={"label": lb.NODE})]
    finally:
        client.close()
    return found


def pod_cgroups(mount: Path = CGROUP_MOUNT) -> list[str]:
    """Every pod cgroup directory under the cgroup root, in any hierarchy."""
    root = DockerConfig().cgroup_root.strip("/")
    found: list[str] = []
    for hierarchy in sorted(mount.iterdir()) if mount.is_dir() else ():
        base = hierarchy / root
        if hierarchy.is_symlink() or not base.is_dir():
            continue
        for directory, subdirs, _ in os.walk(base):
            for name in subdirs:
                if name.startswith("pod"):
                    found.append(str(Path(directory) / name))
            subdirs[:] = [d for d in subdirs if not d.startswith("pod")]
    return found


def leftovers() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for engine, url in (("docker", LOCAL_SOCKET), ("podman", PODMAN_SOCKET)):
        objects = engine_objects(url)
        if objects is not None:
            out[engine] = objects
    out["pod cgroups"] = pod_cgroups()
    return out


def new_since(found: dict[str, list[str]], before: dict[str, list[str]]) -> dict[str, list[str]]:
    """What `found` holds that `before` did not, per kind."""
    return {kind: [i for i in items if i not in set(before.get(kind, ()))] for kind, items in found.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.leak_check")
    parser.add_argument("--record", type=Path, help="write what is there now to this file and exit 0")
    parser.add_argument("--baseline", type=Path, help="leave out what this file (of --record) holds")
    args = parser.parse_args(argv)
    found = leftovers()
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(json.dumps(found, indent=1))
        print(f"leak check: {sum(map(len, found.values()))} left from before this run, recorded")
        return 0
    before: dict[str, list[str]] = json.loads(args.baseline.read_text()) if args.baseline else {}
    earlier = sum(len(set(items) & set(found.get(kind, ()))) for kind, items in before.items())
    if earlier:
        print(f"leak check: {earlier} left from before this run (not counted; {args.baseline})")
    leaked = 0
    for kind, items in new_since(found, before).items():
        print(f"leak check: {kind}: {len(items)} left")
        for item in items[:50]:
            print(f"  {item}")
        leaked += len(items)
    return 1 if leaked else 0


if __name__ == "__main__":
    sys.exit(main())
