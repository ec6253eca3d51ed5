"""The conformance run's pure parts (conformance/): spec reports, sharding, triage, the rendered
results section and the merged JUnit file."""

from __future__ import annotations

import datetime
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conformance import run as run_module
from conformance.compare_planes import compare
from conformance.report import BEGIN, END, RunFacts, render, render_into
from conformance.run import merge_junit
from conformance.specs import Spec, load_specs, selected, shard
from conformance.subset import SUBSET, subset_focus
from conformance.triage import TriageError, load_triage, skip_regexp, triage_of


def run_facts(seconds: float, skip: str, shards: int) -> RunFacts:
    return RunFacts(
        seconds=seconds,
        focus="F",
        skip=skip,
        shards=shards,
        version="v1.37.2",
        revision="abc1234",
        finished=datetime.datetime(2026, 12, 3, 18, 0, tzinfo=datetime.UTC),
    )


def report(*specs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"SpecReports": [{"LeafNodeType": "BeforeSuite", "State": "passed"}, *specs]}]


def it(
    texts: list[str], leaf: str, file: str, line: int, state: str = "passed", failure: str = ""
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "LeafNodeType": "It",
        "ContainerHierarchyTexts": texts,
        "LeafNodeText": leaf,
        "LeafNodeLocation": {"FileName": f"k8s.io/kubernetes@v1.37.2/test/e2e/{file}", "LineNumber": line},
        "State": state,
        "RunTime": 2_500_000_000,
        "NumAttempts": 0 if state == "skipped" else 1,
    }
    if failure:
        out["Failure"] = {"Message": failure}
    return out


