"""The specs of a Ginkgo JSON report of `e2e.test`: `Spec`, `load_specs`, `shard`.

A `Spec` is one `It` of the suite: its full name as the suite prints it (the container texts
and the leaf text joined by spaces, the bracketed tags included), the source file under
`test/e2e/`, the line of its leaf node, its state, run time and failure message. `shard`
splits the specs of a dry run into balanced groups of `file:line` filters for
`--ginkgo.focus-file`, so that several `e2e.test` processes share one cluster.

Must not: run anything; know about vk-provider.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUITE_ROOT = "test/e2e/"
# Specs tagged [Slow] run for minutes; weigh them so that the shards end together.
SLOW_WEIGHT = 4


@dataclass(frozen=True)
class Spec:
    name: str
    file: str  # under test/e2e/, e.g. common/node/pods.go
    line: int
    state: str  # passed, failed, skipped, pending, timedout, interrupted, aborted, panicked
    seconds: float = 0.0
    failure: str = ""
    attempts: int = 0  # 0: the filters left it out (a shard's report lists every spec)

    @property
    def key(self) -> tuple[str, int, str]:
        """What tells specs apart: those of one table or loop share their file and line."""
        return self.file, self.line, self.name

    @property
    def serial(self) -> bool:
        return "[Serial]" in self.name or "[Disruptive]" in self.name

    @property
    def slow(self) -> bool:
        return "[Slow]" in self.name

    @property
    def conformance(self) -> bool:
        """A `[Conformance]` spec (the issue's target), as opposed to `[NodeConformance]` only."""
        return "[Conformance]" in self.name

    @property
    def passed(self) -> bool:
        return self.state == "passed"


def _file(location: dict[str, Any]) -> str:
    name = str(location.get("FileName", ""))
    return name.split(SUITE_ROOT, 1)[1] if SUITE_ROOT in name else name


def _failure(report: dict[str, Any]) -> str:
    failure = report.get("Failure") or {}
    message = str(failure.get("Message", "")).strip()
    return message


def load_specs(path: Path) -> list[Spec]:
    """The `It` specs of a Ginkgo JSON report (a list of suite reports), in report order.
    A spec the filters did not select is left out unless it ran: the report lists every spec
    of the suite, skipped or not, and only the selected ones matter."""
    suites = json.loads(path.read_text())
    specs: list[Spec] = []
    for suite in suites:
        for report in suite.get("SpecReports") or []:
            if report.get("LeafNodeType") != "It":
                continue
            texts = [*(report.get("ContainerHierarchyTexts") or []), report.get("LeafNodeText", "")]
            location = report.get("LeafNodeLocation") or {}
            specs.append(
                Spec(
                    name=" ".join(t for t in texts if t),
                    file=_file(location),
                    line=int(location.get("LineNumber", 0)),
                    state=str(report.get("State", "")),
                    seconds=int(report.get("RunTime", 0)) / 1e9,
                    failure=_failure(report),
                    attempts=int(report.get("NumAttempts") or 0),
                )
            )
    return specs


def selected(specs: list[Spec]) -> list[Spec]:
    """The specs a dry run selected (a dry run "passes" every selected spec)."""
    return [s for s in specs if s.state != "skipped"]


def shard(specs: list[Spec], count: int) -> list[list[str]]:
    """`count` groups of `--ginkgo.focus-file` values (`<file regexp>:<line>,<line>`), balanced
    by weight (a `[Slow]` spec weighs `SLOW_WEIGHT`). Specs that share a `file:line` (a loop or
    a table at one line) stay together, so that no spec runs twice. Empty groups are dropped."""
    units: dict[tuple[str, int], int] = defaultdict(int)
    for spec in specs:
        units[(spec.file, spec.line)] += SLOW_WEIGHT if spec.slow else 1
    loads = [0] * count
    groups: list[dict[str, list[int]]] = [defaultdict(list) for _ in range(count)]
    for (file, line), weight in sorted(units.items(), key=lambda u: (-u[1], u[0])):
        target = loads.index(min(loads))
        loads[target] += weight
        groups[target][file].append(line)
    return [
        [
            f"{re.escape(SUITE_ROOT + file)}:{','.join(map(str, sorted(lines)))}"
            for file, lines in group.items()
        ]
        for group in groups
        if group
    ]
