"""Security audit (issue 13) items 1 and 3 on real Docker, through the provider.

Item 1: a `subPath` (or an expanded `subPathExpr`) climbing out of its volume never gets a
container: the container waits with CreateContainerConfigError and the kubelet's message,
and no container of the pod binds the host's /etc. Item 3: secret and token files are
reachable by no other user of the Docker host, while the pod's containers, root or not,
read them with the modes (and the fsGroup / runAsUser ownership) the pod asked for.
"""

from __future__ import annotations

import base64
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.containers import labelled
from tests.support.manifests import sh, static_pod_dir
from tests.support.planes import Plane
from tests.support.pod_status import container_status, phase, waiting_reason
from tests.support.provider_harness import ProviderHarness
from vk_provider.runtime.docker import labels as lb

pytestmark = pytest.mark.docker

ESCAPE = "../../../../../../etc"
REFUSED = f"unable to provision SubPath `{ESCAPE}`: must not contain '..'"


def waiting_message(pod: dict[str, Any], name: str) -> str:
    return str(((container_status(pod, name).get("state") or {}).get("waiting") or {}).get("message") or "")


def assert_no_container_binds_etc(docker_client: Any, uid: str, refused: str) -> None:
    containers = labelled(docker_client, f"{lb.POD_UID}={uid}")
    assert containers, "the sandbox at least exists"
    for container in containers:
        assert container.labels.get(lb.CONTAINER_NAME) != refused, "the refused container was created"
        sources = [m.get("Source", "") for m in container.attrs.get("Mounts") or []]
        sources += [b.split(":")[0] for b in (container.attrs.get("HostConfig") or {}).get("Binds") or []]
        assert not any(os.path.realpath(s) == "/etc" for s in sources), sources


async def wait_refused(harness: ProviderHarness, pod_name: str, container: str) -> dict[str, Any]:
    return await harness.wait_for(
        pod_name,
        lambda p: (
            waiting_reason(p, container) == "CreateContainerConfigError"
            and bool(waiting_message(p, container))
        ),
    )


async def test_a_subpath_expr_expanding_to_backsteps_gets_no_container(
    harness: ProviderHarness, docker_client: Any
) -> None:
    await harness.create_object("secrets", {"metadata": {"name": "creds"}, "stringData": {"k": "v"}})
    container = sh(
        "main",
        "sleep 3600",
        env=[{"name": "SUB", "value": ESCAPE}],
        volumeMounts=[{"name": "creds", "mountPath": "/x", "subPathExpr": "$(SUB)"}],
    )
    created = await harness.create(
        harness.manifest("expr", [container], volumes=[{"name": "creds", "secret": {"secretName": "creds"}}])
    )
    pod = await wait_refused(harness, "expr", "main")
    assert waiting_message(pod, "main") == REFUSED
    assert_no_container_binds_etc(docker_client, created["metadata"]["uid"], "main")


async def test_a_static_pod_cannot_climb_out_of_its_downward_api_volume(
    plane: Plane, node_name: str, test_images: dict[str, str], tmp_path: Path, docker_client: Any
) -> None:
    """A manifest file never meets the apiserver's validation: the provider's own check holds.
    Both planes refuse its mirror pod (422, as they refuse such a pod from any client), so what
    the user sees is the Event the provider records for the static pod, and the engine shows
    that no container binds /etc."""
    mount = {"name": "info", "mountPath": "/host-etc", "subPath": ESCAPE}
    static_dir = static_pod_dir(
        tmp_path,
        "escape",
        [sh("main", "sleep 3600", volumeMounts=[mount])],
        volumes=[
            {
                "name": "info",
                "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]},
            }
        ],
    )
    mirror_name = f"escape-{node_name.lower()}"
    async with ProviderHarness.running(node_name, tmp_path, static_dir=static_dir, plane=plane) as harness:
        event = await harness.wait_event(mirror_name, "Failed")
        assert (event["type"], event["message"]) == ("Warning", f"Error: {REFUSED}")
        assert await harness.get(mirror_name) is None, "the API refuses the mirror pod"
        assert_no_container_binds_etc(docker_client, event["involvedObject"]["uid"], "main")


