"""A local image registry with basic auth, for the image-pull tests: `LocalRegistry`, `SlowProxy`.

What lives here: `LocalRegistry.start(workdir)` runs Debian's `docker-registry serve` (the
distribution registry, installed by scripts/ensure-registry.sh, which `make test` runs too) on
127.0.0.1:<free port> with an htpasswd file (`htpasswd -Bbn`, bcrypt) and its access log in
`workdir`; `push(docker_client, source, repository)` tags a local image into it, pushes it with
the registry's credentials (given to the engine per request: nothing is written to
~/.docker/config.json, so the provider's own pulls stay anonymous) and removes the local tag,
so the next pull of that reference has to fetch it; `manifest_requests(repository, reference)`
counts the authorized manifest requests the registry answered (one per pull);
`dockerconfigjson(registry)` / `dockercfg(registry)` are the two pull-secret bodies.
Docker treats 127.0.0.0/8 as an insecure registry by default, so plain HTTP works.
`SlowProxy` forwards TCP to the registry, holding each new connection for a moment, so that
pulls started together overlap. Must not: log the engine in, or touch images it did not tag.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.byte_pipe import pipe
from vk_common.ports import free_port

REPO = Path(__file__).resolve().parents[2]
USERNAME = "vk-puller"
PASSWORD = "s3cret-pull"
_CONFIG = """\
version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: {root}
http:
  addr: {host}
auth:
  htpasswd:
    realm: vk-test-registry
    path: {htpasswd}
"""


@dataclass
class LocalRegistry:
    host: str  # 127.0.0.1:<port>
    log_path: Path
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, workdir: Path) -> LocalRegistry:
        subprocess.run(["bash", str(REPO / "scripts" / "ensure-registry.sh")], check=True)
        workdir.mkdir(parents=True, exist_ok=True)
        htpasswd = workdir / "htpasswd"
        line = subprocess.run(
            ["htpasswd", "-Bbn", USERNAME, PASSWORD], check=True, capture_output=True, text=True
        ).stdout.strip()
        htpasswd.write_text(line + "\n")
        host = f"127.0.0.1:{free_port()}"
        config = workdir / "config.yml"
        config.write_text(_CONFIG.format(root=workdir / "data", host=host, htpasswd=htpasswd))
        log_path = workdir / "registry.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                ["docker-registry", "serve", str(config)], stdout=log, stderr=subprocess.STDOUT
            )
        registry = cls(host, log_path, process)
        registry._wait_ready()
        return registry

    def _wait_ready(self, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"docker-registry exited: {self.log_path.read_text()}")
            try:
                urllib.request.urlopen(f"http://{self.host}/v2/", timeout=1)
            except urllib.error.HTTPError as exc:
                if exc.code == 401:  # up, and asking for credentials
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"docker-registry did not answer on {self.host}: {self.log_path.read_text()}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def push(self, docker_client: Any, source: str, repository: str, tag: str = "1") -> str:
        """Push the local image `source` as <host>/<repository>:<tag>; the reference, absent locally."""
        target = f"{self.host}/{repository}"
        docker_client.images.get(source).tag(target, tag)
        try:
            auth = {"username": USERNAME, "password": PASSWORD}
            for item in docker_client.api.push(target, tag, stream=True, decode=True, auth_config=auth):
                if isinstance(item, dict) and item.get("error"):
                    raise RuntimeError(f"push of {target}:{tag}: {item['error']}")
        finally:
            docker_client.api.remove_image(f"{target}:{tag}")
        return f"{target}:{tag}"

    def manifest_requests(self, repository: str, reference: str) -> int:
        """Authorized manifest requests (HEAD or GET, answered 200) for one tag, from the access log."""
        pattern = re.compile(
            rf'"(?:HEAD|GET) /v2/{re.escape(repository)}/manifests/{re.escape(reference)} HTTP/[0-9.]+" 200 '
        )
        return sum(1 for line in self.log_path.read_text().splitlines() if pattern.search(line))


def auth_entry(username: str = USERNAME, password: str = PASSWORD) -> dict[str, str]:
    return {"auth": base64.b64encode(f"{username}:{password}".encode()).decode()}


def dockerconfigjson(registry: str, name: str, **entry: str) -> dict[str, Any]:
    """A kubernetes.io/dockerconfigjson Secret with the registry's credentials under `registry`."""
    body = {"auths": {registry: entry or auth_entry()}}
    return _secret(name, "kubernetes.io/dockerconfigjson", ".dockerconfigjson", body)


def dockercfg(registry: str, name: str, **entry: str) -> dict[str, Any]:
    """A kubernetes.io/dockercfg Secret (the bare map of the old ~/.dockercfg)."""
    return _secret(name, "kubernetes.io/dockercfg", ".dockercfg", {registry: entry or auth_entry()})


def _secret(name: str, type_: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
    encoded = base64.b64encode(json.dumps(body).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "type": type_,
        "data": {key: encoded},
    }


class SlowProxy:
    """TCP to `upstream`, each new connection held `delay` seconds first; `host` is its address."""

    def __init__(self, upstream: str, delay: float) -> None:
        self._upstream = upstream.rsplit(":", 1)
        self._delay = delay
        self._server: asyncio.Server | None = None
        self.host = ""

    async def __aenter__(self) -> SlowProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.host = f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(self._delay)
        host, port = self._upstream
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
