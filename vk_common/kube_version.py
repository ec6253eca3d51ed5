"""The one Kubernetes version the project supports and tests, read from `vk_common/KUBE_VERSION`.

What lives here: `KUBE_VERSION` ("v1.37.2"), its parts `KUBE_MAJOR` / `KUBE_MINOR` (strings, as
the `/version` document carries them) and `KUBE_MINOR_VERSION` ("1.37"). The repository's
top-level `KUBE_VERSION` is a link to the same file, which the build scripts read; the Go
module in `tools/kube` is generated from it. Must not: import anything of the project.
"""

from __future__ import annotations

from pathlib import Path

KUBE_VERSION = (Path(__file__).with_name("KUBE_VERSION").read_text()).strip()
KUBE_MAJOR, KUBE_MINOR = KUBE_VERSION.removeprefix("v").split(".")[:2]
KUBE_MINOR_VERSION = f"{KUBE_MAJOR}.{KUBE_MINOR}"
