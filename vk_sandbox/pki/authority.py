"""The sandbox's certificate authority and its kubelet-client certificate.

What lives here: `SandboxPKI`, which creates (or loads, when they already exist) a CA and a
client certificate under `<state_dir>/pki/`, the way kubeadm lays out the real apiserver's
`--kubelet-client-certificate`: CN `kube-apiserver-kubelet-client`, O `system:masters`, signed
by the cluster CA. It also signs CertificateSigningRequests for the kubelet signers.
Must not: talk to the network or the store; it only reads and writes files under its directory.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from collections.abc import Iterable
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import (
    CertificateIssuerPrivateKeyTypes,
    CertificatePublicKeyTypes,
)
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_COMMON_NAME = "vk-sandbox-ca"
CLIENT_COMMON_NAME = "kube-apiserver-kubelet-client"
CLIENT_ORGANIZATION = "system:masters"

KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving"
KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
SUPPORTED_SIGNERS = (KUBELET_SERVING_SIGNER, KUBELET_CLIENT_SIGNER, APISERVER_CLIENT_SIGNER)

# kube-controller-manager's --cluster-signing-duration default (one year).
DEFAULT_SIGNING_SECONDS = 365 * 24 * 3600
# A CSR may ask for less, never below 10 minutes (certificates.k8s.io/v1 spec.expirationSeconds).
MIN_EXPIRATION_SECONDS = 600
CA_VALIDITY = datetime.timedelta(days=3650)
# Certificates are backdated a little so a skewed clock does not reject them at once.
BACKDATE = datetime.timedelta(minutes=5)


class CSRError(ValueError):
    """A CertificateSigningRequest that cannot be signed (bad PEM, bad signature, bad usages)."""


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes, *, private: bool) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    if private:
        tmp.chmod(0o600)
    tmp.replace(path)


def _subject_alternative_names(cert: x509.Certificate) -> list[x509.GeneralName]:
    try:
        return list(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value)
    except x509.ExtensionNotFound:
        return []


def _usages_extensions(usages: Iterable[str]) -> tuple[x509.KeyUsage, x509.ExtendedKeyUsage | None]:
    """Map certificates.k8s.io key usages to X.509 key usage and extended key usage."""
    known = {
        "digital signature",
        "key encipherment",
        "server auth",
        "client auth",
        "signing",
        "content commitment",
        "key agreement",
        "data encipherment",
        "cert sign",
        "crl sign",
    }
    wanted = set(usages)
    unknown = sorted(wanted - known)
    if unknown:
        raise CSRError(f"unsupported key usages: {unknown}")
    if "cert sign" in wanted or "crl sign" in wanted:
        raise CSRError("CA usages (cert sign, crl sign) cannot be requested")
    key_usage = x509.KeyUsage(
        digital_signature="digital signature" in wanted or "signing" in wanted,
        content_commitment="content commitment" in wanted,
        key_encipherment="key encipherment" in wanted,
        data_encipherment="data encipherment" in wanted,
        key_agreement="key agreement" in wanted,
        key_cert_sign=False,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )
    ext: list[x509.ObjectIdentifier] = []
    if "server auth" in wanted:
        ext.append(ExtendedKeyUsageOID.SERVER_AUTH)
    if "client auth" in wanted:
        ext.append(ExtendedKeyUsageOID.CLIENT_AUTH)
    return key_usage, (x509.ExtendedKeyUsage(ext) if ext else None)


class SandboxPKI:
    """A CA plus the apiserver's kubelet-client certificate, kept as PEM files in `<state_dir>/pki`.

    With `state_dir=None` the files live in a temporary directory removed with this object.
    """

    def __init__(self, state_dir: Path | None) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._client_context: ssl.SSLContext | None = None
        if state_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="vk-sandbox-pki-")
            base = Path(self._tmp.name)
        else:
            base = Path(state_dir)
        self.dir = base / "pki"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca_cert_path = self.dir / "ca.crt"
        self.ca_key_path = self.dir / "ca.key"
        self.client_cert_path = self.dir / "kubelet-client.crt"
        self.client_key_path = self.dir / "kubelet-client.key"
        self._ca_key, self._ca_cert = self._load_or_create_ca()
        self._ensure_client_cert()

    # -- CA ---------------------------------------------------------------------------------------

    def _load_or_create_ca(self) -> tuple[CertificateIssuerPrivateKeyTypes, x509.Certificate]:
        if self.ca_cert_path.exists() and self.ca_key_path.exists():
            cert = x509.load_pem_x509_certificate(self.ca_cert_path.read_bytes())
            key = serialization.load_pem_private_key(self.ca_key_path.read_bytes(), password=None)
            if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
                raise ValueError(f"{self.ca_key_path}: unsupported CA key type")
            return key, cert
        key = _new_key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_COMMON_NAME)])
        now = _now()
        ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=True,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(ski, critical=False)
            .sign(key, hashes.SHA256())
        )
        _write(self.ca_key_path, _key_pem(key), private=True)
        _write(self.ca_cert_path, cert.public_bytes(serialization.Encoding.PEM), private=False)
        return key, cert

    @property
    def ca_pem(self) -> bytes:
        """The CA certificate as PEM, e.g. for the kube-root-ca.crt configmap."""
        return self._ca_cert.public_bytes(serialization.Encoding.PEM)

    # -- client certificate -------------------------------------------------------------------------

    def _ensure_client_cert(self) -> None:
        self.issue_pair(self.client_cert_path.stem, CLIENT_COMMON_NAME, [CLIENT_ORGANIZATION])

    def ssl_client_context(self) -> ssl.SSLContext:
        """TLS context for dialling a kubelet: presents the kubelet-client certificate.

        The server certificate is not verified, as the real apiserver does when no
        `--kubelet-certificate-authority` is set: `pkg/kubelet/client/kubelet_client.go`
        (`MakeTransport` with `TLSClientConfig.Insecure`) in kubernetes/kubernetes.
        """
        if self._client_context is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.load_cert_chain(str(self.client_cert_path), str(self.client_key_path))
            self._client_context = ctx  # built once: loading the files is blocking I/O
        return self._client_context

    def issue_pair(
        self,
        name: str,
        common_name: str,
        organizations: Iterable[str] = (),
        *,
        server: bool = False,
        dns_names: Iterable[str] = (),
        ips: Iterable[str] = (),
    ) -> tuple[Path, Path]:
        """Issue a key and certificate from the CA as `<name>.crt` / `<name>.key` (the key 0600).

        A client certificate unless `server` (then `server auth` with the given subject
        alternative names). An existing pair of the same CA that is still valid is kept.
        Returns (certificate path, key path).
        """
        cert_path, key_path = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        if cert_path.exists() and key_path.exists():
            cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
            valid = cert.issuer == self._ca_cert.subject and cert.not_valid_after_utc > _now()
            if valid and set(_subject_alternative_names(cert)) == set(names):
                return cert_path, key_path
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        subject = x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        key = _new_key()
        cert = self._issue(
            subject,
            key.public_key(),
            ["digital signature", "key encipherment", "server auth" if server else "client auth"],
            sans=x509.SubjectAlternativeName(names) if names else None,
            seconds=DEFAULT_SIGNING_SECONDS,
        )
        _write(key_path, _key_pem(key), private=True)
        _write(cert_path, cert.public_bytes(serialization.Encoding.PEM), private=False)
        return cert_path, key_path

    # -- signing ------------------------------------------------------------------------------------

    def _issue(
        self,
        subject: x509.Name,
        public_key: CertificatePublicKeyTypes,
        usages: Iterable[str],
        *,
        sans: x509.SubjectAlternativeName | None,
        seconds: int,
    ) -> x509.Certificate:
        key_usage, ext_usage = _usages_extensions(usages)
        now = _now()
        not_after = min(now + datetime.timedelta(seconds=seconds), self._ca_cert.not_valid_after_utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._ca_cert.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(key_usage, critical=True)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._ca_cert.public_key()),  # type: ignore[arg-type]
                critical=False,
            )
        )
        if ext_usage is not None:
            builder = builder.add_extension(ext_usage, critical=False)
        if sans is not None:
            builder = builder.add_extension(sans, critical=False)
        return builder.sign(self._ca_key, hashes.SHA256())

    def sign_csr(
        self,
        csr_pem: bytes,
        usages: Iterable[str],
        signer_name: str,
        *,
        expiration_seconds: int | None = None,
    ) -> bytes:
        """Sign a PEM PKCS#10 request for one of the kubelet signers; returns the certificate PEM.

        The subject and (for kubelet-serving) the DNS/IP subject alternative names are taken
        from the request, as kube-controller-manager's csrsigning controller does. Raises
        `CSRError` for an unknown signer, a bad request or forbidden usages.
        """
        if signer_name not in SUPPORTED_SIGNERS:
            raise CSRError(f"unsupported signerName {signer_name!r}")
        try:
            csr = x509.load_pem_x509_csr(csr_pem)
        except ValueError as exc:
            raise CSRError(f"invalid certificate request: {exc}") from exc
        if not csr.is_signature_valid:
            raise CSRError("certificate request signature is not valid")
        wanted = list(usages)
        if signer_name == KUBELET_SERVING_SIGNER and "server auth" not in wanted:
            raise CSRError(f"{signer_name} requires the 'server auth' usage")
        if signer_name != KUBELET_SERVING_SIGNER and "server auth" in wanted:
            raise CSRError(f"{signer_name} does not allow the 'server auth' usage")
        sans: x509.SubjectAlternativeName | None = None
        if signer_name == KUBELET_SERVING_SIGNER:
            try:
                requested = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            except x509.ExtensionNotFound:
                requested = None
            if requested is not None:
                names: list[x509.GeneralName] = [
                    *(x509.DNSName(d) for d in requested.get_values_for_type(x509.DNSName)),
                    *(
                        x509.IPAddress(ip)
                        for ip in requested.get_values_for_type(x509.IPAddress)
                        if isinstance(ip, ipaddress.IPv4Address | ipaddress.IPv6Address)
                    ),
                ]
                sans = x509.SubjectAlternativeName(names) if names else None
        seconds = DEFAULT_SIGNING_SECONDS
        if expiration_seconds is not None:
            seconds = max(MIN_EXPIRATION_SECONDS, min(expiration_seconds, DEFAULT_SIGNING_SECONDS))
        cert = self._issue(csr.subject, csr.public_key(), wanted, sans=sans, seconds=seconds)
        return cert.public_bytes(serialization.Encoding.PEM)
