"""Validation of a pod's `spec.hostnameOverride`, as pkg/apis/core/validation's
validatePodHostName: not with setHostnameAsFQDN, not with hostNetwork, at most 64 bytes, and a
DNS-1123 subdomain.
Must not: default the hostname or compute the one a pod gets (the node does).
"""

from __future__ import annotations

from typing import Any

from vk_sandbox.api.validation.field import cause, forbidden, invalid
from vk_sandbox.api.validation.names import dns1123_subdomain_errors

_PATH = "spec.hostnameOverride"


def hostname_override_errors(spec: dict[str, Any]) -> list[dict[str, str]]:
    override = spec.get("hostnameOverride")
    if override is None:
        return []
    out = []
    if spec.get("setHostnameAsFQDN") is True:
        out.append(forbidden(_PATH, "may not be specified when setHostnameAsFQDN is true"))
    if spec.get("hostNetwork") is True:
        out.append(forbidden(_PATH, "may not be specified when hostNetwork is true"))
    if len(str(override).encode()) > 64:
        out.append(cause("FieldValueTooLong", _PATH, "Too long: may not be more than 64 bytes"))
    out.extend(invalid(_PATH, override, msg) for msg in dns1123_subdomain_errors(str(override)))
    return out
