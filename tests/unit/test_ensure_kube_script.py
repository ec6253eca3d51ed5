"""scripts/ensure-kube.sh: a clear one-line failure without Go, a no-op when the build is cached."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "ensure-kube.sh"


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60, env=env, check=False
    )


def test_without_go_it_fails_with_one_clear_line(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "VK_KUBE_CACHE": str(tmp_path / "cache")}
    result = run(env)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        line
        for line in result.stderr.strip().splitlines()
        if line.startswith("ensure-kube: Go is not installed")
    ]
    assert result.stdout == ""


def test_a_cached_build_is_used_as_it_is(tmp_path: Path) -> None:
    env = {**os.environ, "VK_KUBE_CACHE": str(tmp_path)}
    bin_dir = Path(run(env, "--print").stdout.strip())
    assert bin_dir.parent.parent == tmp_path and bin_dir.name == "bin"
    bin_dir.mkdir(parents=True)
    for name in ("kube", "etcd"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    (bin_dir / ".complete").touch()
    result = run(env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(bin_dir)
    assert "building" not in result.stderr
    version = (REPO / "KUBE_VERSION").read_text().strip()
    assert (tmp_path / version).resolve() == bin_dir.parent  # the stable link the sandbox defaults to
