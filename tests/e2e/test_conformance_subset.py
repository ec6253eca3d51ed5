"""The fast subset of the upstream conformance suite (conformance/subset.py, issue 16 item 4), on
every `make test`: twenty-two specs of the built `e2e.test` (container lifecycle, probes,
hooks, downward API, volumes with ClusterTrustBundle and podCertificate projections, security
context, termination messages, ephemeral containers, RuntimeClass, pod status) against a
vk-provider node on the real control plane, run by `python -m conformance.run --subset`
exactly as `make conformance` runs the full selection.

`make test` builds the suite first (`make conformance-build`); run alone, this test builds it
when missing (scripts/build-conformance.sh, cached).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.subset import SUBSET

pytestmark = [pytest.mark.docker, pytest.mark.real_only, pytest.mark.timeout(3600)]

REPO = Path(__file__).resolve().parents[2]


def test_the_conformance_subset_passes(control_plane: str, tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "conformance.run", "--subset", "--shards", "3", "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=3000,
        check=False,
    )
    specs_file = tmp_path / "specs.json"
    assert specs_file.exists(), f"no results (exit {run.returncode}):\n{run.stderr[-3000:]}"
    specs = json.loads(specs_file.read_text())
    failed = {s["name"]: s["failure"][:600] for s in specs if s["state"] != "passed"}
    assert not failed, f"{len(failed)} of {len(specs)} specs did not pass:\n" + "\n\n".join(
        f"{name}\n  {message}" for name, message in failed.items()
    )
    assert len(specs) == len(SUBSET)
    assert run.returncode == 0, run.stderr[-3000:]
    junit = (tmp_path / "junit.xml").read_text()
    assert junit.count("<testcase") == len(SUBSET)
