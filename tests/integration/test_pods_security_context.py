"""The securityContext on real Docker (issue 14, item 3): what the container sees, what the API shows.

Users and groups (`id`), a read-only root filesystem, dropped capabilities, no-new-privileges
and seccomp (RuntimeDefault and a Localhost profile from `docker.seccompProfileRoot`) are read
from inside the container (/proc/self/status, the failing command); what Docker cannot honour
or the node does not allow is refused with the field path or the kubelet's admission reason,
in the pod's status and an Event.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_security_pods import logs_of, pod_containers
from tests.support.manifests import sh
from tests.support.planes import EmulatorPlane, RealPlane
from tests.support.pod_status import container_status, phase, waiting_reason
from tests.support.provider_harness import ProviderHarness
from vk_provider.config import Config

pytestmark = pytest.mark.docker

# Allows everything but mkdir: the container's mkdir fails with EPERM (errno 1).
NO_MKDIR_PROFILE = {
    "defaultAction": "SCMP_ACT_ALLOW",
    "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
}


class SeccompHarness(ProviderHarness):
    """The default harness with `docker.seccompProfileRoot` at `<workdir>/seccomp`."""

    def config(self) -> Config:
        config = super().config()
        root = str(self.workdir / "seccomp")
        return dataclasses.replace(
            config, docker=dataclasses.replace(config.docker, seccomp_profile_root=root)
        )


@pytest.fixture
async def harness(
    node_name: str, test_images: dict[str, str], tmp_path: Path, plane: EmulatorPlane | RealPlane
) -> AsyncIterator[ProviderHarness]:
    profiles = tmp_path / "seccomp" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / "no-mkdir.json").write_text(json.dumps(NO_MKDIR_PROFILE))
    async with SeccompHarness.running(node_name, tmp_path, plane=plane) as h:
        yield h


def status_line(log: bytes, key: str) -> str:
    """The value of `key:` in a /proc/self/status dump."""
    found = re.search(rb"^" + key.encode() + rb":\s*(\S+)", log, re.MULTILINE)
    assert found is not None, f"{key} not in {log!r}"
    return found.group(1).decode()


async def test_id_shows_run_as_user_group_fs_group_and_supplemental_groups(
    harness: ProviderHarness, docker_client: Any
) -> None:
    await harness.create(
        harness.manifest(
            "ids",
            [sh("main", "id; echo done; sleep 3600")],
            securityContext={
                "runAsUser": 1234,
                "runAsGroup": 2345,
                "fsGroup": 3456,
                "supplementalGroups": [4567],
            },
        )
    )
    pod = await harness.wait_for("ids", lambda p: phase(p) == "Running")
    log = await logs_of(docker_client, pod, "main", b"done")
    found = re.search(rb"uid=(\d+).* gid=(\d+).* groups=(\S+)", log)
    assert found is not None, log
    assert (found.group(1), found.group(2)) == (b"1234", b"2345")
    groups = {g.split(b"(")[0] for g in found.group(3).split(b",")}
    assert {b"3456", b"4567"} <= groups


async def test_the_container_sees_its_restrictions(harness: ProviderHarness, docker_client: Any) -> None:
    status = "cat /proc/self/status; echo done; sleep 3600"
    await harness.create(
        harness.manifest(
            "restricted",
            [
                sh(
                    "rofs",
                    "touch /x && echo wrote || echo touch-failed; echo done; sleep 3600",
                    securityContext={"readOnlyRootFilesystem": True},
                ),
                sh(
                    "nocaps",
                    "chown 1:1 /etc/hostname && echo chowned || echo chown-failed; " + status,
                    securityContext={"capabilities": {"drop": ["ALL"]}},
                ),
                sh("nonewprivs", status, securityContext={"allowPrivilegeEscalation": False}),
                sh("seccomp", status, securityContext={"seccompProfile": {"type": "RuntimeDefault"}}),
                sh(
                    "localhost",
                    "mkdir /tmp/d 2>&1; echo done; sleep 3600",
                    securityContext={
                        "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/no-mkdir.json"}
                    },
                ),
            ],
        )
    )
    pod = await harness.wait_for("restricted", lambda p: phase(p) == "Running")
    assert b"touch-failed" in await logs_of(docker_client, pod, "rofs", b"done")
    nocaps = await logs_of(docker_client, pod, "nocaps", b"done")
    assert b"chown-failed" in nocaps
    assert status_line(nocaps, "CapEff") == "0000000000000000"
    assert status_line(await logs_of(docker_client, pod, "nonewprivs", b"done"), "NoNewPrivs") == "1"
    assert status_line(await logs_of(docker_client, pod, "seccomp", b"done"), "Seccomp") == "2"
    assert b"Operation not permitted" in await logs_of(docker_client, pod, "localhost", b"done")


async def test_a_missing_localhost_profile_is_a_config_error_naming_the_field(
    harness: ProviderHarness,
) -> None:
    await harness.create(
        harness.manifest(
            "noprofile",
            [sh("main", "sleep 3600")],
            securityContext={
                "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/absent.json"}
            },
        )
    )
    pod = await harness.wait_for(
        "noprofile", lambda p: waiting_reason(p, "main") == "CreateContainerConfigError"
    )
    message = container_status(pod, "main")["state"]["waiting"]["message"]
    path = harness.workdir / "seccomp" / "profiles" / "absent.json"
    assert message == (
        "spec.securityContext.seccompProfile.localhostProfile: "
        f'cannot load seccomp profile "{path}": No such file or directory'
    )
    event = await harness.wait_event("noprofile", "Failed")
    assert (event["type"], event["message"]) == ("Warning", f"Error: {message}")


@pytest.mark.parametrize(
    ("name", "spec", "reason", "message"),
    [
        (
            "unconfined",
            {
                "containers": [
                    sh("main", "sleep 3600", securityContext={"seccompProfile": {"type": "Unconfined"}})
                ]
            },
            "Forbidden",
            "spec.containers[0].securityContext.seccompProfile: Unconfined seccomp profiles are not allowed "
            "on this node (docker.allow.unconfined)",
        ),
        (
            "strict",
            {
                "containers": [sh("main", "sleep 3600")],
                "securityContext": {"supplementalGroupsPolicy": "Strict"},
            },
            "SupplementalGroupsPolicyNotSupported",
            "Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node",
        ),
        (
            "ownusers",
            {"containers": [sh("main", "sleep 3600")], "hostUsers": False},
            "Forbidden",
            "spec.hostUsers: pods in their own user namespace need a Docker engine with userns-remap "
            "(this engine runs containers in the host's user namespace)",
        ),
    ],
)
async def test_a_refused_security_field_fails_the_pod_with_its_reason_and_an_event(
    harness: ProviderHarness, docker_client: Any, name: str, spec: dict[str, Any], reason: str, message: str
) -> None:
    spec = dict(spec)  # the parameters are shared by both planes' runs: not changed in place
    containers = spec.pop("containers")
    created = await harness.create(harness.manifest(name, containers, **spec))
    failed = await harness.wait_for(name, lambda p: phase(p) == "Failed")
    assert (failed["status"]["reason"], failed["status"]["message"]) == (reason, message)
    # A kubelet admission rejection has rejectPod's Event (its reason, the message without the
    # prefix); a field the node refuses, the Failed Event of a sync error.
    rejection = message.removeprefix("Pod was rejected: ")
    expected = (reason, rejection) if rejection != message else ("Failed", f"Error: {message}")
    event = await harness.wait_event(name, expected[0])
    assert (event["type"], event["message"]) == ("Warning", expected[1])
    assert pod_containers(docker_client, created["metadata"]["uid"]) == []  # refused before anything ran


async def test_an_apparmor_profile_on_a_host_without_apparmor_is_rejected(
    harness: ProviderHarness, docker_client: Any
) -> None:
    if "name=apparmor" in (docker_client.info().get("SecurityOptions") or []):
        pytest.skip("the engine's host enforces AppArmor")
    await harness.create(
        harness.manifest(
            "apparmor",
            [sh("main", "sleep 3600")],
            securityContext={"appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-custom"}},
        )
    )
    failed = await harness.wait_for("apparmor", lambda p: phase(p) == "Failed")
    assert (failed["status"]["reason"], failed["status"]["message"]) == (
        "AppArmor",
        "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host",
    )
    event = await harness.wait_event("apparmor", "AppArmor")
    assert (event["type"], event["message"]) == (
        "Warning",
        "Cannot enforce AppArmor: AppArmor is not enabled on the host",
    )
