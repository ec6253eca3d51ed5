"""Image pulls with pull secrets against a local registry with basic auth (issue 14, item 4).

A pod's image is on `local_registry` (Debian's docker-registry with htpasswd on 127.0.0.1,
tests/support/registry.py); each test pushes its own repository, so the engine does not have
the reference yet. What is checked is what the user sees (the container's waiting reason, the
pod's Events, the pod Running) and what the registry saw (its access log).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.support.images import BUSYBOX_IMAGE
from tests.support.manifests import sh
from tests.support.metrics import sample
from tests.support.pod_status import container_status, phase, waiting_reason
from tests.support.provider_harness import ProviderHarness
from tests.support.registry import LocalRegistry, SlowProxy, dockercfg, dockerconfigjson

pytestmark = pytest.mark.docker


def repository(kind: str) -> str:
    return f"vk-test/{kind}-{uuid.uuid4().hex[:8]}"


async def pushed_with_secret(
    harness: ProviderHarness, docker_client: Any, registry: LocalRegistry, kind: str, secret: str
) -> tuple[str, str]:
    """A new repository on the registry and a dockerconfigjson secret for it: (repository, image)."""
    repo = repository(kind)
    image = registry.push(docker_client, BUSYBOX_IMAGE, repo)
    await harness.create_object("secrets", dockerconfigjson(registry.host, secret))
    return repo, image


def private_pod(
    harness: ProviderHarness, name: str, image: str, *secrets: str, **spec: Any
) -> dict[str, Any]:
    refs = [{"name": s} for s in secrets]
    extra = {"imagePullSecrets": refs} if refs else {}
    return harness.manifest(name, [{**sh("main", "sleep 3600"), "image": image}], **extra, **spec)


async def test_without_a_secret_the_pull_fails_then_backs_off(
    harness: ProviderHarness, docker_client: Any, local_registry: LocalRegistry
) -> None:
    image = local_registry.push(docker_client, BUSYBOX_IMAGE, repository("anon"))
    await harness.create(private_pod(harness, "anon", image))
    failed = await harness.wait_for("anon", lambda p: waiting_reason(p, "main") == "ErrImagePull")
    message = container_status(failed, "main")["state"]["waiting"]["message"]
    assert "no basic auth credentials" in message, message
    event = await harness.wait_event("anon", "Failed")
    events = await harness.events("anon")
    pull_failed = [e for e in events if e["reason"] == "Failed" and e["message"].startswith("Failed to pull")]
    assert pull_failed and pull_failed[0]["message"] == f'Failed to pull image "{image}": {message}', events
    assert event["involvedObject"]["fieldPath"] == "spec.containers{main}"
    backing_off = await harness.wait_for("anon", lambda p: waiting_reason(p, "main") == "ImagePullBackOff")
    assert container_status(backing_off, "main")["state"]["waiting"]["message"] == (
        f'Back-off pulling image "{image}": ErrImagePull: {message}'
    )
    back_off = await harness.wait_event("anon", "BackOff")
    assert back_off["message"] == f'Back-off pulling image "{image}"'
    assert local_registry.manifest_requests(image.split("/", 1)[1].rsplit(":", 1)[0], "1") == 0
    assert harness.provider is not None
    assert sample(harness.provider.metrics, "vk_provider_image_pulls_total", result="failure") >= 1


@pytest.mark.parametrize("form", ["dockerconfigjson", "dockercfg"])
async def test_a_pull_secret_sends_the_credentials(
    harness: ProviderHarness, docker_client: Any, local_registry: LocalRegistry, form: str
) -> None:
    repo = repository(form)
    image = local_registry.push(docker_client, BUSYBOX_IMAGE, repo)
    make = dockerconfigjson if form == "dockerconfigjson" else dockercfg
    # the kubelet's keys: a bare host, or a URL with scheme and /v1/ or /v2/ path
    key = local_registry.host if form == "dockerconfigjson" else f"http://{local_registry.host}/v1/"
    await harness.create_object("secrets", make(key, "pull-creds"))
    await harness.create(private_pod(harness, "private", image, "pull-creds"))
    running = await harness.wait_for("private", lambda p: phase(p) == "Running", within=90)
    assert container_status(running, "main")["imageID"]
    pulling = await harness.wait_event("private", "Pulling")
    assert pulling["message"] == f'Pulling image "{image}"'
    pulled = await harness.wait_event("private", "Pulled")
    assert pulled["message"].startswith(f'Successfully pulled image "{image}" in ')
    assert " including waiting). Image size: " in pulled["message"]
    assert local_registry.manifest_requests(repo, "1") == 1
    assert harness.provider is not None
    metrics = harness.provider.metrics
    assert sample(metrics, "vk_provider_image_pulls_total", result="success") == 1
    assert sample(metrics, "kubelet_image_pull_duration_seconds_count", image_size_in_bytes="0-10MB") == 1


async def test_credentials_for_another_registry_are_not_sent(
    harness: ProviderHarness, docker_client: Any, local_registry: LocalRegistry
) -> None:
    repo = repository("elsewhere")
    image = local_registry.push(docker_client, BUSYBOX_IMAGE, repo)
    other_port = int(local_registry.host.rsplit(":", 1)[1]) + 1
    # the right username and password, filed under other registries: a pull that sent them would work
    await harness.create_object("secrets", dockerconfigjson(f"127.0.0.1:{other_port}", "other-port"))
    await harness.create_object("secrets", dockerconfigjson(f"{local_registry.host}/some-team", "other-path"))
    await harness.create(private_pod(harness, "elsewhere", image, "other-port", "other-path"))
    failed = await harness.wait_for("elsewhere", lambda p: waiting_reason(p, "main") == "ErrImagePull")
    assert "no basic auth credentials" in container_status(failed, "main")["state"]["waiting"]["message"]
    assert local_registry.manifest_requests(repo, "1") == 0


async def test_a_missing_pull_secret_warns_and_the_pull_goes_on(
    harness: ProviderHarness, docker_client: Any, local_registry: LocalRegistry
) -> None:
    image = local_registry.push(docker_client, BUSYBOX_IMAGE, repository("missing"))
    await harness.create(private_pod(harness, "nosecret", image, "not-there"))
    warning = await harness.wait_event("nosecret", "FailedToRetrieveImagePullSecret")
    assert warning["type"] == "Warning"
    assert warning["message"] == (
        "Unable to retrieve some image pull secrets (not-there); "
        "attempting to pull the image may not succeed."
    )
    await harness.wait_for(
        "nosecret", lambda p: waiting_reason(p, "main") in ("ErrImagePull", "ImagePullBackOff")
    )


async def test_the_service_accounts_pull_secrets_are_used(
    harness: ProviderHarness, docker_client: Any, local_registry: LocalRegistry
) -> None:
    repo, image = await pushed_with_secret(harness, docker_client, local_registry, "account", "account-creds")
    await harness.create_object(
        "serviceaccounts",
        {"metadata": {"name": "puller"}, "imagePullSecrets": [{"name": "account-creds"}]},
    )
    created = await harness.create(private_pod(harness, "byaccount", image, serviceAccountName="puller"))
    # ServiceAccount admission copied the account's secrets into the pod
    assert created["spec"]["imagePullSecrets"] == [{"name": "account-creds"}]
    await harness.wait_for("byaccount", lambda p: phase(p) == "Running", within=90)
    assert local_registry.manifest_requests(repo, "1") == 1


async def test_two_pods_needing_the_same_image_start_with_one_pull(
    harness: ProviderHarness, docker_client: Any, local_registry: LocalRegistry
) -> None:
    repo = repository("shared")
    local_registry.push(docker_client, BUSYBOX_IMAGE, repo)
    # every connection to the registry is held a moment, so the two pods' pulls overlap
    async with SlowProxy(local_registry.host, delay=1.0) as proxy:
        image = f"{proxy.host}/{repo}:1"
        await harness.create_object("secrets", dockerconfigjson(proxy.host, "shared-creds"))
        for name in ("first", "second"):
            await harness.create(private_pod(harness, name, image, "shared-creds"))
        for name in ("first", "second"):
            await harness.wait_for(name, lambda p: phase(p) == "Running", within=90)
    assert local_registry.manifest_requests(repo, "1") == 1
    for name in ("first", "second"):
        pulled = await harness.wait_event(name, "Pulled")
        assert pulled["message"].startswith(f'Successfully pulled image "{image}" in '), pulled


async def test_an_image_pulled_with_a_secret_is_not_lent_to_pods_without_it(
    harness: ProviderHarness, docker_client: Any, local_registry: LocalRegistry
) -> None:
    repo, image = await pushed_with_secret(harness, docker_client, local_registry, "lent", "owner-creds")
    await harness.create(private_pod(harness, "owner", image, "owner-creds"))
    await harness.wait_for("owner", lambda p: phase(p) == "Running", within=90)
    # present on the engine now, but pulled with a secret: IfNotPresent pulls again, as the pod
    await harness.create(private_pod(harness, "intruder", image))
    failed = await harness.wait_for("intruder", lambda p: waiting_reason(p, "main") == "ErrImagePull")
    assert "no basic auth credentials" in container_status(failed, "main")["state"]["waiting"]["message"]
    await harness.create(private_pod(harness, "friend", image, "owner-creds"))
    await harness.wait_for("friend", lambda p: phase(p) == "Running", within=90)
    present = await harness.wait_event("friend", "Pulled")
    assert (
        present["message"]
        == f'Container image "{image}" already present on machine and can be accessed by the pod'
    )
    assert local_registry.manifest_requests(repo, "1") == 1
