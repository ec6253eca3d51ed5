"""Authentication edges of the kubelet API (issue 13, item 7), over real TLS on 127.0.0.1, no Docker.

(a) a client certificate with an empty or missing common name authenticates no one (401);
(b) `auth: none` warns at start that every request is allowed, and `auth: webhook` without a
client CA that the apiserver's logs/exec will get 401; (c) authentication runs before
the StrictSlash redirect (and the 404), so an anonymous request gets 401, not 301.
"""

from __future__ import annotations

import datetime
import logging
import ssl
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from vk_provider.config import KubeletServerConfig
from vk_provider.kubeletapi import KubeletServer
from vk_provider.kubeletapi.auth import certificate_user
from vk_provider.kubeletapi.webhook import User


class NoPods:
    async def list_pods(self) -> list[Any]:
        return []


class Reviews:
    """The apiserver for `auth: webhook`: token "good" is alice; everyone is allowed."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(path.rsplit("/", 1)[-1])
        if path.endswith("/tokenreviews"):
            ok = body["spec"]["token"] == "good"
            return {"status": {"authenticated": ok, "user": {"username": "alice"} if ok else {}}}
        return {"status": {"allowed": True}}


class Pki:
    """A CA and client certificates with whatever subject a test needs (an empty CN included)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
        self.cert = self._builder(name, name, self.key.public_key(), ca=True).sign(self.key, hashes.SHA256())
        self.ca_path = directory / "ca.crt"
        self.ca_path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    @staticmethod
    def _builder(subject: x509.Name, issuer: x509.Name, public: Any, ca: bool) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )

    def client_context(self, label: str, common_name: str | None, organization: str) -> ssl.SSLContext:
        """A client TLS context presenting a certificate for CN=common_name (None: no CN at all)."""
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization)]
        if common_name is not None:  # cryptography warns about an empty CN; TLS carries it all the same
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name, _validate=False))
        key = ec.generate_private_key(ec.SECP256R1())
        builder = self._builder(x509.Name(attributes), self.cert.subject, key.public_key(), ca=False)
        cert = builder.add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        ).sign(self.key, hashes.SHA256())
        cert_path, key_path = self.dir / f"{label}.crt", self.dir / f"{label}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        ctx.load_cert_chain(cert_path, key_path)
        return ctx


@asynccontextmanager
async def kubelet(auth: str, client_ca: Path | None = None, kube: Any = None) -> AsyncIterator[str]:
    config = KubeletServerConfig(
        listen="127.0.0.1:0", auth=auth, client_ca_file=str(client_ca) if client_ca else ""
    )
    server = KubeletServer(config, "node-a", NoPods(), "127.0.0.1", kube=kube)  # type: ignore[arg-type]
    await server.start()
    try:
        yield f"https://127.0.0.1:{server.port}"
    finally:
        await server.stop()


async def get(url: str, ssl_context: ssl.SSLContext | bool = False, token: str | None = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl_context)) as http,
        http.get(url, headers=headers, allow_redirects=False) as resp,
    ):
        return resp.status, await resp.text(), resp.headers.get("Location")


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path)


# -- (a) the empty common name ---------------------------------------------------------------


def test_certificate_user_refuses_an_empty_or_missing_common_name() -> None:
    masters = (("organizationName", "system:masters"),)
    assert certificate_user({"subject": ((("commonName", ""),), masters)}) is None
    assert certificate_user({"subject": (masters,)}) is None
    assert certificate_user({"subject": ((("commonName", "bob"),), masters)}) == User(
        "bob", groups=("system:masters",)
    )


@pytest.mark.parametrize("common_name", ["", None], ids=["empty CN", "no CN"])
async def test_x509_refuses_a_certificate_without_a_common_name(pki: Pki, common_name: str | None) -> None:
    nameless = pki.client_context("nameless", common_name, "system:masters")
    alice = pki.client_context("alice", "alice", "dev")
    async with kubelet("x509", pki.ca_path) as base:
        assert await get(f"{base}/healthz", nameless) == (401, "Unauthorized\n", None)  # today: 200
        assert await get(f"{base}/healthz", alice) == (200, "ok", None)


async def test_webhook_tries_the_bearer_token_after_a_nameless_certificate(pki: Pki) -> None:
    nameless = pki.client_context("nameless", "", "system:masters")
    reviews = Reviews()
    async with kubelet("webhook", pki.ca_path, kube=reviews) as base:
        assert (await get(f"{base}/healthz", nameless))[0] == 401
        assert await get(f"{base}/healthz", nameless, token="good") == (200, "ok", None)
        assert reviews.asked == ["tokenreviews", "subjectaccessreviews"]


# -- (b) auth: none --------------------------------------------------------------------------


async def test_auth_none_warns_that_every_request_is_allowed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="vk_provider")
    async with kubelet("none") as base:
        assert await get(f"{base}/healthz") == (200, "ok", None)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("auth none" in m and "every request" in m for m in warnings), warnings


async def test_other_modes_do_not_warn_so(pki: Pki, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="vk_provider")
    async with kubelet("x509", pki.ca_path):
        pass
    assert not [r for r in caplog.records if "every request" in r.getMessage()]


async def test_webhook_without_a_client_ca_warns_that_the_apiserver_gets_401(
    pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="vk_provider")
    async with kubelet("webhook", kube=Reviews()):
        pass
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("without clientCAFile" in m and "401" in m for m in warnings), warnings
    caplog.clear()
    async with kubelet("webhook", pki.ca_path, kube=Reviews()):
        pass
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


# -- (c) authenticate before redirecting -----------------------------------------------------


async def test_an_anonymous_request_that_would_redirect_gets_401() -> None:
    reviews = Reviews()
    async with kubelet("webhook", kube=reviews) as base:
        for path in ("/healthz/", "/runningpods?x=1", "/pods/", "/nothing"):
            assert await get(f"{base}{path}") == (401, "Unauthorized\n", None), path  # today: 301
            assert (await get(f"{base}{path}", token="junk"))[0] == 401, path
        assert (await get(f"{base}/healthz/", token="good"))[0::2] == (301, "/healthz")
        assert (await get(f"{base}/runningpods?x=1", token="good"))[2] == "/runningpods/?x=1"
        assert (await get(f"{base}/nothing", token="good"))[0] == 404


async def test_x509_redirects_only_with_a_certificate(pki: Pki) -> None:
    alice = pki.client_context("alice", "alice", "dev")
    async with kubelet("x509", pki.ca_path) as base:
        assert (await get(f"{base}/healthz/"))[0] == 401  # today: 301
        assert (await get(f"{base}/healthz/", alice))[0::2] == (301, "/healthz")


async def test_auth_none_still_redirects() -> None:
    async with kubelet("none") as base:
        assert (await get(f"{base}/healthz/"))[0::2] == (301, "/healthz")
