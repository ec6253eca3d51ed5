"""The files of a pod's API-backed volumes, as the kubelet's volume plugins compute them (pure).

What lives here: `api_volumes(pod)` (the configMap, secret, downwardAPI and projected volumes),
`referenced_objects(volume)`, `token_sources(pod, volume)`, `trust_bundle_queries(volume)` and
`pod_certificate_sources(volume)` (what must be fetched first: ConfigMaps and Secrets,
TokenRequests, ClusterTrustBundles, pod certificates),
and `volume_files(pod, volume, fetched, node_allocatable, ownership=…)`, the payload of one
volume: its files with their content, mode and, when the writer can change ownership, the
owner the kubelet gives them (`fs_group`: the pod's fsGroup owns every file, group-readable;
`fs_user`: the one runAsUser of all containers owns service account tokens, mode 0600), so
a non-root container reads what the pod asked for. A missing non-optional object or key raises
`VolumeSetupError` with the kubelet's message, which `failed_mount_message` turns into the
FailedMount Event's text.
Must not: fetch anything, touch the filesystem, or log values (they may be secrets).

Upstream: pkg/volume/configmap/configmap.go and pkg/volume/secret/secret.go (MakePayload),
pkg/volume/downwardapi/downwardapi.go (CollectData), pkg/volume/projected/projected.go
(collectData), pkg/kubelet/token/token_manager.go,
pkg/kubelet/clustertrustbundle/clustertrustbundle_manager.go (the trust anchors of a
clusterTrustBundle source, deduplicated), pkg/volume/volume_linux.go
(SetVolumeOwnership), pkg/volume/util/util.go (FsUserFrom).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vk_common.objects import uid as uid_of
from vk_provider.pods.env import PodAddresses, field_value, resource_value
from vk_provider.runtime.types import API_VOLUME_TYPES, ContainerConfigError, VolumeFile

DEFAULT_MODE = 0o644  # the API's default for every one of these volumes
DEFAULT_TOKEN_SECONDS = 3600  # the API's default for serviceAccountToken projections
OWNED_TOKEN_MODE = 0o600  # projected.go: a token, trust bundle or pod certificate with an fsUser or fsGroup
FS_GROUP_FILE_BITS = 0o440  # volume_linux.go roMask: what fsGroup adds to a read-only volume's files

# A fetched ConfigMap or Secret, by (kind, name) with kind "configmap" or "secret"; None: not found.
Objects = Mapping[tuple[str, str], Mapping[str, Any] | None]


class VolumeSetupError(Exception):
    """The volume cannot be set up now; `str()` is the kubelet's error text."""


@dataclass(frozen=True)
class TokenSource:
    """One serviceAccountToken projection: what the TokenRequest asks for."""

    service_account: str
    audience: str  # "": the apiserver's default audiences
    expiration_seconds: int


@dataclass(frozen=True)
class TrustBundleQuery:
    """One clusterTrustBundle projection: the ClusterTrustBundles it selects, by `name`, or by
    `signer` and `selector` (a label selector string; None: the source has none, which
    matches nothing, as the kubelet's LabelSelectorAsSelector(nil))."""

    name: str
    signer: str = ""
    selector: str | None = None


