"""The sandbox kubeconfig: what kubernetes_asyncio reads from it."""

from __future__ import annotations

from pathlib import Path

import yaml
from kubernetes_asyncio import client, config

from vk_provider.sandbox.kubeconfig import write_kubeconfig


async def test_kubeconfig_loads_in_kubernetes_asyncio(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "sub" / "kubeconfig", "http://127.0.0.1:12345")
    assert path.stat().st_mode & 0o077 == 0
    data = yaml.safe_load(path.read_text())
    assert data["current-context"] == "vk-sandbox"
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(path), client_configuration=cfg)
    assert cfg.host == "http://127.0.0.1:12345"
