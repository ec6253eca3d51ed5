"""requirements/image.lock, the image's pinned dependencies (scripts/lock-requirements.sh).

Checked: every requirement is pinned to one version with sha256 hashes (what the Dockerfile's
`pip install --require-hashes` needs), and every dependency of pyproject.toml is pinned to a
version its specifier allows, so a changed dependency cannot slip past a stale lock. The
Dockerfile's `pip check` checks the rest (the dependencies of the dependencies) at build time.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]


def _pins(path: Path) -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) of each requirement of a pip-compile lock file."""
    text = re.sub(r"\\\n", " ", path.read_text())
    pins: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement, *options = line.split()
            name, sep, version = requirement.partition("==")
            assert sep and version, f"{line!r} is not pinned with =="
            hashes = [o.removeprefix("--hash=sha256:") for o in options if o.startswith("--hash=sha256:")]
            assert len(hashes) == len(options) and hashes, f"{name}: {options}"
            pins[canonicalize_name(name)] = (version, hashes)
    return pins


def test_every_pin_has_hashes_and_every_dependency_is_pinned_within_its_specifier() -> None:
    pins = _pins(REPO / "requirements" / "image.lock")
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for _, hashes in pins.values() for h in hashes)
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for dependency in map(Requirement, dependencies):
        name = canonicalize_name(dependency.name)
        assert name in pins, f"{name} of pyproject.toml is not in requirements/image.lock: make lock"
        assert dependency.specifier.contains(pins[name][0]), f"{name}=={pins[name][0]} vs {dependency}"


def test_the_release_tools_are_pinned_with_hashes_too() -> None:
    pins = _pins(REPO / "requirements" / "release-tools.lock")
    wanted = (REPO / "requirements" / "release-tools.in").read_text().split("\n")
    for line in (w.strip() for w in wanted if w.strip() and not w.startswith("#")):
        name, version = line.split("==")
        assert pins[canonicalize_name(name)][0] == version, line