def test_load_specs_names_files_and_failures(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(
        json.dumps(
            report(
                it(["[sig-node] Pods"], "should be updated [Conformance]", "common/node/pods.go", 10),
                it(["[sig-node] X"], "y [NodeConformance] [Slow]", "node/x.go", 5, "failed", "boom\nmore"),
                it(["[sig-node] Z"], "z", "node/z.go", 1, "skipped"),
            )
        )
    )
    specs = load_specs(path)
    assert [s.name for s in specs] == [
        "[sig-node] Pods should be updated [Conformance]",
        "[sig-node] X y [NodeConformance] [Slow]",
        "[sig-node] Z z",
    ]
    assert specs[0].file == "common/node/pods.go" and specs[0].seconds == 2.5 and specs[0].conformance
    assert specs[1].failure == "boom\nmore" and specs[1].slow and not specs[1].conformance
    assert len(selected(specs)) == 2
    assert [s.attempts for s in specs] == [1, 1, 0]


def test_shards_are_balanced_and_never_split_one_file_line() -> None:
    specs = [Spec(f"s{i}", "common/node/a.go", i, "passed") for i in range(6)]
    specs += [Spec("loop-1", "node/b.go", 7, "passed"), Spec("loop-2", "node/b.go", 7, "passed")]
    specs.append(Spec("slow [Slow]", "node/c.go", 3, "passed"))
    groups = shard(specs, 3)
    assert len(groups) == 3
    flat = [f for group in groups for f in group]
    assert sum("b\\.go:7" in f for f in flat) == 1  # both loop specs in one shard
    lines = sorted(int(n) for f in flat if "a\\.go" in f for n in f.rsplit(":", 1)[1].split(","))
    assert lines == [0, 1, 2, 3, 4, 5]
    assert flat[0].startswith("test/e2e/")
    assert shard(specs[:1], 3) == [["test/e2e/common/node/a\\.go:0"]]


def test_triage_file_is_valid_and_bad_entries_are_named(tmp_path: Path) -> None:
    load_triage()  # the committed file
    bad = tmp_path / "t.yaml"
    for text, message in [
        ("- {match: 'x', kind: bug}\n", "reason must be a sentence"),
        ("- {match: '(', kind: bug, reason: r}\n", "not a regular expression"),
        ("- {match: 'x', kind: nope, reason: r}\n", "kind must be one of"),
        ("- {match: 'x', kind: bug, reason: r, skip: true}\n", "skip is for not-applicable"),
        ("- {match: 'x', kind: bug, reason: r, extra: 1}\n", "unknown key"),
        ("{}\n", "a list of entries"),
    ]:
        bad.write_text(text)
        with pytest.raises(TriageError, match=message):
            load_triage(bad)
    bad.write_text(
        "- {match: 'DNS', kind: not-applicable, reason: no  cluster DNS, skip: true}\n"
        "- {match: 'flaky', kind: limitation, reason: Docker}\n"
    )
    triage = load_triage(bad)
    assert skip_regexp(triage) == "(?:DNS)"
    entry = triage_of("[sig-network] DNS works", triage)
    assert entry is not None and entry.reason == "no cluster DNS"
    assert triage_of("other", triage) is None


def test_render_counts_the_share_and_gives_every_reason(tmp_path: Path) -> None:
    bad = tmp_path / "t.yaml"
    bad.write_text(
        "- {match: 'needs DNS', kind: not-applicable, reason: No cluster DNS.}\n"
        "- {match: 'docker gap', kind: limitation, reason: Docker cannot.}\n"
        "- {match: 'skipped here', kind: not-applicable, reason: No CSI driver., skip: true}\n"
    )
    triage = load_triage(bad)
    ran = [
        Spec("a [Conformance]", "f.go", 1, "passed"),
        Spec("b [Conformance]", "f.go", 2, "passed"),
        Spec("c docker gap [Conformance]", "f.go", 3, "failed", failure="x"),
        Spec("d needs DNS [Conformance]", "f.go", 4, "failed", failure="y"),
        Spec("e [NodeConformance]", "g.go", 5, "failed", failure="first line\nsecond"),
        Spec("f [NodeConformance]", "g.go", 6, "skipped", failure="Only supported for providers [gce]"),
    ]
    not_run = [Spec("g skipped here [Conformance]", "h.go", 7, "skipped")]
    facts = run_facts(seconds=600, skip="(?:skipped here)", shards=3)
    text = render(ran, not_run, triage, facts)
    assert "| `[Conformance]` | 5 | 4 | 2 | 2 | 0 | 1 |" in text
    assert "| `[NodeConformance]` only | 2 | 2 | 0 | 1 | 1 | 0 |" in text
    assert "**Applicable `[Conformance]` specs passed: 2 of 3 (66.7 %)**" in text
    assert "| c docker gap [Conformance] | `f.go` | failed | limitation | Docker cannot. |" in text
    assert "| e [NodeConformance] | `g.go` | failed | untriaged | first line |" in text
    assert "skipped by the suite | Only supported for providers [gce] |" in text
    assert "No CSI driver. (1):" in text and "**10 min**" in text

    page = tmp_path / "page.md"
    page.write_text("# Title\n\nintro\n")
    render_into(page, "first\n")
    render_into(page, "second\n")
    written = page.read_text()
    assert written.count(BEGIN) == 1 and "second" in written and "first" not in written
    assert written.startswith("# Title\n\nintro\n") and written.rstrip().endswith(END)


def test_merged_junit_keeps_the_specs_run_and_sums_the_shards(tmp_path: Path) -> None:
    parts = []
    for index, cases in enumerate(
        [
            '<testcase name="[It] a [Conformance] [sig-node, Conformance]"/>'
            '<testcase name="[It] b"><failure message="m"/></testcase>'
            '<testcase name="[It] left out by this shard"><skipped/></testcase>'
            '<testcase name="[SynchronizedBeforeSuite]"/>',
            '<testcase name="[It] c"><skipped/></testcase><testcase name="[It] ab"/>'
            '<testcase name="[It] b"><skipped/></testcase>',
        ]
    ):
        part = tmp_path / f"p{index}.xml"
        part.write_text(f'<testsuites><testsuite name="s">{cases}</testsuite></testsuites>')
        parts.append(part)
    # The second shard lists "b" too, as a spec its filters left out.
    merge_junit(list(zip(parts, [{"a [Conformance]", "b"}, {"c"}], strict=True)), tmp_path / "junit.xml")
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert [c.get("name") for c in suite.iter("testcase")] == [
        "[It] a [Conformance] [sig-node, Conformance]",
        "[It] b",
        "[It] c",
    ]
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")


def test_the_subset_focus_is_one_alternative_per_spec_with_re2_escapes() -> None:
    focus = subset_focus()
    assert focus.count("|") >= len(SUBSET) - 1
    assert "\\[sig-node\\] Pods should get a host IP(?: \\[|$)" in focus
    assert "\\ " not in focus  # RE2 refuses an escaped space
    assert len(set(SUBSET)) == len(SUBSET) == 22


@pytest.fixture
def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """docs/conformance.md as the run sees it, in `tmp_path`."""
    doc = tmp_path / "conformance.md"
    doc.write_text("# Conformance\n")
    monkeypatch.setattr(run_module, "DOC", doc)
    monkeypatch.setattr(run_module, "REPO", tmp_path)
    return doc


def test_a_saved_run_renders_again_with_the_current_triage(tmp_path: Path, page: Path) -> None:
    facts = run_facts(seconds=60, skip="", shards=2)
    ran = [
        Spec("a [Conformance]", "f.go", 1, "passed", 1.5, "", 1),
        Spec("b [Conformance]", "f.go", 2, "failed", 3.0, "x", 1),
    ]
    run_module.save_run(tmp_path, ran, [], facts)
    assert [s["name"] for s in json.loads((tmp_path / "specs.json").read_text())] == [
        "a [Conformance]",
        "b [Conformance]",
    ]
    run_module.render_saved([tmp_path])
    assert "**Applicable `[Conformance]` specs passed: 1 of 2 (50.0 %)**" in page.read_text()
    with pytest.raises(SystemExit, match="no saved run"):
        run_module.render_saved([tmp_path / "missing"])


def test_a_suite_run_in_parts_renders_as_one_with_a_row_per_sig(tmp_path: Path, page: Path) -> None:
    network, apps = tmp_path / "network", tmp_path / "apps"
    network.mkdir()
    apps.mkdir()
    run_module.save_run(
        network,
        [
            Spec("[sig-network] a [Conformance]", "n.go", 1, "passed", 1.0, "", 1),
            Spec("[sig-network] b [Conformance]", "n.go", 2, "failed", 1.0, "x", 1),
        ],
        [],
        run_facts(seconds=120, skip="", shards=4),
    )
    run_module.save_run(
        apps,
        [Spec("[sig-apps] c [Conformance]", "a.go", 1, "passed", 1.0, "", 1)],
        [Spec("[sig-apps] d [Conformance]", "a.go", 2, "skipped")],
        run_facts(seconds=180, skip="", shards=5),
    )
    rerun = tmp_path / "rerun"
    rerun.mkdir()
    run_module.save_run(
        rerun,
        [Spec("[sig-network] b [Conformance]", "n.go", 2, "passed", 1.0, "", 1)],
        [],
        run_facts(seconds=0, skip="", shards=1),
    )
    run_module.render_saved([network, apps])
    text = page.read_text()
    assert "| `[Conformance]` | 4 | 3 | 2 | 1 | 0 | 1 |" in text
    run_module.render_saved([network, apps, rerun])  # a part run again after a fix: its result counts
    assert "| sig-network | 2 | 2 | 2 | 0 | 100.0 % |" in page.read_text()
    run_module.render_saved([network, apps])
    assert "| sig-network | 2 | 2 | 1 | 1 | 50.0 % |" in text
    assert "| sig-apps | 2 | 1 | 1 | 0 | 100.0 % |" in text
    assert "**5 min**" in text and "5 `e2e.test` processes at once" in text


def test_the_planes_compared_per_sig_with_table_specs_kept_apart() -> None:
    """conformance.compare_planes: a spec passes on the real plane by its own run, else by the
    whole-suite run's doc (a [Conformance] spec not listed as failed); specs of one table share a
    file and line and are still told apart; what passed on the real plane only is listed."""

    def spec(name: str, state: str, line: int = 10) -> Spec:
        return Spec(name=name, file="common/node/x.go", line=line, state=state, attempts=1)

    table = [spec(f"[sig-node] T case {i} [NodeConformance]", "passed") for i in range(3)]
    conformance = spec("[sig-storage] S [Conformance]", "passed", line=20)
    listed = spec("[sig-node] Env [Conformance]", "failed", line=30)
    real_runs = {(s.file, s.line, s.name): s for s in table}
    emulator = {(s.file, s.line, s.name): s for s in [*table[:2], conformance, listed]}
    emulator[(table[2].file, table[2].line, table[2].name)] = spec(table[2].name, "failed")
    printed = compare(real_runs, emulator, [*table, conformance, listed], {"[sig-node] Env"})
    assert "| sig-node | 4 | 3 | 2 | 2 | 66.7 % |" in printed
    assert "| sig-storage | 1 | 1 | 1 | 1 | 100.0 % |" in printed
    assert "Passed on the real plane, not on the emulator (1):" in printed
    assert "- [sig-node] T case 2 [NodeConformance]" in printed
