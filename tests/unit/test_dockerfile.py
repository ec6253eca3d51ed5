"""The Dockerfile, checked statically (tests/integration/test_image.py builds and runs it).

What is checked: the entrypoint is the project's console script, it copies in only the
host-built wheels and the lock file (the build context holds nothing else) and installs the
locked wheels without an index, checking their hashes, it runs as a non-root user, the default
command uses the configuration path the Helm chart mounts, the image carries the OCI labels,
and the image bakes in no secrets. That the version label is the package's is
test_version.py's.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import yaml

from vk_provider.config import Config
from vk_provider.node.build import kubelet_port

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "vk-provider"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    result = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def _final_stage() -> list[tuple[str, str]]:
    instructions = _instructions()
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


def _only(stage: list[tuple[str, str]], keyword: str) -> str:
    found = [rest for k, rest in stage if k == keyword]
    assert len(found) == 1, f"{len(found)} {keyword} instructions in the final stage"
    return found[0]


def _project() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return project


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore rule: the last matching pattern wins; `!` re-includes."""
    ignored = False
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.removeprefix("!").rstrip("/")
        if any(fnmatch.fnmatch(p, pattern) for p in prefixes):
            ignored = not negate
    return ignored


def _dockerignore() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_entrypoint_is_the_console_script_and_cmd_is_the_charts_config_path() -> None:
    stage = _final_stage()
    entrypoint = json.loads(_only(stage, "ENTRYPOINT"))
    command = json.loads(_only(stage, "CMD"))
    assert entrypoint == ["vk-provider"]
    assert _project()["scripts"]["vk-provider"] == "vk_cli.main:main"
    # The chart passes the same arguments, and mounts its ConfigMap (key config.yaml) there.
    deployment = (CHART / "templates" / "deployment.yaml").read_text()
    args_line = next(line for line in deployment.splitlines() if line.strip().startswith("args:"))
    assert yaml.safe_load(args_line.strip())["args"] == command
    config_path = command[command.index("--config") + 1]
    # The mounts live in _helpers.tpl (shared with the uninstall hook's Job).
    mounts = (CHART / "templates" / "_helpers.tpl").read_text()
    assert 'include "vk-provider.engineVolumeMounts"' in deployment
    mount = re.search(r"- name: config\s+mountPath: (\S+)", mounts)
    assert mount is not None
    assert config_path == f"{mount.group(1)}/config.yaml"
    configmap = (CHART / "templates" / "configmap.yaml").read_text()
    assert "config.yaml: |" in configmap


def test_only_the_wheels_and_the_lock_are_copied_in_and_the_build_checks_the_lock() -> None:
    """The build takes no sources and no package index: the wheels scripts/build-image.sh leaves
    in dist/wheels and requirements/image.lock are the whole build context, and pip installs
    the dependencies from the lock with --require-hashes, the project's wheel without
    dependencies, then checks that the lock satisfies them."""
    patterns = _dockerignore()
    sources = []
    for keyword, rest in _instructions():
        words = shlex.split(rest)
        if keyword == "COPY" and not any(w.startswith("--from") for w in words):
            sources += [w for w in words[:-1] if not w.startswith("--")]
    assert sources == ["requirements/image.lock", "dist/wheels"]
    assert not _ignored("dist/wheels/vk_provider-0.1.0-py3-none-any.whl", patterns)
    assert not _ignored("requirements/image.lock", patterns)
    for unwanted in (
        ".venv",
        ".git",
        "tests",
        "state",
        ".sandbox",
        "vk_provider",
        "dist/other",
        "requirements/x",
    ):
        assert _ignored(unwanted, patterns), f"{unwanted} must stay out of the build context"
    assert "-w dist/wheels" in (REPO / "scripts" / "build-image.sh").read_text()
    run = next(rest for keyword, rest in _final_stage() if keyword == "RUN" and "pip install" in rest)
    locked, project, check = (step.strip() for step in run.split("&&")[1:4])
    assert "--no-index" in locked and "--find-links /tmp/wheels" in locked
    assert "--require-hashes --no-deps -r /tmp/image.lock" in locked
    assert "--no-index" in project and "--no-deps" in project and '"vk-provider==${VERSION}"' in project
    assert check.endswith("pip check")


def test_the_image_runs_as_a_non_root_user() -> None:
    assert _only(_final_stage(), "USER") == "10001:10001"


def test_exposed_port_is_the_kubelet_api_port() -> None:
    default_port = kubelet_port(Config().kubelet_server.listen)
    assert _only(_final_stage(), "EXPOSE") == str(default_port)


def test_base_image_is_python_slim_of_the_supported_version() -> None:
    base = next(rest for keyword, rest in _instructions() if keyword == "ARG" and "PYTHON_IMAGE" in rest)
    assert base == "PYTHON_IMAGE=python:3.11-slim"
    assert _project()["requires-python"] == ">=3.11"
    froms = [rest for keyword, rest in _instructions() if keyword == "FROM"]
    assert froms == ["${PYTHON_IMAGE}"]


def test_labels_carry_the_oci_keys() -> None:
    labels = _only(_final_stage(), "LABEL")
    for key in ("title", "description", "version", "licenses"):
        assert f"org.opencontainers.image.{key}=" in labels
    assert 'org.opencontainers.image.version="${VERSION}"' in labels


def test_no_secrets_or_dev_tools_are_baked_in() -> None:
    for keyword, rest in _instructions():
        if keyword in ("ENV", "ARG"):
            assert not re.search(r"(?i)(token|password|secret|_key\b|credential)", rest), rest
        if keyword == "RUN":
            assert "[dev]" not in rest and "-e " not in rest, rest
    if not any(keyword == "USER" for keyword, _ in _final_stage()):
        assert "runs as root on purpose" in (REPO / "Dockerfile").read_text(), "say why it runs as root"
