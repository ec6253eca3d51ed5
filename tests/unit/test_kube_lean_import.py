"""The provider's process loads kubernetes_asyncio without its model modules, and every name of
the library still answers as the real package's (vk_provider/kube/lean_import.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(code: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_provider_imports_no_model_and_its_client_works(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    found = _run(
        f"""
        import asyncio, json, sys
        from vk_provider.kube.lean_import import install
        install()
        import vk_provider.app
        from aiohttp import web
        from vk_provider.config import KubernetesConfig
        from vk_provider.kube.client import make_kube_client

        async def get_namespace():
            app = web.Application()
            app.router.add_get("/api/v1/namespaces/{{name}}", lambda r: web.json_response(
                {{"kind": "Namespace", "metadata": {{"name": r.match_info["name"]}}}}))
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]
            open({str(kubeconfig)!r}, "w").write(json.dumps({{
                "apiVersion": "v1", "kind": "Config", "current-context": "c",
                "clusters": [{{"name": "c", "cluster": {{"server": f"http://127.0.0.1:{{port}}"}}}}],
                "users": [{{"name": "u", "user": {{"token": "t"}}}}],
                "contexts": [{{"name": "c", "context": {{"cluster": "c", "user": "u"}}}}]}}))
            client = await make_kube_client(KubernetesConfig(kubeconfig={str(kubeconfig)!r}))
            try:
                return (await client.get("/api/v1/namespaces/default"))["metadata"]["name"]
            finally:
                await client.close()
                await runner.cleanup()

        def rss_mb():  # not ru_maxrss: across exec it keeps the parent's (pytest's) high-water mark
            status = open("/proc/self/status").read()
            return int(status.split("VmHWM:")[1].split()[0]) // 1024

        name = asyncio.run(get_namespace())
        loaded = [m for m in sys.modules if m.startswith("kubernetes_asyncio.client.")]
        print(json.dumps({{"models": [m for m in loaded if ".models." in m or ".api." in m],
                          "rss_mb": rss_mb(),
                          "namespace": name}}))
        """
    )
    assert found["namespace"] == "default"
    assert found["models"] == []
    assert isinstance(found["rss_mb"], int) and found["rss_mb"] < 85  # 98 MB with every model


def test_every_other_name_still_answers_as_the_real_package() -> None:
    found = _run(
        """
        import asyncio, json
        from vk_provider.kube.lean_import import install
        install()
        import kubernetes_asyncio
        from kubernetes_asyncio import client, config, watch
        from kubernetes_asyncio.client import ApiClient, CoreV1Api, V1Pod
        from kubernetes_asyncio.client.models import V1ObjectMeta

        async def deserialize():
            async with ApiClient() as api:
                class Answer:
                    data = json.dumps({"metadata": {"name": "web"}, "spec": {"containers": []}})
                pod = api.deserialize(Answer(), "V1Pod")
                return type(pod).__name__, pod.metadata.name, isinstance(pod.metadata, V1ObjectMeta)

        print(json.dumps({"version": kubernetes_asyncio.__version__, "api": CoreV1Api.__name__,
                          "pod": V1Pod(metadata=V1ObjectMeta(name="x")).metadata.name,
                          "watch": watch.Watch.__name__, "load": config.load_kube_config.__name__,
                          "deserialized": asyncio.run(deserialize())}))
        """
    )
    assert found["api"] == "CoreV1Api" and found["pod"] == "x" and found["watch"] == "Watch"
    assert found["load"] == "load_kube_config" and str(found["version"]).count(".") == 2
    assert found["deserialized"] == ["V1Pod", "web", True]


def test_after_the_library_was_imported_it_changes_nothing() -> None:
    found = _run(
        """
        import json, sys
        import kubernetes_asyncio.client
        real = sys.modules["kubernetes_asyncio.client"]
        from vk_provider.kube.lean_import import install
        install()
        print(json.dumps({"same": sys.modules["kubernetes_asyncio.client"] is real}))
        """
    )
    assert found["same"] is True
