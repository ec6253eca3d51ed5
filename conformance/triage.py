"""Why a spec does not pass: `Triage`, `load_triage` (conformance/triage.yaml).

Each entry of triage.yaml names specs by a regular expression on the full spec name, says
what kind of reason it is and gives the reason in a sentence:

- `not-applicable`: the spec needs a part this cluster does not have (kube-proxy Service
  routing, cluster DNS, a CSI driver, a second node, Windows, a feature gate that is off).
  With `skip: true` the run does not start it (the issue allows skipping for this only).
- `limitation`: a documented limitation of Docker or of a virtual node; the spec runs and
  fails.
- `bug`: a vk-provider bug not yet fixed; the spec runs and fails.

Must not: run anything; hide a failure (a spec that did not pass and matches no entry is
reported as untriaged, with the suite's own failure message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

TRIAGE_FILE = Path(__file__).with_name("triage.yaml")
KINDS = ("not-applicable", "limitation", "bug")


class TriageError(ValueError):
    """triage.yaml is malformed: the message names the entry and the key."""


@dataclass(frozen=True)
class Triage:
    pattern: re.Pattern[str]
    kind: str
    reason: str
    skip: bool = False

    def matches(self, spec_name: str) -> bool:
        return self.pattern.search(spec_name) is not None


def load_triage(path: Path = TRIAGE_FILE) -> list[Triage]:
    entries = yaml.safe_load(path.read_text())
    entries = [] if entries is None else entries
    if not isinstance(entries, list):
        raise TriageError(f"{path}: a list of entries is expected")
    triage: list[Triage] = []
    for index, entry in enumerate(entries):
        where = f"{path}: entry {index}"
        if not isinstance(entry, dict):
            raise TriageError(f"{where}: a mapping is expected")
        unknown = set(entry) - {"match", "kind", "reason", "skip"}
        if unknown:
            raise TriageError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        try:
            pattern = re.compile(str(entry["match"]))
        except KeyError:
            raise TriageError(f"{where}: match is missing") from None
        except re.error as err:
            raise TriageError(f"{where}: match is not a regular expression: {err}") from None
        kind = entry.get("kind")
        if kind not in KINDS:
            raise TriageError(f"{where}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise TriageError(f"{where}: reason must be a sentence")
        skip = entry.get("skip", False)
        if not isinstance(skip, bool) or (skip and kind != "not-applicable"):
            raise TriageError(f"{where}: skip is for not-applicable entries only (true or false)")
        triage.append(Triage(pattern, kind, " ".join(reason.split()), skip))
    return triage


def triage_of(spec_name: str, triage: list[Triage]) -> Triage | None:
    """The first entry that names the spec, or None."""
    return next((t for t in triage if t.matches(spec_name)), None)


def skip_regexp(triage: list[Triage]) -> str:
    """The `--ginkgo.skip` regular expression of the entries marked `skip` (Go RE2 syntax
    shares what these patterns use: alternation, classes, escapes)."""
    return "|".join(f"(?:{t.pattern.pattern})" for t in triage if t.skip)
