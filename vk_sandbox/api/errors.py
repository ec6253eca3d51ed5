"""API errors of the sandbox control plane, rendered as the real apiserver's metav1.Status bodies.

What lives here: `ApiError` (an exception carrying code, reason, message and details) and one
constructor per error shape the real server produces (shapes and messages from
`staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go`). `details.kind` holds the resource
(e.g. "pods") except for Invalid, where it holds the Kind. Must not: know about HTTP, the store
or any resource beyond the names it is given.
"""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """An error the API answers with a Status body whose `code` equals the HTTP status."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.list_meta: dict[str, Any] = {}  # the Status's ListMeta (an inconsistent list's `continue`)

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta),
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # an error that is no APIStatus has none (responsewriters.ErrorToAPIStatus)
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(resource: str, name: str, group: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name} if name else {}  # metav1.StatusDetails: omitempty
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        404, "NotFound", f'{_qualified(resource, group)} "{name}" not found', _details(resource, name, group)
    )


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        _details(resource, name, group),
    )


def conflict(resource: str, name: str, message: str, group: str = "") -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {message}',
        _details(resource, name, group),
    )


def _cause_text(cause: dict[str, Any]) -> str:
    field = cause.get("field") or ""
    message = str(cause.get("message", ""))
    return f"{field}: {message}" if field else message


def invalid(kind: str, name: str, causes: list[dict[str, Any]], group: str = "") -> ApiError:
    """422 Invalid; each cause is {reason, message, field} as field.Error's type, ErrorBody and path."""
    texts = [_cause_text(c) for c in causes]
    qualified_kind = f"{kind}.{group}" if group else kind
    if not texts:
        message = f'{qualified_kind} "{name}" is invalid'
    elif len(texts) == 1:
        message = f'{qualified_kind} "{name}" is invalid: {texts[0]}'
    else:
        message = f'{qualified_kind} "{name}" is invalid: [{", ".join(texts)}]'
    details: dict[str, Any] = {"name": name} if name else {}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [
        {
            k: v
            for k, v in (
                ("reason", c.get("reason")),
                ("message", c.get("message")),
                ("field", c.get("field")),
            )
            if v
        }
        for c in causes
    ]
    return ApiError(422, "Invalid", message, details)


def storage_error(message: str) -> ApiError:
    """A plain (non-APIStatus) error from storage or the request options: 500, no reason.

    `responsewriters.ErrorToAPIStatus` (k8s.io/apiserver pkg/endpoints/handlers/responsewriters/
    status.go) answers any other error with code 500 and only its text, e.g. etcd3's
    "resourceVersion should not be set on objects to be created"."""
    return ApiError(500, "", message)


def parse_resource_version(value: str) -> int:
    """A resourceVersion as the real versioner parses it, else an ApiError(500) with its text.

    APIObjectVersioner.ParseResourceVersion (k8s.io/apiserver pkg/storage/api_object_versioner.go):
    strconv.ParseUint wrapped in `field.Invalid(resourceVersion)`; GET and WATCH answer it as a
    plain error (500, no reason), LIST wraps it in a 400 "invalid resource version: ..."."""
    if value in ("", "0"):
        return 0
    problem = "" if value.isascii() and value.isdigit() else "invalid syntax"
    if not problem and int(value) >= 2**64:
        problem = "value out of range"
    if problem:
        quoted = json.dumps(value)
        raise storage_error(
            f"resourceVersion: Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {problem}"
        )
    return int(value)


def options_invalid(kind: str, field: str, message: str) -> ApiError:
    """422 for a bad query option, e.g. `CreateOptions.meta.k8s.io "" is invalid: dryRun: ...`
    (ValidateCreateOptions etc. in k8s.io/apimachinery pkg/apis/meta/v1/validation)."""
    return invalid(
        kind, "", [{"reason": "FieldValueNotSupported", "message": message, "field": field}], "meta.k8s.io"
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(resource: str, name: str, message: str, group: str = "") -> ApiError:
    subject = f'{_qualified(resource, group)} "{name}"' if name else _qualified(resource, group)
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {message}", _details(resource, name, group))


def method_not_allowed(verb: str, resource_kind: str) -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", f'{verb} is not supported on resources of kind "{resource_kind}"', {}
    )


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415, "UnsupportedMediaType", f"the body of the request was in an unknown format - {content_type}"
    )


def too_many_requests(message: str, retry_after_seconds: int = 1) -> ApiError:
    return ApiError(429, "TooManyRequests", message, {"retryAfterSeconds": retry_after_seconds})


def internal_error(message: str) -> ApiError:
    return ApiError(
        500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
    )


def timeout(
    message: str, causes: list[dict[str, Any]] | None = None, retry_after_seconds: int = 1
) -> ApiError:
    details: dict[str, Any] = {"retryAfterSeconds": retry_after_seconds}
    if causes:
        details["causes"] = causes
    return ApiError(504, "Timeout", message, details)
