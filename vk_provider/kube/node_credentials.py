"""`kubernetes.credentials: node`: the provider's own kubelet client certificate (TLS bootstrap).

What lives here: `NodeCredentials`, which gives the provider a client certificate for
`system:node:<node>` in `system:nodes`, as the kubelet's TLS bootstrap does
(k8s.io/kubernetes pkg/kubelet/certificate/bootstrap): a still-valid certificate in the
certificate directory is reused at start; otherwise it sends a CSR to the
`kubernetes.io/kube-apiserver-client-kubelet` signer (usages digital signature and client
auth: an ECDSA key, no key encipherment, pkg/apis/certificates/helpers.go) with the
bootstrap credentials (the kubeconfig's or the in-cluster service account's), waits for the
csrapproving controller to approve it (pkg/controller/certificates/approver/sarapprove.go:
the requester may `create` `certificatesigningrequests/nodeclient`) and the signer to issue
it, and writes the certificate and its key to one file (`kubelet-client-<node>.pem`, 0600,
written aside and renamed). `start()` returns a `KubeClient` using that certificate; `run()`
renews it at a jittered 70-90 % of its lifetime (client-go util/certificate
certificate_manager.go nextRotationDeadline) and swaps the client's credentials without a
restart. Renewal uses the bootstrap credentials again, not the current certificate (the
kubelet's selfnodeclient path): they need no permission beyond the first request, and
auto-approval of selfnodeclient needs a cluster-wide binding for the group system:nodes that
not every cluster has (kubeadm's kubeadm:node-autoapprove-certificate-rotation).
The key of a CSR still pending is kept (`.key.pending`) and the CSR has a name derived from
its public key, so a restart waits for the same CSR instead of sending another.
Must not: approve CSRs, or make any other API call with the bootstrap credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import hashlib
import os
import random
from collections.abc import Callable
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID
from kubernetes_asyncio.client import ApiClient, Configuration

from vk_common import guarded_paths
from vk_common.logging import get_logger
from vk_provider.config import Config
from vk_provider.kube.certificates import (
    CsrDenied,
    CsrNotIssued,
    jittered_fraction,
    new_key_pem,
    node_csr_pem,
    rotation_deadline,
    submit_csr,
    wait_issued,
)
from vk_provider.kube.client import (
    ApiStatusError,
    KubeClient,
    client_certificate_configuration,
    load_configuration,
    make_kube_client,
)
from vk_provider.kube.transport import api_client_for
from vk_provider.metrics import ProviderMetrics

log = get_logger("kube.node_credentials")

SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
USAGES = ["digital signature", "client auth"]
# Who approves, named in the line of a CSR not approved in time.
APPROVER = (
    ", or let the csrapproving controller do it: the requester needs create on "
    "certificatesigningrequests/nodeclient"
)
# How long one CSR may wait to be approved and signed (client-go certificate_manager.go's
# certificateWaitTimeout); at start-up the provider then stops with a line naming the CSR.
ISSUE_DEADLINE = 15 * 60.0
RETRY_SECONDS = 30.0  # a failed renewal is tried again this much later (the old certificate serves)
# A renewed certificate's predecessor stays open this long for the requests under way on it
# (the client's request timeout); its watches end at once (KubeClient.swap_api_client).
OLD_CLIENT_GRACE = 30.0


class NodeCredentialsError(Exception):
    """No usable node certificate; the message is one line naming what to do."""


def certificate_dir(config: Config) -> Path:
    """`kubernetes.certificateDir`, else `<docker.stateDir>/pki`."""
    return Path(config.kubernetes.certificate_dir or Path(config.docker.state_dir) / "pki")


def csr_name(node_name: str, key_pem: bytes) -> str:
    """A name that is the same for the same key, node, signer and usages (so a restart finds its
    pending CSR again), like the kubelet's digestedName."""
    key = serialization.load_pem_private_key(key_pem, password=None)
    public = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    digest = hashlib.sha256(public + "\0".join([node_name, SIGNER, *USAGES]).encode()).hexdigest()
    return f"node-client-{node_name[:200]}-{digest[:16]}"


