"""A pod's securityContext as the kubelet reads it (pure): admission, profiles, resolved security.

What lives here: the admission of a pod's security fields as the kubelet admits them or as the
runtime can honour them (`check_security`: supplementalGroupsPolicy Strict, AppArmor on a host
without it, hostUsers false without user namespaces, procMount Unmasked, Unconfined and
Localhost seccomp / AppArmor profiles against `docker.allow.unconfined` and
`docker.seccompProfileRoot`; raising `PodSpecRefused` with the field path or the kubelet's
rejection reason); the kubelet's effective securityContext of a container (the container's
over the pod's) and the profiles it picks (`seccomp_profile`, `apparmor_profile`,
`seccomp_localhost_file`: the profile's path under the root); runAsNonRoot verified as the
kubelet does against the image's user (`verify_run_as_non_root`); and one container's
`ContainerSecurity` (`container_security`: user and groups, capabilities in the API's spelling
without `CAP_`, read-only rootfs, privileged, no-new-privileges, profiles, SELinux labels,
unmasked /proc). Must not: call an engine or touch the filesystem: the runtime reads a
Localhost seccomp profile from the path given, and the image's user comes in.

Upstream: pkg/kubelet/kuberuntime/security_context.go, security_context_others.go,
helpers.go (getSeccompProfile), pkg/securitycontext/util.go, pkg/security/apparmor/,
pkg/kubelet/lifecycle/predicate.go.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from typing import Any

from vk_common.objects import annotations_of, pod_containers
from vk_common.objects import spec as spec_of
from vk_provider.config import DockerConfig
from vk_provider.runtime.configs import (
    LOCALHOST,
    RUNTIME_DEFAULT,
    UNCONFINED,
    ContainerSecurity,
    HostSecurity,
)
from vk_provider.runtime.configs import SecurityProfile as Profile
from vk_provider.runtime.types import ContainerConfigError, PodRejected, PodSpecRefused

# pkg/kubelet/lifecycle/predicate.go and handlers.go: the kubelet's admission reasons.
SUPPLEMENTAL_GROUPS_POLICY_NOT_SUPPORTED = "SupplementalGroupsPolicyNotSupported"
APPARMOR_NOT_ADMITTED = "AppArmor"
# k8s.io/api/core/v1 annotation_key_constants.go: the deprecated AppArmor annotations.
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
APPARMOR_ANNOTATION_RUNTIME_DEFAULT = "runtime/default"
APPARMOR_ANNOTATION_UNCONFINED = "unconfined"
APPARMOR_ANNOTATION_LOCALHOST = "localhost/"

# pkg/securitycontext/util.go DetermineEffectiveSecurityContext: the pod's fields a container
# inherits, and the container's fields that replace them.
_POD_SC_FIELDS = ("seLinuxOptions", "windowsOptions", "runAsUser", "runAsGroup", "runAsNonRoot")
_CONTAINER_SC_FIELDS = (
    *_POD_SC_FIELDS,
    "capabilities",
    "privileged",
    "readOnlyRootFilesystem",
    "allowPrivilegeEscalation",
    "procMount",
)
MAX_USER_ID = 2**31 - 1  # apimachinery validation IsValidUserID: 0..math.MaxInt32
_NUMERIC_USER = re.compile(r"[+-]?[0-9]{1,19}")  # strconv.ParseInt(user, 10, 64)
SELINUX_KEYS = ("user", "role", "type", "level")  # the SELinuxOptions fields, in the CRI's order


def cap_name(cap: str) -> str:
    """A capability in the API's spelling: `NET_ADMIN` (`CAP_` dropped, upper case), `ALL`."""
    upper = cap.upper()
    return upper[4:] if upper.startswith("CAP_") else upper


