"""The four top-level packages keep to their floors (docs/architecture.md, "The packages").

`vk_common` (Kubernetes vocabulary and process utilities) imports neither of the others; the
provider (`vk_provider`) and the sandbox (`vk_sandbox`) import `vk_common` and never each other,
so they meet only over HTTP; only the command line (`vk_cli`) imports both. Every import counts,
inside functions and under `TYPE_CHECKING` too. A process the sandbox starts (`python -m vk_cli
run`) is not an import.
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


def _imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & set(ALLOWED)


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
