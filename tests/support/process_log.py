"""The provider's ring of recent log lines (vk_common/log_ring.py) on the root logger for one
test, as `setup_logging` installs it in a provider process.

What lives here: `process_log_attached()`, a context manager: the ring with the text formatter on
the root logger and the provider's loggers at INFO, both undone afterwards. Must not: call
`setup_logging` (it replaces the process's root handlers, pytest's capture among them, and its
levels would stay for the next tests of the worker).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from vk_common.log_ring import PROCESS_LOG
from vk_common.logging import TextFormatter


@contextlib.contextmanager
def process_log_attached() -> Iterator[None]:
    PROCESS_LOG.setFormatter(TextFormatter())
    root, ours = logging.getLogger(), logging.getLogger("vk_provider")
    level = ours.level
    root.addHandler(PROCESS_LOG)
    ours.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(PROCESS_LOG)
        ours.setLevel(level)