@dataclasses.dataclass(frozen=True)
class NodeCertificate:
    pem: bytes  # the certificate (chain) and the key
    not_before: datetime.datetime
    not_after: datetime.datetime


def parse_node_certificate(pem: bytes, node_name: str, now: datetime.datetime) -> NodeCertificate:
    """The certificate in `pem` when it is the node's, has its key and is valid at `now`; else
    ValueError saying why."""
    try:
        cert = x509.load_pem_x509_certificates(pem)[0]
        key = serialization.load_pem_private_key(pem[pem.index(b"-----BEGIN PRIVATE KEY-----") :], None)
    except ValueError as exc:
        raise ValueError(f"not a certificate and key: {exc}") from None
    cn = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    orgs = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    if cn != [f"system:node:{node_name}"] or "system:nodes" not in orgs:
        raise ValueError(f"it is for {cert.subject.rfc4514_string()}, not system:node:{node_name}")
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    if cert.public_key().public_bytes(serialization.Encoding.DER, public) != key.public_key().public_bytes(
        serialization.Encoding.DER, public
    ):
        raise ValueError("its key does not match the certificate")
    if not cert.not_valid_before_utc <= now < cert.not_valid_after_utc:
        raise ValueError(f"it is valid from {cert.not_valid_before_utc} to {cert.not_valid_after_utc} only")
    return NodeCertificate(pem, cert.not_valid_before_utc, cert.not_valid_after_utc)


