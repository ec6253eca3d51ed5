"""kubernetes_asyncio without its 768 model and 66 API modules: `install`, called by the command
before anything imports the library.

What lives here: `install`, which puts stand-ins for the packages `kubernetes_asyncio`,
`kubernetes_asyncio.client` and `kubernetes_asyncio.client.models` in `sys.modules`. Each finds
its submodules where the real package does and loads them as they are asked for (`ApiClient`
and `Configuration` from their own modules); any other name (`V1Pod`, `CoreV1Api`,
`__version__`) runs the package's own `__init__` into the stand-in on first use, so it answers
as the real package would. The provider uses only `ApiClient` (raw responses, no models), the
`Configuration` and the kubeconfig loaders, while importing the package loads every model: about
32 MB of the provider's resident memory (issue 32: the kubelet's density test allows 100 MiB).
Must not: change what any name of the library is; run after the library was imported (it then
does nothing).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

LEAN_PACKAGES = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")
# Names `kubernetes_asyncio.config` imports from the client package, by the module that defines them.
DEFINED_IN = {"ApiClient": "api_client", "Configuration": "configuration"}


def _stand_in(name: str) -> types.ModuleType:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an installed package")
    module = types.ModuleType(name)
    module.__spec__ = spec
    module.__file__ = spec.origin
    module.__path__ = list(spec.submodule_search_locations)
    origin = spec.origin
    loaded = False

    def __getattr__(attr: str) -> Any:
        nonlocal loaded
        if attr.startswith("__") and attr != "__version__":
            raise AttributeError(attr)
        if attr in DEFINED_IN and name == "kubernetes_asyncio.client":
            return getattr(importlib.import_module(f"{name}.{DEFINED_IN[attr]}"), attr)
        if importlib.util.find_spec(f"{name}.{attr}") is not None:
            return importlib.import_module(f"{name}.{attr}")
        if not loaded:
            loaded = True
            with open(origin, encoding="utf-8") as source:
                exec(compile(source.read(), origin, "exec"), module.__dict__)
            return getattr(module, attr)
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


def install() -> None:
    """The stand-ins, unless the library is already imported in this process."""
    if any(name in sys.modules for name in LEAN_PACKAGES):
        return
    for name in LEAN_PACKAGES:
        sys.modules[name] = _stand_in(name)
