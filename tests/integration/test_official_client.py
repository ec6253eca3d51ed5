"""The official `kubernetes` Python client against both control planes (issue 31, item 1).

It sends a create's body without a Content-Type, which the kube-apiserver reads as JSON; the
emulator answered 415, so `kubernetes.utils.create_from_yaml` and every `create_namespaced_*`
failed on it. And concurrent unconditional patches of one object must all succeed, as the real
server retries a patch that lost to another writer (GuaranteedUpdate), while a patch that names
a stale resourceVersion is a 409 on both. The client is synchronous: it runs in threads.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from tests.support.planes import Plane
from tests.support.provider_harness import NAMESPACE

PATCHES = 100


def official_client(plane: Plane) -> Any:
    return kubernetes.config.new_client_from_config(config_file=str(plane.admin_kubeconfig))


async def test_create_from_yaml_of_a_multi_document_file_succeeds(plane: Plane, tmp_path: Path) -> None:
    await plane.start()
    try:
        documents = [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-config"}, "data": {"a": "1"}},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "app-secret"},
                "stringData": {"p": "s"},
            },
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-extra"}, "data": {"b": "2"}},
        ]
        manifest = tmp_path / "app.yaml"
        manifest.write_text(yaml.safe_dump_all(documents))
        api = official_client(plane)
        created = await asyncio.to_thread(
            kubernetes.utils.create_from_yaml, api, str(manifest), namespace=NAMESPACE
        )
        assert [obj.metadata.name for group in created for obj in group] == [
            "app-config",
            "app-secret",
            "app-extra",
        ]
        core = kubernetes.client.CoreV1Api(api)
        secret = await asyncio.to_thread(core.read_namespaced_secret, "app-secret", NAMESPACE)
        assert secret.data == {"p": "cw=="}
        api.close()
    finally:
        await plane.stop()


async def test_concurrent_unconditional_patches_all_succeed_and_a_stale_one_is_409(plane: Plane) -> None:
    await plane.start()
    try:
        api = official_client(plane)
        core = kubernetes.client.CoreV1Api(api)
        body = {"metadata": {"name": "patched"}, "data": {}}
        first = await asyncio.to_thread(core.create_namespaced_config_map, NAMESPACE, body)

        def patch(i: int) -> int:
            try:
                core.patch_namespaced_config_map("patched", NAMESPACE, {"data": {f"k{i}": str(i)}})
            except kubernetes.client.ApiException as exc:
                return int(exc.status)
            return 200

        with ThreadPoolExecutor(max_workers=PATCHES) as pool:
            codes = await asyncio.to_thread(lambda: list(pool.map(patch, range(PATCHES))))
        assert codes.count(200) == PATCHES, {code: codes.count(code) for code in set(codes)}
        final = await asyncio.to_thread(core.read_namespaced_config_map, "patched", NAMESPACE)
        assert final.data == {f"k{i}": str(i) for i in range(PATCHES)}, "no patch was lost"

        stale = {"metadata": {"resourceVersion": first.metadata.resource_version}, "data": {"late": "1"}}
        with pytest.raises(kubernetes.client.ApiException) as info:
            await asyncio.to_thread(core.patch_namespaced_config_map, "patched", NAMESPACE, stale)
        assert info.value.status == 409
        api.close()
    finally:
        await plane.stop()
