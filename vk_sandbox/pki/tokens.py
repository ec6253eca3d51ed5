"""Service account tokens of the sandbox: signing and verifying its JWTs.

What lives here: `ISSUER`, `sign_token(key, claims)` and `verify_token(key, token, now)`, HS256
JWTs keyed by the sandbox's secret (persisted in the state directory, so tokens survive a
restart). The claims follow bound service account tokens (`pkg/serviceaccount/claims.go`).
Must not: look anything up in the store (the TokenReview handler checks the bound objects).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any

ISSUER = "https://kubernetes.default.svc.cluster.local"


class TokenError(ValueError):
    pass


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _kid(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:16]


def sign_token(key: bytes, claims: dict[str, Any]) -> str:
    header = _b64(json.dumps({"alg": "HS256", "kid": _kid(key)}, separators=(",", ":")).encode())
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signature = hmac.new(key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(signature)}"


def verify_token(key: bytes, token: str, now: float) -> dict[str, Any]:
    """The claims of a token this sandbox signed and that has not expired; TokenError otherwise."""
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError("invalid bearer token")
    header, payload, signature = parts
    expected = hmac.new(key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    try:
        valid = hmac.compare_digest(_unb64(signature), expected)
        claims = json.loads(_unb64(payload))
    except (binascii.Error, ValueError):
        raise TokenError("invalid bearer token") from None
    if not valid or not isinstance(claims, dict) or claims.get("iss") != ISSUER:
        raise TokenError("invalid bearer token")
    if float(claims.get("exp", 0)) < now:
        raise TokenError("invalid bearer token, Token has expired.")
    return claims
