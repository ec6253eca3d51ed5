"""`python -m conformance.compare_planes`: upstream's specs on the real control plane against the
same specs on the emulator (`conformance.run --control-plane emulator`), per SIG.

Inputs: run directories, `--real DIR` and `--emulator DIR` (several each; a spec run in several
counts with its result in the last), each holding `run.json` or, for a run stopped early, its
`shard-*.json` and `serial-*.json` Ginkgo reports; and `--real-doc`, a page with the real plane's
results section written by conformance.run (docs/conformance.md): every `[Conformance]` spec of
that run passed except those it lists. The specs compared are those the emulator runs selected
(their run.json, or their `dry-run.json`). Prints a Markdown table per SIG and the specs that
passed on the real plane and not on the emulator, with the emulator's failure.
Must not: run the suite or decide why a spec failed (docs/fidelity.md gives the reasons).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

from conformance.report import BEGIN, END
from conformance.specs import Spec, load_specs, selected

Key = tuple[str, int, str]


def results(dirs: list[Path]) -> dict[Key, Spec]:
    """The specs that ran in `dirs`, the last run's result winning."""
    found: dict[Key, Spec] = {}
    for d in dirs:
        run = d / "run.json"
        if run.exists():
            specs = [Spec(**s) for s in json.loads(run.read_text())["ran"]]
        else:
            reports = sorted(d.glob("shard-*.json")) + sorted(d.glob("serial-*.json"))
            specs = [s for r in reports for s in load_specs(r) if s.attempts > 0]
        found.update((s.key, s) for s in specs)
    return found


def selection(d: Path) -> list[Spec]:
    """The specs a run selected: its run.json's, or (a run stopped early) its dry run's."""
    run = d / "run.json"
    if run.exists():
        record = json.loads(run.read_text())
        return [Spec(**s) for s in (*record["ran"], *record["not_run"])]
    return selected(load_specs(d / "dry-run.json"))


def failed_in_doc(page: Path) -> set[str]:
    """The names of the specs the results section of `page` lists as run and not passed."""
    section = page.read_text().split(BEGIN, 1)[1].split(END, 1)[0]
    listed = section.split("specs that ran and did not pass", 1)[1].split("\n### ", 1)[0]
    return {m.group(1).strip() for m in re.finditer(r"^\| (\[sig-[^|]+?) \| `", listed, re.M)}


def _sig(spec: Spec) -> str:
    match = re.match(r"\[(sig-[a-z-]+)\]", spec.name)
    return match.group(1) if match else "other"


def compare(
    real: dict[Key, Spec], emulator: dict[Key, Spec], chosen: list[Spec], doc_failed: set[str]
) -> str:
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    real_only: list[tuple[Spec, Spec | None]] = []
    for spec in chosen:
        ran = real.get(spec.key)
        if ran is not None:
            real_passed = ran.passed
        else:  # the whole-suite run of the doc: passed unless listed
            real_passed = spec.conformance and not any(spec.name.startswith(n) for n in doc_failed)
        emu = emulator.get(spec.key)
        emu_passed = emu is not None and emu.passed
        row = rows[_sig(spec)]
        row[0] += 1
        row[1] += real_passed
        row[2] += emu_passed
        row[3] += real_passed and emu_passed
        if real_passed and not emu_passed:
            real_only.append((spec, emu))
    lines = [
        "| SIG | specs | passed on the real plane | passed on the emulator | passed on both | "
        "of those passing on the real plane, passing on the emulator |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    total = [0, 0, 0, 0]
    for sig, row in sorted(rows.items(), key=lambda item: -item[1][0]):
        total = [a + b for a, b in zip(total, row, strict=True)]
        lines.append(f"| {sig} | {row[0]} | {row[1]} | {row[2]} | {row[3]} | {_share(row)} |")
    lines.append(f"| all | {total[0]} | {total[1]} | {total[2]} | {total[3]} | {_share(total)} |")
    lines += ["", f"Passed on the real plane, not on the emulator ({len(real_only)}):", ""]
    for spec, emu in sorted(real_only, key=lambda pair: pair[0].name):
        why = "not run" if emu is None else (emu.failure.splitlines() or [emu.state])[0][:200]
        lines.append(f"- {spec.name} (`{spec.file}`): {why}")
    return "\n".join(lines)


def _share(row: list[int]) -> str:
    return f"{100 * row[3] / row[1]:.1f} %" if row[1] else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.compare_planes", description=__doc__)
    parser.add_argument("--real", type=Path, action="append", default=[], metavar="DIR")
    parser.add_argument("--emulator", type=Path, action="append", default=[], metavar="DIR", required=True)
    parser.add_argument("--sig", action="append", default=[], help="compare only the specs of these SIGs")
    parser.add_argument("--not-sig", action="append", default=[], help="leave out the specs of these SIGs")
    parser.add_argument(
        "--real-doc", type=Path, default=Path(__file__).parents[1] / "docs" / "conformance.md"
    )
    opts = parser.parse_args(argv)
    chosen: dict[Key, Spec] = {}
    for d in opts.emulator:
        chosen.update(
            (s.key, s)
            for s in selection(d)
            if (not opts.sig or _sig(s) in opts.sig) and _sig(s) not in opts.not_sig
        )
    print(
        compare(
            results(opts.real), results(opts.emulator), list(chosen.values()), failed_in_doc(opts.real_doc)
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