def write_private(path: Path, data: bytes) -> None:
    """`data` in `path`, mode 0600, whole or not at all (written aside, then renamed)."""
    guarded_paths.make_private_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class NodeCredentials:
    """The node's client certificate: `start()` has one and a client using it, `run()` renews."""

    def __init__(
        self,
        config: Config,
        *,
        metrics: ProviderMetrics | None = None,
        clock: Callable[[], datetime.datetime] = _now,
        rand: Callable[[], float] = random.random,
        issue_deadline: float | None = None,  # None: ISSUE_DEADLINE
        bootstrap: KubeClient | None = None,
    ) -> None:
        self.config = config
        self.node_name = config.node.name
        self.directory = certificate_dir(config)
        self.path = self.directory / f"kubelet-client-{self.node_name}.pem"
        self.pending_key_path = self.directory / f"kubelet-client-{self.node_name}.key.pending"
        self.metrics = metrics
        self._clock = clock
        self._rand = rand
        self.issue_deadline = ISSUE_DEADLINE if issue_deadline is None else issue_deadline
        self.bootstrap = bootstrap  # the bootstrap credentials, for CSRs only
        self.client: KubeClient | None = None  # the node's
        self.current: NodeCertificate | None = None
        self._base: Configuration | None = None
        self._retired: list[ApiClient] = []

    async def start(self) -> KubeClient:
        """A client with the node's certificate: the one on disk while valid, else a new one."""
        self._base = await load_configuration(self.config.kubernetes)
        if self.bootstrap is None:
            self.bootstrap = await make_kube_client(
                self.config.kubernetes, metrics=self.metrics, configuration=self._base
            )
        self.current = await self.obtain()
        self.client = await make_kube_client(
            self.config.kubernetes,
            metrics=self.metrics,
            configuration=client_certificate_configuration(self._base, self.path),
        )
        log.info(
            "API calls with the node certificate",
            extra={"user": f"system:node:{self.node_name}", "path": str(self.path)},
        )
        return self.client

    async def obtain(self) -> NodeCertificate:
        """The certificate on disk while it is valid, else a new one from a CSR."""
        current = await asyncio.to_thread(self._load)
        self.current = current if current is not None else await self._request()
        return self.current

    def _load(self) -> NodeCertificate | None:
        try:
            pem = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning(
                "cannot read the node certificate; requesting a new one",
                extra={"path": str(self.path), "err": str(exc)},
            )
            return None
        try:
            cert = parse_node_certificate(pem, self.node_name, self._clock())
        except ValueError as exc:
            log.info(
                "not reusing the node certificate; requesting a new one",
                extra={"path": str(self.path), "reason": str(exc)},
            )
            return None
        log.info(
            "reusing the node certificate", extra={"path": str(self.path), "notAfter": str(cert.not_after)}
        )
        return cert

    def renew_at(self) -> datetime.datetime:
        assert self.current is not None
        return rotation_deadline(
            self.current.not_before, self.current.not_after, jittered_fraction(self._rand)
        )

    async def run(self) -> None:
        """Renew before expiry, for as long as the provider runs."""
        try:
            while True:
                deadline = self.renew_at()
                await asyncio.sleep(max(0.0, (deadline - self._clock()).total_seconds()))
                while True:
                    try:
                        await self.renew()
                        break
                    except (NodeCredentialsError, OSError) as exc:
                        assert self.current is not None
                        log.warning(
                            "node certificate renewal failed; trying again later",
                            extra={
                                "err": str(exc),
                                "retryInSeconds": RETRY_SECONDS,
                                "currentNotAfter": str(self.current.not_after),
                            },
                        )
                        await asyncio.sleep(RETRY_SECONDS)
        finally:
            await self._close_retired()

    async def renew(self) -> None:
        """A new certificate; the client sends what comes next with it."""
        self.current = await self._request()
        assert self.client is not None and self._base is not None
        new = api_client_for(client_certificate_configuration(self._base, self.path))
        self._retired.append(self.client.swap_api_client(new))
        log.info("node certificate renewed", extra={"notAfter": str(self.current.not_after)})
        await asyncio.sleep(OLD_CLIENT_GRACE)
        await self._close_retired()

    async def _close_retired(self) -> None:
        while self._retired:
            with contextlib.suppress(Exception):
                await self._retired.pop().close()

    async def _request(self) -> NodeCertificate:
        """Send (or find again) the CSR, wait for its certificate, write it with its key."""
        assert self.bootstrap is not None
        key_pem = await asyncio.to_thread(self._pending_key)
        name = csr_name(self.node_name, key_pem)
        try:
            csr_pem = node_csr_pem(key_pem, self.node_name)
            await submit_csr(self.bootstrap, csr_pem, signer=SIGNER, usages=USAGES, name=name)
            log.info(
                "sent a CSR for the node certificate",
                extra={"csr": name, "user": f"system:node:{self.node_name}", "signer": SIGNER},
            )
            cert_pem = await wait_issued(
                self.bootstrap, name, deadline=self.issue_deadline, approver=APPROVER
            )
        except ApiStatusError as exc:
            raise NodeCredentialsError(
                f"cannot request the node certificate (CSR {name}) with the bootstrap credentials: {exc}"
            ) from None
        except CsrDenied as exc:
            await asyncio.to_thread(self._drop_pending_key)  # a denied CSR is not sent again
            raise NodeCredentialsError(str(exc)) from None
        except CsrNotIssued as exc:
            raise NodeCredentialsError(str(exc)) from None
        try:
            cert = parse_node_certificate(cert_pem + key_pem, self.node_name, self._clock())
        except ValueError as exc:
            raise NodeCredentialsError(f"CSR {name} was issued a certificate that is no use: {exc}") from None
        await asyncio.to_thread(self._store, cert.pem)
        log.info("node certificate issued", extra={"csr": name, "notAfter": str(cert.not_after)})
        return cert

    def _pending_key(self) -> bytes:
        with contextlib.suppress(FileNotFoundError, ValueError):
            key_pem = self.pending_key_path.read_bytes()
            serialization.load_pem_private_key(key_pem, password=None)
            return key_pem
        key_pem = new_key_pem()
        write_private(self.pending_key_path, key_pem)
        return key_pem

    def _drop_pending_key(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.pending_key_path.unlink()

    def _store(self, pem: bytes) -> None:
        write_private(self.path, pem)
        self._drop_pending_key()

    async def close(self) -> None:
        await self._close_retired()
        if self.bootstrap is not None:
            await self.bootstrap.close()
            self.bootstrap = None
