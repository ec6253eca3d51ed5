"""The results section of docs/conformance.md: `RunFacts`, `render`, `render_into`.

`render` turns the specs of a run (conformance.specs), the triage entries and the facts of the
run into Markdown: the counts for `[Conformance]` and `[NodeConformance]`-only specs, the share
of applicable `[Conformance]` specs that passed, then every spec that did not pass with its
result and its reason, then the specs left out as not applicable. `render_into` replaces what
lies between the two marker comments of the page with it.

Must not: run anything; invent a reason (a spec without a triage entry is shown as untriaged,
with the first line of the suite's failure message).
"""

from __future__ import annotations

import datetime
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from conformance.specs import Spec
from conformance.triage import Triage, triage_of

BEGIN = "<!-- conformance-results:begin (written by python -m conformance.run; do not edit) -->"
END = "<!-- conformance-results:end -->"


@dataclass(frozen=True)
class RunFacts:
    seconds: float
    focus: str
    skip: str
    shards: int
    version: str
    revision: str
    finished: datetime.datetime


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _first_line(message: str, limit: int = 160) -> str:
    line = next((ln.strip() for ln in message.splitlines() if ln.strip()), "no failure message")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _counts(specs: list[Spec]) -> tuple[int, int, int]:
    passed = sum(s.passed for s in specs)
    skipped = sum(s.state == "skipped" for s in specs)
    return passed, len(specs) - passed - skipped, skipped


def _sig(spec: Spec) -> str:
    found = re.match(r"\[(sig-[a-z-]+)\]", spec.name)
    return found.group(1) if found else "other"


def _per_sig(conformance: list[Spec], not_run: list[Spec]) -> list[str]:
    """The `[Conformance]` specs per SIG: selected, run, passed, and the share of those run."""
    lines = [
        "| SIG | `[Conformance]` specs | run | passed | not passed | passed of run |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    selected = Counter(_sig(s) for s in [*conformance, *not_run] if s.conformance)
    run = Counter(_sig(s) for s in conformance)
    passed = Counter(_sig(s) for s in conformance if s.passed)
    for sig, count in sorted(selected.items(), key=lambda item: (-item[1], item[0])):
        share = f"{100.0 * passed[sig] / run[sig]:.1f} %" if run[sig] else "-"
        lines.append(f"| {sig} | {count} | {run[sig]} | {passed[sig]} | {run[sig] - passed[sig]} | {share} |")
    return lines


def render(ran: list[Spec], not_run: list[Spec], triage: list[Triage], facts: RunFacts) -> str:
    """The results section (without the markers)."""
    lines: list[str] = []
    minutes = facts.seconds / 60
    lines += [
        f"Last run: {facts.finished:%Y-%m-%d %H:%M} UTC, `e2e.test` {facts.version} against vk-provider "
        f"`{facts.revision}`, {facts.shards} `e2e.test` processes at once; wall time "
        f"**{minutes:.0f} min** (building included, when cached about a minute).",
        "",
        "| specs | selected | run | passed | failed | skipped by the suite | not run: not applicable |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    groups: dict[str, bool | None] = {"`[Conformance]`": True, "`[NodeConformance]` only": False, "all": None}
    for label, conformance_only in groups.items():
        run = [s for s in ran if conformance_only in (None, s.conformance)]
        left = [s for s in not_run if conformance_only in (None, s.conformance)]
        passed, failed, skipped = _counts(run)
        row = [len(run) + len(left), len(run), passed, failed, skipped, len(left)]
        lines.append(f"| {label} | " + " | ".join(map(str, row)) + " |")
    conformance = [s for s in ran if s.conformance]
    not_applicable = [
        s for s in conformance if (t := triage_of(s.name, triage)) and t.kind == "not-applicable"
    ]
    applicable = [s for s in conformance if s not in not_applicable]
    passed = sum(s.passed for s in applicable)
    share = 100.0 * passed / len(applicable) if applicable else 0.0
    lines += [
        "",
        f"**Applicable `[Conformance]` specs passed: {passed} of {len(applicable)} ({share:.1f} %)** "
        f"(the target is 95 % of the suite's, 90 % of sig-network's). Applicable: run, and not "
        "triaged as not applicable here.",
        "",
        *_per_sig(conformance, not_run),
        "",
    ]

    failing = sorted((s for s in ran if not s.passed), key=lambda s: (s.file, s.name))
    lines += [f"### The {len(failing)} specs that ran and did not pass", ""]
    if failing:
        lines += ["| spec | file | result | kind | reason |", "| --- | --- | --- | --- | --- |"]
        for spec in failing:
            entry = triage_of(spec.name, triage)
            if spec.state == "skipped":
                kind, reason = "skipped by the suite", _first_line(spec.failure)
            elif entry is None:
                kind, reason = "untriaged", _first_line(spec.failure)
            else:
                kind, reason = entry.kind, entry.reason
            lines.append(f"| {_cell(spec.name)} | `{spec.file}` | {spec.state} | {kind} | {_cell(reason)} |")
    else:
        lines.append("None.")
    lines += ["", f"### The {len(not_run)} specs not run: not applicable to this cluster", ""]
    by_reason: dict[str, list[Spec]] = defaultdict(list)
    for spec in not_run:
        entry = triage_of(spec.name, triage)
        by_reason[entry.reason if entry else "left out by --skip"].append(spec)
    for reason, specs in sorted(by_reason.items()):
        lines += [f"{reason} ({len(specs)}):", "", "```text", *sorted(s.name for s in specs), "```", ""]
    if not not_run:
        lines += ["None.", ""]
    lines += [
        "Selection: `--ginkgo.focus='"
        + facts.focus
        + "'`"
        + (
            f" with the skip entries of `conformance/triage.yaml` (`--ginkgo.skip='{facts.skip}'`)."
            if facts.skip
            else "."
        ),
    ]
    return "\n".join(lines).rstrip() + "\n"


def render_into(page: Path, section: str) -> None:
    """Replace the text between BEGIN and END in `page` (appending both at the end if absent)."""
    text = page.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
    else:
        head, tail = text.rstrip() + "\n\n## Results\n\n", "\n"
    page.write_text(f"{head}{BEGIN}\n{section}{END}{tail}")
