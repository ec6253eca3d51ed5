"""Validation of a pod's `securityContext.sysctls`, as pkg/apis/core/validation's validateSysctls:
a name is required, must be a sysctl name (at most 253 characters, segments of lowercase letters,
digits, `-` and `_` joined by `.` or `/`) and may not repeat. The checks of namespaced sysctls
against hostNetwork and hostIPC (ValidateHostSysctl) are not made here.
Must not: decide which sysctls a node allows (the kubelet's admission does, on the node).
"""

from __future__ import annotations

import re
from typing import Any

from vk_sandbox.api.validation.field import duplicate, invalid, required

_SEGMENT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_NAME = re.compile(f"^({_SEGMENT}[\\./])*{_SEGMENT}$")
_MAX_LENGTH = 253
_MESSAGE = f"must have at most {_MAX_LENGTH} characters and match regex {_NAME.pattern}"


def sysctl_errors(spec: dict[str, Any]) -> list[dict[str, str]]:
    context = spec.get("securityContext")
    sysctls = context.get("sysctls") if isinstance(context, dict) else None
    out: list[dict[str, str]] = []
    names: set[str] = set()
    for i, sysctl in enumerate(sysctls if isinstance(sysctls, list) else []):
        name = sysctl.get("name") if isinstance(sysctl, dict) else None
        path = f"spec.securityContext.sysctls[{i}].name"
        if not name:
            out.append(required(path))
            continue
        if len(str(name)) > _MAX_LENGTH or not _NAME.match(str(name)):
            out.append(invalid(path, name, _MESSAGE))
        elif name in names:
            out.append(duplicate(path, name))
        names.add(str(name))
    return out