@dataclass(frozen=True)
class Fetched:
    """What the I/O layer fetched for a pod: objects, tokens, and the errors of failed token
    requests; the ClusterTrustBundles each query found ([] for a name that does not exist),
    and the errors of failed lookups."""

    objects: Objects
    tokens: Mapping[TokenSource, str]
    token_errors: Mapping[TokenSource, str]
    trust_bundles: Mapping[TrustBundleQuery, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    trust_bundle_errors: Mapping[TrustBundleQuery, str] = field(default_factory=dict)
    # podCertificate sources by (volume name, source index): (key PEM, chain PEM), or the error.
    pod_certificates: Mapping[tuple[str, int], tuple[bytes, bytes]] = field(default_factory=dict)
    pod_certificate_errors: Mapping[tuple[str, int], str] = field(default_factory=dict)


def api_volumes(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [v for v in (pod.get("spec") or {}).get("volumes") or [] if any(t in v for t in API_VOLUME_TYPES)]


def _sources(volume: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A volume as a list of projection sources (a plain volume is a projection of one source)."""
    if "projected" in volume:
        return list((volume.get("projected") or {}).get("sources") or [])
    return [{k: volume.get(k) or {}} for k in ("configMap", "secret", "downwardAPI") if k in volume]


def referenced_objects(volume: Mapping[str, Any]) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for source in _sources(volume):
        if "configMap" in source:
            out.add(("configmap", str((source["configMap"] or {}).get("name", ""))))
        if "secret" in source:
            ref = source["secret"] or {}
            out.add(("secret", str(ref.get("secretName") or ref.get("name") or "")))
    return out


def _service_account(pod: Mapping[str, Any]) -> str:
    spec = pod.get("spec") or {}
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")


def _token_source(pod: Mapping[str, Any], projection: Mapping[str, Any]) -> TokenSource:
    return TokenSource(
        service_account=_service_account(pod),
        audience=str(projection.get("audience") or ""),
        expiration_seconds=int(projection.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS),
    )


def token_sources(pod: Mapping[str, Any], volume: Mapping[str, Any]) -> list[TokenSource]:
    return [
        _token_source(pod, s["serviceAccountToken"] or {})
        for s in _sources(volume)
        if "serviceAccountToken" in s
    ]


def _selector_string(selector: Mapping[str, Any]) -> str:
    """A metav1.LabelSelector as the apiserver's `labelSelector` parameter (LabelSelectorAsSelector)."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for requirement in selector.get("matchExpressions") or []:
        key, op = str(requirement.get("key", "")), str(requirement.get("operator", ""))
        values = ",".join(sorted(str(v) for v in requirement.get("values") or []))
        parts.append(
            {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key}.get(
                op, f"!{key}"
            )
        )
    return ",".join(parts)


def _trust_bundle_query(projection: Mapping[str, Any]) -> TrustBundleQuery | None:
    """None: the source names neither a bundle nor a signer."""
    if projection.get("name"):
        return TrustBundleQuery(name=str(projection["name"]))
    if projection.get("signerName"):
        selector = projection.get("labelSelector")
        return TrustBundleQuery(
            name="",
            signer=str(projection["signerName"]),
            selector=None if selector is None else _selector_string(selector),
        )
    return None


def pod_certificate_sources(volume: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """The podCertificate sources of a projected volume, with their index among its sources."""
    return [(i, s["podCertificate"] or {}) for i, s in enumerate(_sources(volume)) if "podCertificate" in s]


def _pod_certificate_payload(
    volume: str, index: int, source: Mapping[str, Any], fetched: Fetched, mode: int, user: int | None
) -> list[VolumeFile]:
    """The files of one podCertificate source (projected.go): the key and chain in one
    credential bundle, and/or apart."""
    credentials = fetched.pod_certificates.get((volume, index))
    if credentials is None:
        raise VolumeSetupError(fetched.pod_certificate_errors.get((volume, index), "no credentials yet"))
    key, chain = credentials
    contents = {"credentialBundlePath": key + chain, "keyPath": key, "certificateChainPath": chain}
    return [VolumeFile(str(source[f]), data, mode, uid=user) for f, data in contents.items() if source.get(f)]


def trust_bundle_queries(volume: Mapping[str, Any]) -> list[TrustBundleQuery]:
    queries = (
        _trust_bundle_query(s["clusterTrustBundle"] or {})
        for s in _sources(volume)
        if "clusterTrustBundle" in s
    )
    return [q for q in queries if q is not None]


_PEM_BLOCK = re.compile(rb"-----BEGIN ([^-\n]+)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


def certificate_ders(text: str) -> list[bytes]:
    """The DER of each PEM block of `text`, in order, whatever its type (Go's pem.Decode loop)."""
    ders: list[bytes] = []
    for found in _PEM_BLOCK.finditer(text.encode()):
        try:
            ders.append(base64.b64decode(b"".join(found.group(2).split()), validate=True))
        except binascii.Error:
            continue  # the API validates bundles and chains; a block that does not decode is skipped
    return ders


def pem_certificates(ders: Sequence[bytes]) -> bytes:
    """The DERs as CERTIFICATE blocks, 64 base64 characters a line (pem.EncodeToMemory)."""
    out = b""
    for der in ders:
        encoded = base64.b64encode(der)
        lines = b"\n".join(encoded[i : i + 64] for i in range(0, len(encoded), 64))
        out += b"-----BEGIN CERTIFICATE-----\n" + lines + b"\n-----END CERTIFICATE-----\n"
    return out


def normalized_certificates(text: str) -> bytes:
    """A certificate chain without headers or text between its blocks, order kept
    (podcertificatemanager.go cleanCertificateChain)."""
    return pem_certificates(certificate_ders(text))


def trust_anchors(bundles: Sequence[Mapping[str, Any]]) -> bytes:
    """The PEM blocks of the bundles' `spec.trustBundle`, each certificate once, re-encoded as
    CERTIFICATE blocks (normalizeTrustAnchors; the kubelet shuffles the order once per start,
    this node sorts it)."""
    anchors = {
        d for b in bundles for d in certificate_ders(str((b.get("spec") or {}).get("trustBundle") or ""))
    }
    return pem_certificates(sorted(anchors))


def _trust_bundle_payload(projection: Mapping[str, Any], fetched: Fetched) -> bytes:
    """What projected.go writes for one clusterTrustBundle source, or its error."""
    query = _trust_bundle_query(projection)
    if query is None:
        raise VolumeSetupError("ClusterTrustBundle projection requires either name or signerName to be set")
    if query in fetched.trust_bundle_errors:
        raise VolumeSetupError(fetched.trust_bundle_errors[query])
    bundles = fetched.trust_bundles.get(query) or []
    if not bundles and not projection.get("optional"):
        if query.name:
            raise VolumeSetupError(
                "while getting ClusterTrustBundle: clustertrustbundles.certificates.k8s.io "
                f'"{query.name}" not found'
            )
        raise VolumeSetupError("combination of signerName and labelSelector matched zero ClusterTrustBundles")
    return trust_anchors(bundles)


def token_request_body(pod: Mapping[str, Any], source: TokenSource) -> dict[str, Any]:
    """The TokenRequest the kubelet posts: bound to the pod, with the projection's audience/TTL."""
    meta = pod.get("metadata") or {}
    spec: dict[str, Any] = {
        "expirationSeconds": source.expiration_seconds,
        "boundObjectRef": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta.get("name", ""),
            "uid": uid_of(pod),
        },
    }
    if source.audience:
        spec["audiences"] = [source.audience]
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def _all_containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    return [c for key in ("initContainers", "containers", "ephemeralContainers") for c in spec.get(key) or []]


def fs_user(pod: Mapping[str, Any]) -> int | None:
    """FsUserFrom: the runAsUser every container runs as (container over pod), or None when
    one has none or they differ."""
    pod_sc = (pod.get("spec") or {}).get("securityContext") or {}
    found: int | None = None
    for container in _all_containers(pod):
        user = (container.get("securityContext") or {}).get("runAsUser", pod_sc.get("runAsUser"))
        if user is None or (found is not None and int(user) != found):
            return None
        found = int(user)
    return found


def fs_group(pod: Mapping[str, Any]) -> int | None:
    group = ((pod.get("spec") or {}).get("securityContext") or {}).get("fsGroup")
    return None if group is None else int(group)


def _mode(item: Mapping[str, Any], default: int) -> int:
    mode = item.get("mode")
    return default if mode is None else int(mode)


def _key_payload(
    kind: str,
    obj: Mapping[str, Any] | None,
    name: str,
    ref: Mapping[str, Any],
    default_mode: int,
) -> list[VolumeFile]:
    """configmap.MakePayload / secret.MakePayload: every key, or the listed items."""
    optional = bool(ref.get("optional", False))
    if obj is None:
        if optional:
            return []
        raise VolumeSetupError(f'{kind} "{name}" not found')
    data: dict[str, bytes] = {}
    if kind == "secret":
        data.update({k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()})
        data.update({k: str(v).encode() for k, v in (obj.get("stringData") or {}).items()})
    else:
        data.update({k: str(v).encode() for k, v in (obj.get("data") or {}).items()})
        data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    items = ref.get("items") or []
    if not items:
        return [VolumeFile(k, v, default_mode) for k, v in sorted(data.items())]
    out = []
    for item in items:
        key = str(item.get("key", ""))
        if key not in data:
            if optional:
                continue
            if kind == "secret":
                raise VolumeSetupError(f"references non-existent secret key: {key}")
            raise VolumeSetupError(f"configmap references non-existent config key: {key}")
        out.append(VolumeFile(str(item.get("path", key)), data[key], _mode(item, default_mode)))
    return out


def _downward_payload(
    pod: Mapping[str, Any], ref: Mapping[str, Any], default_mode: int, node_allocatable: Mapping[str, str]
) -> list[VolumeFile]:
    out = []
    for item in ref.get("items") or []:
        try:
            if "fieldRef" in item:
                value = field_value(pod, str(item["fieldRef"].get("fieldPath", "")), PodAddresses())
            elif "resourceFieldRef" in item:
                resource = item["resourceFieldRef"]
                # A volume's resourceFieldRef names its container (validation requires it): with
                # no current container, resource_value looks it up in the pod.
                value = resource_value(pod, {"name": ""}, resource, node_allocatable)
            else:
                continue
        except ContainerConfigError as exc:
            raise VolumeSetupError(exc.message) from exc
        out.append(VolumeFile(str(item.get("path", "")), value.encode(), _mode(item, default_mode)))
    return out


def _aggregate(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate's text."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def volume_files(
    pod: Mapping[str, Any],
    volume: Mapping[str, Any],
    fetched: Fetched,
    node_allocatable: Mapping[str, str],
    *,
    ownership: bool = False,
) -> tuple[VolumeFile, ...]:
    """The payload of one API-backed volume; raises VolumeSetupError.

    With `ownership` (the writer may chown) the files get the kubelet's owners: a token is
    0600 owned by `fs_user` when there is an fsUser or fsGroup, and with an fsGroup every
    file belongs to it and gains group read (SetVolumeOwnership of a read-only volume).
    Without it the files have the modes the pod asked for and the writer's owner.
    """
    outer = next((volume.get(t) for t in API_VOLUME_TYPES if t in volume), None) or {}
    mode = DEFAULT_MODE if outer.get("defaultMode") is None else int(outer["defaultMode"])
    user = fs_user(pod) if ownership else None
    group = fs_group(pod) if ownership else None
    files: list[VolumeFile] = []
    errors: list[str] = []
    # projected.go: a token, trust bundle or pod certificate is 0600 with an fsUser or fsGroup.
    credential_mode = OWNED_TOKEN_MODE if user is not None or group is not None else mode
    for index, source in enumerate(_sources(volume)):
        try:
            if "configMap" in source:
                ref = source["configMap"] or {}
                name = str(ref.get("name", ""))
                obj = fetched.objects.get(("configmap", name))
                files += _key_payload("configmap", obj, name, ref, mode)
            elif "secret" in source:
                ref = source["secret"] or {}
                name = str(ref.get("secretName") or ref.get("name") or "")
                obj = fetched.objects.get(("secret", name))
                files += _key_payload("secret", obj, name, ref, mode)
            elif "downwardAPI" in source:
                ref = source["downwardAPI"] or {}
                files += _downward_payload(pod, ref, mode, node_allocatable)
            elif "serviceAccountToken" in source:
                projection = source["serviceAccountToken"] or {}
                token_source = _token_source(pod, projection)
                token = fetched.tokens.get(token_source)
                if token is None:
                    raise VolumeSetupError(fetched.token_errors.get(token_source, "failed to fetch token"))
                files.append(
                    VolumeFile(str(projection.get("path", "")), token.encode(), credential_mode, uid=user)
                )
            elif "clusterTrustBundle" in source:
                projection = source["clusterTrustBundle"] or {}
                anchors = _trust_bundle_payload(projection, fetched)
                files.append(VolumeFile(str(projection.get("path", "")), anchors, credential_mode, uid=user))
            elif "podCertificate" in source:
                name = str(volume.get("name", ""))
                files += _pod_certificate_payload(
                    name, index, source["podCertificate"] or {}, fetched, credential_mode, user
                )
        except VolumeSetupError as exc:
            if "projected" not in volume:
                raise
            errors.append(str(exc))  # projected.go collects every source's error
    if errors:
        raise VolumeSetupError(_aggregate(errors))
    if group is not None:
        files = [replace(f, mode=f.mode | FS_GROUP_FILE_BITS, gid=group) for f in files]
    return tuple(files)


def failed_mount_message(volume_name: str, error: str) -> str:
    """The FailedMount Event's message (operation_generator.go, MountVolume.SetUp)."""
    return f'MountVolume.SetUp failed for volume "{volume_name}" : {error}'
