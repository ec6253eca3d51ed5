"""Host facts from Docker's `info`: pure mapping to `RuntimeInfo`.

What lives here: `runtime_info(info, storage_bytes, runtimes)` (with `runtime_handlers`, the
RuntimeClass handlers the engine has a runtime for), the machine → GOARCH spelling, and
`engine_name`, which engine a `version` answer comes from (Docker or Podman's API service).
Must not: call Docker or the filesystem (the caller measures the storage).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vk_provider.runtime.types import RuntimeInfo

# uname -m (what Docker reports as Architecture) → Go's GOARCH, which Kubernetes shows.
_GOARCH = {
    "x86_64": "amd64",
    "amd64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "armv7l": "arm",
    "armv6l": "arm",
    "armhf": "arm",
    "i386": "386",
    "i686": "386",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
    "riscv64": "riscv64",
}


def goarch(machine: str) -> str:
    return _GOARCH.get(machine.lower(), machine.lower())


def engine_name(version: Mapping[str, Any]) -> str:
    """ "podman" when the engine's `version` lists a Podman component (its API service answers
    with "Podman Engine"), else "docker"."""
    names = [str(c.get("Name") or "") for c in version.get("Components") or [] if isinstance(c, Mapping)]
    return "podman" if any(n.lower().startswith("podman") for n in names) else "docker"


def runtime_handlers(info: Mapping[str, Any], runtimes: Mapping[str, str]) -> tuple[str, ...]:
    """The RuntimeClass handlers the engine can run: "" (its default runtime), then each
    configured handler (`docker.runtimes`) whose runtime `info`'s Runtimes lists, sorted."""
    known = info.get("Runtimes") or {}
    return ("", *sorted(h for h, runtime in runtimes.items() if runtime in known))


def runtime_info(info: Mapping[str, Any], storage_bytes: int, runtimes: Mapping[str, str]) -> RuntimeInfo:
    """`runtimes`: the configured RuntimeClass handlers and their engine runtimes."""
    return RuntimeInfo(
        cpus=int(info.get("NCPU") or 0),
        memory_bytes=int(info.get("MemTotal") or 0),
        storage_bytes=storage_bytes,
        os_type=str(info.get("OSType") or "linux"),
        architecture=goarch(str(info.get("Architecture") or "")),
        kernel_version=str(info.get("KernelVersion") or ""),
        os_image=str(info.get("OperatingSystem") or ""),
        runtime_version=f"docker://{info.get('ServerVersion') or 'unknown'}",
        hostname=str(info.get("Name") or ""),
        runtime_handlers=runtime_handlers(info, runtimes),
    )
