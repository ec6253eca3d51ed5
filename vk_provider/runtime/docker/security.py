"""A pod's securityContext → Docker (pure): admission, refusals and the container's create kwargs.

What lives here: the host's security facts from Docker's `info` (`host_security`: AppArmor,
SELinux, userns-remap); the admission of a pod's security fields as the kubelet admits them
or as Docker can honour them (`check_security`: supplementalGroupsPolicy Strict, AppArmor on
a host without it, hostUsers false, procMount Unmasked, Unconfined and Localhost seccomp /
AppArmor profiles against `docker.allow.unconfined` and `docker.seccompProfileRoot`; raising
`PodSpecRefused` with the field path or the kubelet's rejection reason); the kubelet's
effective securityContext of a container (the container's over the pod's) and the profiles
it picks (`seccomp_profile`, `apparmor_profile`, `seccomp_localhost_file`); runAsNonRoot
verified as the kubelet does against the image's user (`verify_run_as_non_root`); and one
container's security kwargs of docker-py's `containers.create` (`security_kwargs`: user and
groups, capabilities, read-only rootfs, privileged, `security_opt`). Must not: call Docker or
touch the filesystem; the shell reads a Localhost seccomp profile and passes its text in.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vk_common.objects import annotations_of, pod_containers
from vk_common.objects import spec as spec_of
from vk_provider.config import DockerConfig
from vk_provider.runtime.types import ContainerConfigError, PodRejected, PodSpecRefused

# pkg/kubelet/lifecycle/predicate.go and handlers.go: the kubelet's admission reasons.
SUPPLEMENTAL_GROUPS_POLICY_NOT_SUPPORTED = "SupplementalGroupsPolicyNotSupported"
APPARMOR_NOT_ADMITTED = "AppArmor"
# k8s.io/api/core/v1 annotation_key_constants.go: the deprecated AppArmor annotations.
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
APPARMOR_ANNOTATION_RUNTIME_DEFAULT = "runtime/default"
APPARMOR_ANNOTATION_UNCONFINED = "unconfined"
APPARMOR_ANNOTATION_LOCALHOST = "localhost/"
RUNTIME_DEFAULT, UNCONFINED, LOCALHOST = "RuntimeDefault", "Unconfined", "Localhost"

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
# SELinuxOptions field → the `label=` key of Docker's security options.
_SELINUX_LABELS = (("user", "user"), ("role", "role"), ("type", "type"), ("level", "level"))


@dataclass(frozen=True)
class HostSecurity:
    """What the engine's host enforces, from Docker's `info` `SecurityOptions`."""

    apparmor: bool = False
    selinux: bool = False
    userns: bool = False


def host_security(info: Mapping[str, Any]) -> HostSecurity:
    """`SecurityOptions` entries look like `name=apparmor`, `name=seccomp,profile=builtin`."""
    names = set()
    for option in info.get("SecurityOptions") or []:
        for part in str(option).split(","):
            key, _, value = part.partition("=")
            if key == "name":
                names.add(value)
    return HostSecurity(apparmor="apparmor" in names, selinux="selinux" in names, userns="userns" in names)


def cap_name(cap: str) -> str:
    """A capability as Docker takes it: `NET_ADMIN` (the API's spelling; `CAP_` dropped), `ALL`."""
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


@dataclass(frozen=True)
class Profile:
    """A seccomp or AppArmor profile as the kubelet picks it, and the field it came from."""

    type: str
    localhost: str
    field: str


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


def _user_kwargs(pod: Mapping[str, Any], sc: Mapping[str, Any], image_user: str | None) -> dict[str, Any]:
    """runAsUser/runAsGroup as Docker's `user`; fsGroup and supplementalGroups as `group_add`.

    Docker adds the groups the image's /etc/group gives the user, as the kubelet's default
    supplementalGroupsPolicy Merge (security_context.go determineEffectiveSecurityContext).
    """
    out: dict[str, Any] = {}
    user = None if sc.get("runAsUser") is None else int(sc["runAsUser"])
    group = None if sc.get("runAsGroup") is None else int(sc["runAsGroup"])
    if user is not None:
        out["user"] = f"{user}:{group}" if group is not None else str(user)
    elif group is not None:
        uid, username = image_user_id(image_user)
        out["user"] = f"{uid if uid is not None else username}:{group}"
    pod_sc = _pod_sc(pod)
    groups = [str(pod_sc["fsGroup"])] if pod_sc.get("fsGroup") is not None else []
    groups += [str(g) for g in pod_sc.get("supplementalGroups") or []]
    if groups:
        out["group_add"] = groups
    return out


def _security_opts(
    pod: Mapping[str, Any], container: Mapping[str, Any], path: str, seccomp_json: str | None
) -> list[str]:
    """Docker's `security_opt`: no-new-privileges, seccomp, apparmor, SELinux labels, /proc paths."""
    sc = effective_security_context(pod, container)
    opts = []
    # securitycontext.AddNoNewPrivileges: only an explicit false, never for a privileged one.
    if sc.get("allowPrivilegeEscalation") is False and not sc.get("privileged"):
        opts.append("no-new-privileges")
    seccomp = seccomp_profile(pod, container, path)
    if seccomp is not None and seccomp.type == UNCONFINED:
        opts.append("seccomp=unconfined")
    elif seccomp is not None and seccomp.type == LOCALHOST and seccomp_json is not None:
        opts.append(f"seccomp={seccomp_json}")
    apparmor = apparmor_profile(pod, container, path)
    if apparmor is not None and apparmor.type == UNCONFINED:
        opts.append("apparmor=unconfined")
    elif apparmor is not None and apparmor.type == LOCALHOST:
        opts.append(f"apparmor={apparmor.localhost}")
    # Docker applies SELinux labels on an SELinux host and ignores them elsewhere, as the CRI does.
    selinux = sc.get("seLinuxOptions") or {}
    opts += [f"label={key}:{selinux[field]}" for field, key in _SELINUX_LABELS if selinux.get(field)]
    if sc.get("procMount") == "Unmasked":
        opts.append("systempaths=unconfined")  # no masked nor read-only /proc paths
    return opts


def security_kwargs(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    path: str,
    image_user: str | None = None,
    seccomp_json: str | None = None,
) -> dict[str, Any]:
    """The effective securityContext of the container at field `path` as create kwargs.

    Raises ContainerConfigError when runAsNonRoot forbids the user. A runAsGroup without a
    runAsUser goes with the image's user (`image_user`), as the kubelet sets it.
    `seccomp_json` is the text of its Localhost seccomp profile, read by the shell.
    windowsOptions is ignored on Linux, as the kubelet does.
    """
    problem = verify_run_as_non_root(pod, container, image_user)
    if problem is not None:
        raise ContainerConfigError(problem)
    sc = effective_security_context(pod, container)
    out = _user_kwargs(pod, sc, image_user)
    if sc.get("readOnlyRootFilesystem"):
        out["read_only"] = True
    if sc.get("privileged"):
        out["privileged"] = True
    caps = sc.get("capabilities") or {}
    if caps.get("add"):
        out["cap_add"] = [cap_name(c) for c in caps["add"]]
    if caps.get("drop"):
        out["cap_drop"] = [cap_name(c) for c in caps["drop"]]
    opts = _security_opts(pod, container, path, seccomp_json)
    if opts:
        out["security_opt"] = opts
    return out
