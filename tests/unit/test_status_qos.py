"""The QoS class at v1.37: containers' classes agreeing, or the pod-level resources."""

from __future__ import annotations

from typing import Any

import pytest

from vk_common.qos import pod_qos_class

GUARANTEED = {"limits": {"cpu": "1", "memory": "1Gi"}}
BURSTABLE = {"requests": {"cpu": "100m"}}


def _pod(*resources: dict[str, Any], pod_level: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(resources)]
    }
    if pod_level is not None:
        spec["resources"] = pod_level
    return {"spec": spec}


@pytest.mark.parametrize(
    ("pod", "qos"),
    [
        (_pod({}), "BestEffort"),
        (_pod({"requests": {"ephemeral-storage": "1Gi"}}), "BestEffort"),
        (_pod(GUARANTEED, GUARANTEED), "Guaranteed"),
        (_pod(GUARANTEED, {}), "Burstable"),
        (_pod({"limits": {"cpu": "1"}}), "Burstable"),
        (_pod(BURSTABLE), "Burstable"),
        # pod-level resources decide when they name cpu or memory
        (_pod({}, {}, pod_level=GUARANTEED), "Guaranteed"),
        (_pod(GUARANTEED, pod_level={"requests": {"memory": "1Gi"}}), "Burstable"),
        (_pod(GUARANTEED, pod_level={"requests": {"ephemeral-storage": "1Gi"}}), "Guaranteed"),
    ],
)
def test_qos_class(pod: dict[str, Any], qos: str) -> None:
    assert pod_qos_class(pod) == qos