# ---------------------------------------------------------------- item 3: the files on the host

SCRIPT = (
    "id -u; for f in /s/password /s400/password; do"
    " { cat $f || echo -n denied; } 2>/dev/null; echo; stat -L -c '%a %g' $f; done;"
    " t=/var/run/secrets/kubernetes.io/serviceaccount/token;"
    " head -c 3 $t; echo; stat -L -c '%a %u %g' $t"
)
SECRET_VOLUMES = [
    {"name": "s", "secret": {"secretName": "creds"}},
    {"name": "s400", "secret": {"secretName": "creds", "defaultMode": 0o400}},
]
MOUNTS = [{"name": "s", "mountPath": "/s"}, {"name": "s400", "mountPath": "/s400"}]


def _reader(harness: ProviderHarness, name: str, **security: Any) -> dict[str, Any]:
    return harness.manifest(
        name,
        [sh("main", SCRIPT, volumeMounts=MOUNTS)],
        restartPolicy="Never",
        volumes=SECRET_VOLUMES,
        **({"securityContext": security} if security else {}),
    )


def _unreadable_by_others(path: Path) -> None:
    result = subprocess.run(
        ["cat", str(path)],
        user=65534,
        group=65534,
        extra_groups=[],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0 and "Permission denied" in result.stderr, result


@pytest.mark.skipif(
    os.geteuid() != 0, reason="the provider must run as root to give files to the pod's users"
)
async def test_secret_and_token_files_are_private_on_the_host_and_readable_in_the_pod(
    harness: ProviderHarness, docker_client: Any
) -> None:
    secret = base64.b64encode(b"hunter2").decode()
    await harness.create_object("secrets", {"metadata": {"name": "creds"}, "data": {"password": secret}})
    uids = {}
    for name, security in (
        ("as-root", {}),
        ("as-user", {"runAsUser": 1234}),
        ("as-user-group", {"runAsUser": 1234, "runAsGroup": 1234, "fsGroup": 2000}),
    ):
        uids[name] = (await harness.create(_reader(harness, name, **security)))["metadata"]["uid"]
    logs: dict[str, list[str]] = {}
    for name in uids:
        pod = await harness.wait_for(name, lambda p: phase(p) in ("Succeeded", "Failed"))
        container_id = container_status(pod, "main")["containerID"].removeprefix("docker://")
        logs[name] = docker_client.containers.get(container_id).logs().decode().splitlines()
        assert phase(pod) == "Succeeded", (name, logs[name])
    token = "eyJ"  # a JWT's header
    assert logs["as-root"] == ["0", "hunter2", "644 0", "hunter2", "400 0", token, "644 0 0"]
    # No fsGroup: a secret is read through its mode alone (a 0400 one is the owner's, as with
    # the kubelet); the token belongs to the pod's one user, 0600.
    assert logs["as-user"] == ["1234", "hunter2", "644 0", "denied", "400 0", token, "600 1234 0"]
    # fsGroup: every file belongs to the group and is group-readable: 0400 becomes 0440.
    assert logs["as-user-group"] == [
        "1234",
        "hunter2",
        "644 2000",
        "hunter2",
        "440 2000",
        token,
        "640 1234 2000",
    ]
    node_dir = harness.workdir / "state" / harness.node_name
    for name, uid in uids.items():
        volumes = node_dir / uid / "volumes"
        for directory in (node_dir, node_dir / uid, volumes):
            assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
        for volume in volumes.iterdir():
            for path in volume.rglob("*"):
                if path.is_file() and not path.is_symlink():
                    _unreadable_by_others(path)
        assert any(volumes.iterdir()), name
