"""The four top-level packages, and the provider's layers, keep to their floors (docs/architecture.md).

`vk_common` (Kubernetes vocabulary and process utilities) imports neither of the others; the
provider (`vk_provider`) and the sandbox (`vk_sandbox`) import `vk_common` and never each other,
so they meet only over HTTP; only the command line (`vk_cli`) imports both. Every import counts,
inside functions and under `TYPE_CHECKING` too. A process the sandbox starts (`python -m vk_cli
run`) is not an import.

Inside the provider a module imports only its own layer or lower ones. From the ground up:
`vk_common`; the provider's ground (its configuration, `metrics.py`, `wire.py`, the version); the kube
client (`kube/`); the runtime (`runtime/`: engine verbs over the configurations it is given);
kuberuntime (`kuberuntime/`: a pod compiled into those configurations); the node's parts
(`pods/`, `status/`, `probes/`, `node/`, `kubeletapi/`, `static/`); the application (`app.py`
and the commands' helpers).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ALLOWED = {
    "vk_common": {"vk_common"},
    "vk_provider": {"vk_common", "vk_provider"},
    "vk_sandbox": {"vk_common", "vk_sandbox"},
    "vk_cli": {"vk_common", "vk_provider", "vk_sandbox", "vk_cli"},
}


PROVIDER_LAYERS = {
    "config": 1,
    "config_kinds": 1,
    "config_load": 1,
    "metrics": 1,
    "wire": 1,
    "kube": 2,
    "runtime": 3,
    "kuberuntime": 4,
    "pods": 5,
    "status": 5,
    "probes": 5,
    "node": 5,
    "kubeletapi": 5,
    "static": 5,
    "app": 6,
    "node_removal": 6,
    "config_files": 6,
    "chart_schema": 6,
    "chart_readme": 6,
}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _imported_packages(path: Path) -> set[str]:
    return {name.split(".")[0] for name in _imports(path)} & set(ALLOWED)


def _provider_layer(parts: tuple[str, ...]) -> int | None:
    """The layer of module `vk_provider.<parts>`; None for a name that is no module of it."""
    if parts[0] != "vk_provider":
        return 0 if parts[0] == "vk_common" else None
    if len(parts) == 1:
        return 1  # the package itself: __version__
    return PROVIDER_LAYERS.get(parts[1])


def test_each_package_imports_only_its_own_floor_and_the_ones_below() -> None:
    wrong = [
        f"{path.relative_to(REPO)} imports {sorted(bad)}"
        for package, allowed in ALLOWED.items()
        for path in sorted((REPO / package).rglob("*.py"))
        if (bad := _imported_packages(path) - allowed)
    ]
    assert not wrong, "\n".join(wrong)


def test_every_package_is_checked() -> None:
    packages = {p.parent.name for p in REPO.glob("vk_*/__init__.py")}
    assert packages == set(ALLOWED)


def test_every_provider_module_has_a_layer() -> None:
    root = REPO / "vk_provider"
    modules = {p.stem for p in root.glob("*.py") if p.stem != "__init__"}
    modules |= {p.parent.name for p in root.glob("*/__init__.py")}
    assert modules <= set(PROVIDER_LAYERS), sorted(modules - set(PROVIDER_LAYERS))


def test_no_provider_module_imports_a_layer_above_its_own() -> None:
    wrong = []
    for path in sorted((REPO / "vk_provider").rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        own = _provider_layer(parts[:-1] if parts[-1] == "__init__" else parts)
        if own is None:
            continue
        for name in sorted(_imports(path)):
            layer = _provider_layer(tuple(name.split(".")))
            if layer is not None and layer > own:
                wrong.append(f"{path.relative_to(REPO)} (layer {own}) imports {name} (layer {layer})")
    assert not wrong, "\n".join(wrong)
