"""Every log line of the provider is a constant message plus keys (klog's structured logging).

The Kubernetes structured logging conventions: the message says what happened, the values go in
key/value pairs (`extra=` here, vk_common/logging.py), so a log pipeline can filter on
`pod=...` or `node=...` without parsing sentences. This walks vk_provider/ and names each logger
call whose message is not a plain string constant, carries a `%` directive, or passes
positional format arguments; and checks that no call passes a key a LogRecord already has
(logging raises KeyError for those at run time, only when the line is logged).
"""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("vk_provider", "vk_sandbox", "vk_common", "vk_cli")
LEVELS = {"debug", "info", "warning", "error", "exception", "critical"}
# The receivers the package logs through: `log = get_logger(...)`, `self._log`, `logger`.
RECEIVER = re.compile(r"^(log|logger|self\._log|self\.log)$")
DIRECTIVE = re.compile(r"%[-#0 +]*\d*(\.\d+)?[sdifrxXeEgGcoa%]")
RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def _logger_calls() -> list[tuple[str, ast.Call]]:
    calls = []
    for path in sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in LEVELS
                and RECEIVER.match(ast.unparse(node.func.value))
            ):
                calls.append((f"{path.relative_to(REPO)}:{node.lineno}", node))
    return calls


def test_the_package_logs_somewhere() -> None:
    assert len(_logger_calls()) > 200


def test_every_message_is_a_constant_without_format_arguments() -> None:
    bad = []
    for where, call in _logger_calls():
        first = call.args[0] if call.args else None
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            bad.append(f"{where}: the message is not a string constant")
        elif DIRECTIVE.search(first.value):
            bad.append(f"{where}: the message has a % directive: {first.value!r}")
        if len(call.args) > 1:
            bad.append(f"{where}: positional format arguments (put them in extra=)")
    assert bad == [], "\n".join(bad)


def test_no_extra_key_is_a_log_record_attribute() -> None:
    bad = []
    for where, call in _logger_calls():
        for keyword in call.keywords:
            if keyword.arg == "extra" and isinstance(keyword.value, ast.Dict):
                keys = [k.value for k in keyword.value.keys if isinstance(k, ast.Constant)]
            elif keyword.arg == "extra" and isinstance(keyword.value, ast.Call):
                keys = [k.arg for k in keyword.value.keywords if k.arg]
            else:
                continue
            bad += [f"{where}: extra key {key!r}" for key in keys if key in RESERVED]
    assert bad == [], "\n".join(bad)
