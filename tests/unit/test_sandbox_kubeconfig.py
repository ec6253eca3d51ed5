"""The sandbox kubeconfig: what kubernetes_asyncio reads from it."""

from __future__ import annotations

from pathlib import Path

import yaml
from kubernetes_asyncio import client, config

from vk_sandbox.kubeconfig import write_kubeconfig
from vk_sandbox.server import SandboxServer


async def test_kubeconfig_loads_in_kubernetes_asyncio(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "sub" / "kubeconfig", "http://127.0.0.1:12345")
    assert path.stat().st_mode & 0o077 == 0
    data = yaml.safe_load(path.read_text())
    assert data["current-context"] == "vk-sandbox"
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(path), client_configuration=cfg)
    assert cfg.host == "http://127.0.0.1:12345"


async def test_the_emulator_kubeconfig_names_its_ca_and_admin_token(tmp_path: Path) -> None:
    server = SandboxServer(state_dir=tmp_path / "state", port=6443)
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(path), client_configuration=cfg)
    assert cfg.host == "https://127.0.0.1:6443"
    assert cfg.ssl_ca_cert == str(server.pki.ca_cert_path)
    assert cfg.api_key["BearerToken"] == f"Bearer {server.admin_token}"
    token_file = tmp_path / "state" / "admin.token"
    assert token_file.stat().st_mode & 0o077 == 0
    assert SandboxServer(state_dir=tmp_path / "state").admin_token == server.admin_token
    assert SandboxServer().admin_token != server.admin_token
