"""The image manager of the pod workers (pods/images.py) on the in-memory runtime: pull policies,
the kubelet's Events and waiting reasons, back-off and missing pull secrets, as a user sees them.

The same flows against a real registry with credentials are tests/integration/test_pods_images.py.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from tests.support.pod_workers_rig import Rig, box, make_pod, running_rig
from tests.support.polling import eventually
from vk_provider.pods.images import go_duration, present_message

WITHIN = 10.0


def secret_getter(names: set[str]) -> Any:
    async def get(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        if kind == "secret" and name == "garbled":  # base64 of "nope", not JSON
            data = {".dockerconfigjson": "bm9wZQ=="}
            return {"metadata": {"name": name}, "type": "kubernetes.io/dockerconfigjson", "data": data}
        if kind == "secret" and name in names:
            return {"metadata": {"name": name, "namespace": namespace}, "type": "Opaque", "data": {}}
        return None

    return get


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    async with running_rig(getter=secret_getter({"present"})) as r:
        yield r


def waiting(rig: Rig, uid: str) -> dict[str, Any]:
    status = rig[1].cache.get(uid) or {}
    for c in status.get("containerStatuses") or []:
        return dict((c.get("state") or {}).get("waiting") or {})
    return {}


def events(rig: Rig) -> list[tuple[str, str, str]]:
    return list(rig[2].seen)


async def running(rig: Rig, uid: str) -> None:
    await eventually(lambda: (rig[1].cache.get(uid) or {}).get("phase") == "Running", within=WITHIN)


async def test_if_not_present_uses_a_present_image(rig: Rig) -> None:
    rig[4].upsert("api", make_pod("here", [box("a", imagePullPolicy="IfNotPresent")]))
    await running(rig, "here")
    image = box("a")["image"]
    assert ("Normal", "Pulled", present_message(image)) in events(rig)
    assert not [e for e in events(rig) if e[1] == "Pulling"]


@pytest.mark.parametrize("policy", ["IfNotPresent", "Always"])
async def test_a_pull_reports_pulling_then_pulled_with_durations_and_size(rig: Rig, policy: str) -> None:
    runtime = rig[0]
    if policy == "IfNotPresent":
        runtime.pullable_images.add("new:1")
    rig[4].upsert("api", make_pod("pull", [{"name": "a", "image": "new:1", "imagePullPolicy": policy}]))
    await running(rig, "pull")
    seen = [e for e in events(rig) if e[1] in ("Pulling", "Pulled")]
    assert seen[0] == ("Normal", "Pulling", 'Pulling image "new:1"')
    assert seen[1][:2] == ("Normal", "Pulled")
    assert re.fullmatch(
        r'Successfully pulled image "new:1" in 500ms \((\d+ms|[\d.]+s) including waiting\)\. '
        r"Image size: 1234 bytes\.",
        seen[1][2],
    ), seen[1][2]


async def test_never_without_the_image_is_err_image_never_pull(rig: Rig) -> None:
    rig[0].pullable_images.add("absent:1")
    rig[4].upsert("api", make_pod("never", [{"name": "a", "image": "absent:1", "imagePullPolicy": "Never"}]))
    await eventually(lambda: waiting(rig, "never").get("reason") == "ErrImageNeverPull", within=WITHIN)
    message = 'Container image "absent:1" is not present with pull policy of Never'
    assert waiting(rig, "never")["message"] == message
    assert ("Warning", "ErrImageNeverPull", message) in events(rig)
    assert ("Warning", "Failed", "Error: ErrImageNeverPull") in events(rig)
    assert rig[0].pulls == []


async def test_failed_pull_then_back_off_carries_the_last_error(rig: Rig) -> None:
    rig[0].missing_images.add("nope:1")
    rig[4].upsert("api", make_pod("fail", [{"name": "a", "image": "nope:1"}]))
    await eventually(lambda: waiting(rig, "fail").get("reason") == "ErrImagePull", within=WITHIN)
    assert waiting(rig, "fail")["message"] == "pull access denied for nope:1"
    await eventually(lambda: waiting(rig, "fail").get("reason") == "ImagePullBackOff", within=WITHIN)
    assert waiting(rig, "fail")["message"] == (
        'Back-off pulling image "nope:1": ErrImagePull: pull access denied for nope:1'
    )
    seen = events(rig)
    assert ("Warning", "Failed", 'Failed to pull image "nope:1": pull access denied for nope:1') in seen
    assert ("Warning", "Failed", "Error: ErrImagePull") in seen
    assert ("Normal", "BackOff", 'Back-off pulling image "nope:1"') in seen
    assert ("Warning", "Failed", "Error: ImagePullBackOff") in seen
    # no secret was named: no warning about secrets
    assert not [e for e in seen if e[1] == "FailedToRetrieveImagePullSecret"]


async def test_a_missing_pull_secret_is_reported_when_the_pull_fails(rig: Rig) -> None:
    rig[0].missing_images.add("private:1")
    secrets = [{"name": "gone"}, {"name": "present"}, {"name": ""}, {"name": "also-gone"}]
    rig[4].upsert("api", make_pod("sec", [{"name": "a", "image": "private:1"}], imagePullSecrets=secrets))
    rig[4].upsert("api", make_pod("ok", [box("a", imagePullPolicy="Always")], imagePullSecrets=secrets))
    await eventually(lambda: waiting(rig, "sec").get("reason") == "ErrImagePull", within=WITHIN)
    await running(rig, "ok")
    warnings = [e for e in events(rig) if e[1] == "FailedToRetrieveImagePullSecret"]
    assert warnings[0] == (
        "Warning",
        "FailedToRetrieveImagePullSecret",
        "Unable to retrieve some image pull secrets (gone, also-gone); "
        "attempting to pull the image may not succeed.",
    )
    assert len(set(warnings)) == 1  # only the failing pod's pull warned


async def test_an_unreadable_pull_secret_keeps_the_container_waiting(rig: Rig) -> None:
    rig[0].pullable_images.add("new:2")
    rig[4].upsert(
        "api", make_pod("garbled", [{"name": "a", "image": "new:2"}], imagePullSecrets=[{"name": "garbled"}])
    )
    await eventually(lambda: waiting(rig, "garbled").get("reason") == "ErrImagePull", within=WITHIN)
    assert waiting(rig, "garbled")["message"].startswith("secret garbled: ")
    assert ("Warning", "Failed", "Error: ErrImagePull") in events(rig)
    assert rig[0].pulls == []


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0s"),
        (0.0004, "0s"),
        (0.512, "512ms"),
        (1.0, "1s"),
        (1.2345, "1.234s"),
        (83.5, "1m23.5s"),
        (3725.0, "1h2m5s"),
    ],
)
def test_go_duration_truncated_to_milliseconds(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
