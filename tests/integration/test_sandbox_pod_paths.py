"""Pods both control planes refuse for the paths they hold (issue 31, item 1), with the same 422.

The emulator took a `subPath` with `..` or an absolute one, a configMap / downwardAPI item path
that climbs out or starts with `..`, and hostProcess containers without hostNetwork; the
kube-apiserver refuses each (pkg/apis/core/validation/validation.go). The causes below are the
real server's, field by field (its field paths name no index for a mount's sub-path or a
downwardAPI file), and the emulator now gives the same.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.manifests import pod, sh
from tests.support.planes import Plane
from tests.support.provider_harness import NAMESPACE
from vk_provider.config import KubernetesConfig
from vk_provider.kube.client import ApiStatusError, make_kube_client

MOUNT = {"name": "v", "mountPath": "/v"}
CONFIG = {"name": "v", "configMap": {"name": "c"}}
CASES: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {
    "subpath-backstep": (
        {
            "containers": [sh("c", "true", volumeMounts=[{**MOUNT, "subPath": "a/../../etc"}])],
            "volumes": [CONFIG],
        },
        [
            (
                "spec.containers[0].volumeMounts.subPath",
                "Invalid value: \"a/../../etc\": must not contain '..'",
            )
        ],
    ),
    "subpath-absolute": (
        {
            "containers": [sh("c", "true", volumeMounts=[{**MOUNT, "subPathExpr": "/$(X)"}])],
            "volumes": [CONFIG],
        },
        [
            (
                "spec.containers[0].volumeMounts.subPathExpr",
                'Invalid value: "/$(X)": must be a relative path',
            )
        ],
    ),
    "item-paths": (
        {
            "containers": [sh("c", "true")],
            "volumes": [
                {"name": "v", "configMap": {"name": "c", "items": [{"key": "k", "path": "../k"}]}},
                {
                    "name": "w",
                    "downwardAPI": {
                        "items": [{"path": "..data", "fieldRef": {"fieldPath": "metadata.name"}}]
                    },
                },
            ],
        },
        [
            ("spec.volumes[0].configMap.items[0].path", "Invalid value: \"../k\": must not contain '..'"),
            (
                "spec.volumes[1].downwardAPI.path",
                "Invalid value: \"..data\": must not start with '..'",
            ),
        ],
    ),
    "host-process": (
        {"containers": [sh("c", "true", securityContext={"windowsOptions": {"hostProcess": True}})]},
        [
            (
                "spec.hostNetwork",
                "Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers",
            )
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_pod_with_a_bad_path_is_422_on_both_planes(plane: Plane, case: str) -> None:
    spec, expected = CASES[case]
    await plane.start()
    client = await make_kube_client(KubernetesConfig(kubeconfig=str(plane.admin_kubeconfig)))
    try:
        with pytest.raises(ApiStatusError) as info:
            await client.create(f"/api/v1/namespaces/{NAMESPACE}/pods", pod(case, **spec))
        status = info.value.body
        assert info.value.status == 422, status
        causes = [(c.get("field"), c.get("message")) for c in status["details"]["causes"]]
        assert causes == expected
    finally:
        await client.close()
        await plane.stop()