def _pod_sc(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return spec_of(pod).get("securityContext") or {}


def effective_security_context(pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, Any]:
    """The kubelet's effective securityContext of a container: the container's over the pod's."""
    pod_sc = spec_of(pod).get("securityContext")
    sc = container.get("securityContext")
    if pod_sc is None:
        return dict(sc or {})
    out = {k: pod_sc[k] for k in _POD_SC_FIELDS if pod_sc.get(k) is not None}
    out.update({k: (sc or {})[k] for k in _CONTAINER_SC_FIELDS if (sc or {}).get(k) is not None})
    return out


def seccomp_profile(pod: Mapping[str, Any], container: Mapping[str, Any], path: str) -> Profile | None:
    """The container's seccompProfile, else the pod's; None: the engine's default.

    Upstream: pkg/kubelet/kuberuntime/helpers.go getSeccompProfile (no annotations since 1.27).
    Without one the kubelet's default is Unconfined unless `seccompDefault`; Docker applies
    its default profile, so an unset profile behaves as the kubelet with `seccompDefault: true`.
    """
    for field, sc in (
        (f"{path}.securityContext.seccompProfile", container.get("securityContext") or {}),
        ("spec.securityContext.seccompProfile", _pod_sc(pod)),
    ):
        profile = sc.get("seccompProfile")
        if profile is not None:
            return Profile(str(profile.get("type", "")), str(profile.get("localhostProfile") or ""), field)
    return None


def _apparmor_annotation(pod: Mapping[str, Any], name: str, field: str) -> Profile | None:
    value = annotations_of(pod).get(APPARMOR_ANNOTATION_PREFIX + name)
    if value is None:
        return None
    if value == APPARMOR_ANNOTATION_RUNTIME_DEFAULT:
        return Profile(RUNTIME_DEFAULT, "", field)
    if value == APPARMOR_ANNOTATION_UNCONFINED:
        return Profile(UNCONFINED, "", field)
    if str(value).startswith(APPARMOR_ANNOTATION_LOCALHOST):
        return Profile(LOCALHOST, str(value).removeprefix(APPARMOR_ANNOTATION_LOCALHOST), field)
    return None


def apparmor_profile(pod: Mapping[str, Any], container: Mapping[str, Any], path: str) -> Profile | None:
    """The container's appArmorProfile, else the deprecated annotation, else the pod's.

    Upstream: pkg/security/apparmor/helpers.go GetProfile.
    """
    name = str(container.get("name", ""))
    profile = (container.get("securityContext") or {}).get("appArmorProfile")
    if profile is not None:
        field = f"{path}.securityContext.appArmorProfile"
        return Profile(str(profile.get("type", "")), str(profile.get("localhostProfile") or ""), field)
    annotated = _apparmor_annotation(pod, name, f"metadata.annotations[{APPARMOR_ANNOTATION_PREFIX}{name}]")
    if annotated is not None:
        return annotated
    profile = _pod_sc(pod).get("appArmorProfile")
    if profile is not None:
        field = "spec.securityContext.appArmorProfile"
        return Profile(str(profile.get("type", "")), str(profile.get("localhostProfile") or ""), field)
    return None


def _refuse(field: str, what: str, key: str) -> PodSpecRefused:
    return PodSpecRefused(f"{field}: {what} are not allowed on this node ({key})")


def _reject(reason: str, message: str) -> PodRejected:
    """A pod the kubelet's admission rejects: Failed with its reason and message."""
    return PodRejected(reason, message)


def _check_pod_level(pod: Mapping[str, Any], host: HostSecurity) -> None:
    spec = spec_of(pod)
    if _pod_sc(pod).get("supplementalGroupsPolicy") == "Strict":
        # predicate.go: a node whose status.features.supplementalGroupsPolicy is not true
        # (Docker always merges the image's /etc/group groups of the user) rejects Strict.
        raise _reject(
            SUPPLEMENTAL_GROUPS_POLICY_NOT_SUPPORTED,
            "SupplementalGroupsPolicy=Strict is not supported in this node",
        )
    if spec.get("hostUsers") is False and not host.userns:
        raise PodSpecRefused(
            "spec.hostUsers: pods in their own user namespace need a Docker engine with userns-remap "
            "(this engine runs containers in the host's user namespace)"
        )


def _check_profiles(pod: Mapping[str, Any], config: DockerConfig, host: HostSecurity) -> None:
    apparmor_wanted = False
    for path, c in pod_containers(pod):
        seccomp = seccomp_profile(pod, c, path)
        if seccomp is not None and seccomp.type == UNCONFINED and not config.allow.unconfined:
            raise _refuse(seccomp.field, "Unconfined seccomp profiles", "docker.allow.unconfined")
        if seccomp is not None and seccomp.type == LOCALHOST and not config.seccomp_profile_root:
            raise _refuse(seccomp.field, "Localhost seccomp profiles", "docker.seccompProfileRoot")
        apparmor = apparmor_profile(pod, c, path)
        if apparmor is None:
            continue
        if apparmor.type != UNCONFINED:
            apparmor_wanted = True
        elif host.apparmor and not config.allow.unconfined:
            raise _refuse(apparmor.field, "Unconfined AppArmor profiles", "docker.allow.unconfined")
    pod_apparmor = _pod_sc(pod).get("appArmorProfile") or {}
    if (apparmor_wanted or pod_apparmor.get("type", UNCONFINED) != UNCONFINED) and not host.apparmor:
        # handlers.go appArmorAdmitHandler, apparmor/validate.go validateHost.
        raise _reject(APPARMOR_NOT_ADMITTED, "Cannot enforce AppArmor: AppArmor is not enabled on the host")


def _check_proc_mount(pod: Mapping[str, Any], config: DockerConfig) -> None:
    if config.allow.unconfined:
        return
    for path, c in pod_containers(pod):
        if (effective_security_context(pod, c).get("procMount") or "Default") == "Unmasked":
            raise _refuse(
                f"{path}.securityContext.procMount", "Unmasked /proc mounts", "docker.allow.unconfined"
            )


def check_security(pod: Mapping[str, Any], config: DockerConfig, host: HostSecurity) -> None:
    """Refuse the pod's security fields the kubelet's admission rejects on this node, Docker
    cannot honour, or the node's configuration does not allow; nothing is created before."""
    _check_pod_level(pod, host)
    _check_profiles(pod, config, host)
    _check_proc_mount(pod, config)


def seccomp_localhost_file(
    pod: Mapping[str, Any], container: Mapping[str, Any], path: str, root: str
) -> tuple[str, str] | None:
    """(field, host file) of a Localhost seccomp profile: `<root>/<localhostProfile>` as the
    kubelet joins it (fieldSeccompProfile); ContainerConfigError for an empty or escaping name,
    PodSpecRefused without a profile root."""
    profile = seccomp_profile(pod, container, path)
    if profile is None or profile.type != LOCALHOST:
        return None
    field = f"{profile.field}.localhostProfile"
    if not root:
        raise _refuse(profile.field, "Localhost seccomp profiles", "docker.seccompProfileRoot")
    if not profile.localhost:
        raise ContainerConfigError(
            f"{field}: localhostProfile must be set if seccompProfile type is Localhost."
        )
    joined = posixpath.normpath(posixpath.join(root, profile.localhost))
    if posixpath.isabs(profile.localhost) or not joined.startswith(posixpath.normpath(root) + "/"):
        raise ContainerConfigError(
            f"{field}: {json.dumps(profile.localhost)} must be a path under the profile root"
        )
    return field, joined


def image_user_id(image_user: str | None) -> tuple[int | None, str]:
    """(uid, user name) of an image's `Config.User`, as the kubelet gets it from the CRI.

    The part before `:`; numeric is a uid, anything else a user name; none at all is root
    (containerd's getUserFromImage, then kuberuntime's getImageUser).
    """
    user = (image_user or "").split(":")[0]
    if not user:
        return 0, ""
    if _NUMERIC_USER.fullmatch(user) and -(2**63) <= int(user) < 2**63:
        return int(user), ""
    return None, user


def needs_image_user(pod: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    """Whether the image's user matters: no runAsUser, and runAsNonRoot or a runAsGroup."""
    sc = effective_security_context(pod, container)
    return sc.get("runAsUser") is None and (
        sc.get("runAsNonRoot") is True or sc.get("runAsGroup") is not None
    )


def verify_run_as_non_root(
    pod: Mapping[str, Any], container: Mapping[str, Any], image_user: str | None
) -> str | None:
    """The kubelet's verifyRunAsNonRoot: why the container must not run, or None.

    Upstream: pkg/kubelet/kuberuntime/security_context_others.go. `image_user` is the image's
    `Config.User` ("" when unset: root; None when it was not looked up: taken as root too).
    """
    sc = effective_security_context(pod, container)
    if sc.get("runAsNonRoot") is not True:
        return None
    meta = pod.get("metadata") or {}
    pod_name = f"{meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})"  # format.Pod
    where = f"(pod: {json.dumps(pod_name)}, container: {container.get('name', '')})"  # %q of it
    if sc.get("runAsUser") is not None:
        if int(sc["runAsUser"]) == 0:
            return f"container's runAsUser breaks non-root policy {where}"
        return None
    uid, username = image_user_id(image_user)
    if uid is None:
        return (
            f"container has runAsNonRoot and image has non-numeric user ({username}), "
            f"cannot verify user is non-root {where}"
        )
    if uid == 0:
        return f"container has runAsNonRoot and image will run as root {where}"
    if not 0 <= uid <= MAX_USER_ID:
        return (
            f"container has runAsNonRoot and image has an invalid user id ({uid}). "
            f"(Must be 1-({MAX_USER_ID})): must be between 0 and {MAX_USER_ID}, inclusive {where}"
        )
    return None


def _user_and_groups(
    pod: Mapping[str, Any], sc: Mapping[str, Any], image_user: str | None
) -> tuple[str, tuple[str, ...]]:
    """runAsUser/runAsGroup as the user to run as ("" the image's); fsGroup and
    supplementalGroups as the supplementary groups.

    The runtime adds the groups the image's /etc/group gives the user, as the kubelet's default
    supplementalGroupsPolicy Merge (security_context.go determineEffectiveSecurityContext).
    """
    user = None if sc.get("runAsUser") is None else int(sc["runAsUser"])
    group = None if sc.get("runAsGroup") is None else int(sc["runAsGroup"])
    spelled = ""
    if user is not None:
        spelled = f"{user}:{group}" if group is not None else str(user)
    elif group is not None:
        uid, username = image_user_id(image_user)
        spelled = f"{uid if uid is not None else username}:{group}"
    pod_sc = _pod_sc(pod)
    groups = [str(pod_sc["fsGroup"])] if pod_sc.get("fsGroup") is not None else []
    groups += [str(g) for g in pod_sc.get("supplementalGroups") or []]
    return spelled, tuple(groups)


def _resolved_seccomp(
    pod: Mapping[str, Any], container: Mapping[str, Any], path: str, root: str
) -> Profile | None:
    """Unconfined, or Localhost with the profile file's path; None: the engine's default."""
    seccomp = seccomp_profile(pod, container, path)
    if seccomp is None or seccomp.type not in (UNCONFINED, LOCALHOST):
        return None  # RuntimeDefault, or none: the engine's default profile
    found = seccomp_localhost_file(pod, container, path, root)
    if found is None:
        return seccomp
    field, file = found
    return Profile(LOCALHOST, file, field)


def container_security(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    path: str,
    image_user: str | None = None,
    seccomp_root: str = "",
) -> ContainerSecurity:
    """The effective securityContext of the container at field `path`, resolved.

    Raises ContainerConfigError when runAsNonRoot forbids the user, or for a Localhost seccomp
    profile whose name is empty or leaves `seccomp_root` (`seccomp_localhost_file`). A
    runAsGroup without a runAsUser goes with the image's user (`image_user`), as the kubelet
    sets it. windowsOptions is ignored on Linux, as the kubelet does.
    """
    problem = verify_run_as_non_root(pod, container, image_user)
    if problem is not None:
        raise ContainerConfigError(problem)
    sc = effective_security_context(pod, container)
    user, groups = _user_and_groups(pod, sc, image_user)
    caps = sc.get("capabilities") or {}
    apparmor = apparmor_profile(pod, container, path)
    selinux = sc.get("seLinuxOptions") or {}
    return ContainerSecurity(
        user=user,
        groups=groups,
        cap_add=tuple(cap_name(c) for c in caps.get("add") or []),
        cap_drop=tuple(cap_name(c) for c in caps.get("drop") or []),
        privileged=bool(sc.get("privileged")),
        read_only_rootfs=bool(sc.get("readOnlyRootFilesystem")),
        # securitycontext.AddNoNewPrivileges: only an explicit false, never for a privileged one.
        no_new_privileges=sc.get("allowPrivilegeEscalation") is False and not sc.get("privileged"),
        seccomp=_resolved_seccomp(pod, container, path, seccomp_root),
        apparmor=apparmor if apparmor is not None and apparmor.type in (UNCONFINED, LOCALHOST) else None,
        selinux=tuple((key, str(selinux[key])) for key in SELINUX_KEYS if selinux.get(key)),
        unmasked_proc=sc.get("procMount") == "Unmasked",
    )
