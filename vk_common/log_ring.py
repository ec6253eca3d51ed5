"""The provider's recent log lines, kept in memory for the kubelet API's node log query.

What lives here: `LogRing`, a logging handler that keeps the last lines the process wrote (as
formatted for stderr, with each record's time), bounded in lines and in bytes, and
`PROCESS_LOG`, the one ring of the process that `setup_logging` installs.
`/logs/?query=vk-provider` reads it (kubeletapi/node_logs.py), as the kubelet's node log query
reads a unit's journal: the lines are the ones `kubectl logs` of the provider's pod shows.
Must not: write anywhere or block: emitting a line costs one append under a lock.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass

MAX_LINES = 10_000
MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class LogLine:
    created: float  # seconds since the epoch, the record's time
    text: str  # the formatted line, without its newline


class LogRing(logging.Handler):
    """The last `max_lines` lines (and at most `max_bytes` of them), oldest first."""

    def __init__(self, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> None:
        super().__init__()
        self._lines: deque[LogLine] = deque()
        self._bytes = 0
        self._max_lines = max_lines
        self._max_bytes = max_bytes
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = LogLine(record.created, self.format(record))
        except Exception:  # a record that cannot be formatted: logging's own report
            self.handleError(record)
            return
        with self._guard:
            self._lines.append(line)
            self._bytes += len(line.text)
            while self._lines and (len(self._lines) > self._max_lines or self._bytes > self._max_bytes):
                self._bytes -= len(self._lines.popleft().text)

    def lines(self) -> list[LogLine]:
        with self._guard:
            return list(self._lines)


PROCESS_LOG = LogRing()
