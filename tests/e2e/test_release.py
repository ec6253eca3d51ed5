"""What `make release` leaves in dist/, installed as a user installs it (`make release-test`).

The image from its archive (`docker load`), the chart from its package (`helm install
dist/vk-provider-V.tgz` with the chart's own image settings: repository vk-provider, tag the
appVersion, so the loaded image is the one that runs) on the real control plane, where the
provider registers its node and a pod scheduled onto that node runs; then `helm uninstall`. And
the wheel, `pip install`ed into a clean virtualenv from the index, gives a working
`vk-provider --version`. The files must match dist/SHA256SUMS first.

The release directory comes from $VK_PROVIDER_RELEASE_DIR (`make release-test` runs `make
release` and sets it to dist/); without it the tests skip, so `make test` does not depend on a
release. The image may already be in the engine (scripts/release.sh built it on this machine):
the test checks that what `docker load` reads from the archive is the image the provider's pod
runs, by its ID. The node and the host node have names of their own (`rel-...`), so this runs
beside test_helm_install.py.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.helm_host import NAMESPACE, _bridge_gateway, _helm, _jsonpath, host_sandbox
from tests.support.images import BUSYBOX_IMAGE, PAUSE_IMAGE
from tests.support.manifests import sh
from tests.support.polling import until
from tests.support.sandbox_process import Sandbox, node_containers, pod_manifest
from vk_provider import __version__

RELEASE_DIR = os.environ.get("VK_PROVIDER_RELEASE_DIR")
pytestmark = [
    pytest.mark.skipif(not RELEASE_DIR, reason="needs make release's dist/: run make release-test"),
    pytest.mark.timeout(1500),
]

NODE = "rel-docker-1"
RELEASE = "vk-release"
PROVIDER_SELECTOR = f"app.kubernetes.io/name=vk-provider,app.kubernetes.io/instance={RELEASE}"
WAIT = ("--wait", "--timeout", "5m")


@pytest.fixture(scope="module")
def dist() -> Path:
    """The release directory, its files checked against SHA256SUMS."""
    assert RELEASE_DIR
    directory = Path(RELEASE_DIR)
    checked = subprocess.run(
        ["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=directory, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return directory


@pytest.fixture
def host(
    control_plane: str, tmp_path: Path, docker_client: Any, test_images: dict[str, str]
) -> Iterator[Sandbox]:
    with host_sandbox(tmp_path / "host", PAUSE_IMAGE, docker_client, NODE, prefix="rel-host-") as sandbox:
        yield sandbox


def _archive_image_id(archive: Path) -> str:
    """The image ID (its config's digest) a `docker save` archive holds."""
    with gzip.open(archive) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            if member.name == "manifest.json":
                extracted = tar.extractfile(member)
                assert extracted is not None
                manifest = json.loads(extracted.read())
                assert len(manifest) == 1, manifest
                return "sha256:" + str(manifest[0]["Config"]).removesuffix(".json").rsplit("/", 1)[-1]
    raise AssertionError(f"{archive} has no manifest.json: not a Docker archive")


def _values(sandbox: Sandbox, state_dir: Path) -> dict[str, Any]:
    """The user's values: no image settings (the chart's own name the loaded image)."""
    server = sandbox.kubectl("config", "view", "-o", "jsonpath={.clusters[0].cluster.server}").stdout
    return {
        "node": {"name": NODE},
        "apiServer": {"host": _bridge_gateway(), "port": int(server.rsplit(":", 1)[1])},
        "nodeSelector": {"kubernetes.io/hostname": sandbox.node},
        "tolerations": [{"key": "virtual-kubelet.io/provider", "operator": "Exists"}],
        "test": {"image": BUSYBOX_IMAGE},
        "config": {"docker": {"sandboxImage": PAUSE_IMAGE, "stateDir": str(state_dir)}},
    }


@pytest.mark.docker
@pytest.mark.kubectl
@pytest.mark.real_only
def test_the_packaged_chart_and_the_image_archive_install_and_run_a_pod(
    dist: Path, host: Sandbox, helm: str, docker_client: Any, tmp_path: Path
) -> None:
    # 1. The image from its archive.
    archive = dist / f"vk-provider-image-{__version__}.tar.gz"
    loaded = subprocess.run(
        ["docker", "load", "-i", str(archive)], capture_output=True, text=True, timeout=600
    )
    assert loaded.returncode == 0, loaded.stderr
    assert f"Loaded image: vk-provider:{__version__}" in loaded.stdout, loaded.stdout
    image_id = docker_client.images.get(f"vk-provider:{__version__}").id
    assert image_id == _archive_image_id(archive)

    # 2. The chart from its package, with the chart's image settings.
    values = tmp_path / "values.yaml"
    values.write_text(json.dumps(_values(host, tmp_path / NODE)))
    package = dist / f"vk-provider-{__version__}.tgz"
    _helm(helm, host, "install", RELEASE, str(package), "--create-namespace", "-f", str(values), *WAIT)
    chart = _helm(helm, host, "list", "-o", "json")
    assert [(r["chart"], r["app_version"]) for r in json.loads(chart)] == [
        (f"vk-provider-{__version__}", __version__)
    ]
    ready = "{.status.conditions[?(@.type=='Ready')].status}"
    until(f"node {NODE} Ready", lambda: _jsonpath(host, "node", NODE, path=ready) == "True", 180)
    statuses = _jsonpath(
        host,
        "--namespace",
        NAMESPACE,
        "pods",
        "-l",
        PROVIDER_SELECTOR,
        path="{.items[*].status.containerStatuses[*]}",
    )
    status = json.loads(statuses)
    assert status["image"] == f"vk-provider:{__version__}" and image_id in status["imageID"], status

    # 3. A pod scheduled onto the node runs there.
    host.apply(pod_manifest("hello", NODE, [sh("hello", "echo hello from the release && exec sleep 3600")]))
    host.kubectl("wait", "--for=condition=Ready", "pod/hello", "--timeout=180s", timeout=200)
    assert _jsonpath(host, "pod", "hello", path="{.spec.nodeName}") == NODE
    until("the pod's log", lambda: host.kubectl("logs", "hello").stdout == "hello from the release\n", 60)

    # helm uninstall: the node and its containers go.
    _helm(helm, host, "uninstall", RELEASE, *WAIT)
    assert host.kubectl("get", "node", NODE, "-o", "name", check=False).stdout == ""
    assert node_containers(docker_client, NODE) == []


def test_the_wheel_installs_into_a_clean_venv_and_reports_its_version(dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    wheel = dist / f"vk_provider-{__version__}-py3-none-any.whl"
    installed = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(wheel)], capture_output=True, text=True, timeout=900
    )
    assert installed.returncode == 0, installed.stderr
    version = subprocess.run(
        [str(venv / "bin" / "vk-provider"), "--version"], capture_output=True, text=True, timeout=60
    )
    assert (version.returncode, version.stdout) == (0, f"vk-provider {__version__}\n"), version.stderr
