"""`python -m conformance.run` (`make conformance`): the upstream SIG Node conformance specs
against vk-provider.

1. Builds (or finds cached) `e2e.test` and the test images (`scripts/build-conformance.sh`)
   and the real control plane (`scripts/ensure-kube.sh`).
2. Lists the selected specs with a dry run: the focus (default: SIG Node `[Conformance]` and
   every `[NodeConformance]` spec) less the `skip: true` entries of triage.yaml.
3. Starts `vk-provider sandbox --control-plane real --provider-identity node` with one node
   and no taint, so that the suite's pods land on it, the node a kubelet under the Node
   authorizer, allowing what a kubelet allows, its address the Docker bridge's gateway.
   With `--cluster`: a cluster (`--cluster-network`: kube-proxy, CoreDNS, node CIDRs, pod
   routing between the nodes) of `CLUSTER_NODES` such nodes, and the whole suite by default.
4. Runs the specs in `--shards` `e2e.test` processes at once (the `[Serial]` ones after, alone),
   each with its share as `--ginkgo.focus-file file:line` filters.
5. Writes `<out>/junit.xml` (every spec, one test suite), `<out>/specs.json` and, unless
   `--no-render`, the results section of docs/conformance.md (conformance.report).

Must not: import from `tests/`; leave the sandbox or its containers behind (`--clean`, and a
stop on any exit).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path

import yaml

from bench.sandbox import REPO, ensure_kube_bin
from conformance.report import RunFacts, render, render_into
from conformance.specs import Spec, load_specs, selected, shard
from conformance.subset import SUBSET, subset_focus
from conformance.triage import load_triage, skip_regexp
from vk_common.ports import free_port
from vk_sandbox.bridge_address import bridge_gateway

DEFAULT_FOCUS = r"\[sig-node\].*\[Conformance\]|\[NodeConformance\]"
CLUSTER_FOCUS = r"\[Conformance\]|\[NodeConformance\]"
# Two nodes: the network specs reach pods on another node; the e2e framework picks at most
# two nodes for its networking checks (test/e2e/framework/network/utils.go maxNetProxyPodsCount).
CLUSTER_NODES = 2
START_DEADLINE = 300.0
STOP_DEADLINE = 120.0
DOC = REPO / "docs" / "conformance.md"
# The kubelet's default port: the e2e framework reaches a node's kubelet through nodes/proxy on
# it, whatever the Node's daemonEndpoints say (test/e2e/framework/kubelet).
KUBELET_PORT = 10250
# The node as a kubelet's defaults have it: no taint, so that the suite's pods land on it, and
# what a kubelet allows (hostPath, host namespaces, privileged, Unconfined profiles) allowed.
NODE_CONFIG = {
    "node": {"taints": []},
    "docker": {
        "allow": {
            "privileged": True,
            "hostPath": True,
            "hostNetwork": True,
            "hostPID": True,
            "hostIPC": True,
            "unconfined": True,
            "capabilities": ["NET_ADMIN", "NET_RAW", "SYS_ADMIN", "SYS_PTRACE", "SYS_TIME"],
        }
    },
}


def log(message: str) -> None:
    print(f"conformance: {message}", file=sys.stderr, flush=True)


def build_suite() -> Path:
    """The directory of e2e.test: the last line `scripts/build-conformance.sh` prints."""
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-conformance.sh")],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        raise SystemExit("conformance: scripts/build-conformance.sh failed (see above)")
    return Path(built.stdout.strip().splitlines()[-1])


def node_address() -> str:
    """The node's InternalIP: the Docker bridge's gateway, a host address that is not loopback
    (the apiserver refuses to proxy nodes/proxy to 127.0.0.1); 127.0.0.1 if the engine does not
    say, and the nodes/proxy specs then fail with the log saying why."""
    gateway = bridge_gateway()
    if gateway is None:
        log("the Docker bridge has no gateway address; the node is on 127.0.0.1")
        return "127.0.0.1"
    return gateway


def kubelet_port(address: str) -> int:
    """KUBELET_PORT when it is free on `address`, else 0 (a free port: the specs that reach the
    kubelet through nodes/proxy on 10250 then fail, and the log says why)."""
    with socket.socket() as probe:
        # As the provider's listener binds: a port whose last connections of a sandbox just
        # stopped are in TIME_WAIT is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, KUBELET_PORT))
        except OSError as err:
            log(f"port {KUBELET_PORT} on {address} is taken ({err.strerror}); the kubelet API gets another")
            return 0
    return KUBELET_PORT


def coredns_image() -> str:
    """The CoreDNS image `scripts/ensure-coredns.sh` builds (cached): its last line."""
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "ensure-coredns.sh")], stdout=subprocess.PIPE, text=True, check=False
    )
    if built.returncode != 0:
        raise SystemExit("conformance: scripts/ensure-coredns.sh failed (see above)")
    return built.stdout.strip().splitlines()[-1]


def suite_args(e2e: Path, focus: str, skip: str) -> list[str]:
    args = [str(e2e), "--ginkgo.focus", focus, "--ginkgo.no-color"]
    return [*args, "--ginkgo.skip", skip] if skip else args


def dry_run(e2e: Path, focus: str, skip: str, out: Path) -> list[Spec]:
    report = out / "dry-run.json"
    subprocess.run(
        [*suite_args(e2e, focus, skip), "--ginkgo.dry-run", f"--ginkgo.json-report={report}"],
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return selected(load_specs(report))


class Sandbox:
    """The sandbox subprocess: the real control plane and one provider for its node, named
    `vk-conformance-<run>-1` so that runs sharing one Docker engine keep apart (a provider
    owns the containers labelled with its node's name)."""

    def __init__(self, out: Path, kube_bin: str, cluster: bool = False, plane: str = "real") -> None:
        self.cluster = cluster
        self.state = out / "state"
        # A fresh cluster each run, as the real plane's etcd starts empty: the emulator keeps its
        # objects in the state directory, and an earlier run's node, NotReady now, would hold up
        # the suite (it waits for every node to be Ready).
        shutil.rmtree(self.state, ignore_errors=True)
        self.log = out / "sandbox.log"
        config = out / "provider.yaml"
        config.write_text(yaml.safe_dump(NODE_CONFIG))
        prefix = f"vk-conformance-{uuid.uuid4().hex[:6]}-"
        address = node_address()
        count = CLUSTER_NODES if cluster else 1
        self.nodes = [f"{prefix}{index}" for index in range(1, count + 1)]
        args = [
            *("--state-dir", str(self.state), "--port", str(free_port()), "--config", str(config)),
            *("--node-prefix", prefix, "--control-plane", plane, "--clean", "--node-address", address),
            *("--kubelet-port", str(kubelet_port(address))),
            *("--nodes", str(count)),
        ]
        if plane == "real":
            args += ["--kube-bin", kube_bin, "--provider-identity", "node"]
        if cluster:
            args += ["--cluster-network", "--coredns-image", coredns_image()]
        with self.log.open("wb") as sink:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "vk_cli", "sandbox", *args],
                cwd=REPO,
                stdout=sink,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        kubectl = Path(sys.executable).parent / "kubectl"
        return subprocess.run(
            [str(kubectl), "--kubeconfig", str(self.kubeconfig), *args],
            capture_output=True,
            text=True,
            check=False,
        )

    def wait_ready(self) -> None:
        """Every node Ready and, in a cluster, CoreDNS Ready (the DNS specs start at once)."""
        end = time.monotonic() + START_DEADLINE
        waiting = "the kubeconfig"
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise SystemExit(
                    f"conformance: the sandbox exited with {self.proc.returncode}; see {self.log}"
                )
            if self.kubeconfig.exists():
                waiting = self._not_ready()
                if not waiting:
                    return
            time.sleep(1)
        raise SystemExit(f"conformance: {waiting} not Ready within {START_DEADLINE:.0f} s; see {self.log}")

    def _not_ready(self) -> str:
        ready = (
            "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=='Ready')].status} {end}"
        )
        nodes = dict(p.split("=", 1) for p in self.kubectl("get", "nodes", "-o", ready).stdout.split())
        for node in self.nodes:
            if nodes.get(node) != "True":
                return f"node {node}"
        if self.cluster:
            dns = self.kubectl("get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-dns", "-o", ready)
            if not any(p.endswith("=True") for p in dns.stdout.split()):
                return "CoreDNS"
        return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_shards(
    e2e: Path, focus: str, skip: str, groups: list[list[str]], kubeconfig: Path, out: Path, tag: str
) -> list[Path]:
    """One e2e.test per group, all at once; their JSON reports."""
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    for index, group in enumerate(groups, 1):
        name = f"{tag}-{index}"
        report = out / f"{name}.json"
        args = [
            *suite_args(e2e, focus, skip),
            *(f"--ginkgo.focus-file={f}" for f in group),
            f"--ginkgo.json-report={report}",
            f"--ginkgo.junit-report={out / f'{name}.xml'}",
            "--ginkgo.timeout=24h",
            "--provider=skeleton",
            f"--kubeconfig={kubeconfig}",
            f"--e2e-output-dir={out / name}",
            "--node-schedulable-timeout=5m",
        ]
        with (out / f"{name}.log").open("wb") as sink:
            proc = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT, cwd=out)
        procs.append((proc, report))
    for proc, _ in procs:
        proc.wait()
    return [report for _, report in procs if report.exists()]


def merge_junit(parts: list[tuple[Path, set[str]]], target: Path) -> None:
    """The shards' JUnit files as one: of each file, the test cases of the specs that shard ran
    (its file lists every spec of the suite, those its filters left out as skipped), in one
    test suite, counts summed. Ginkgo names a case `[It] <spec name> [<labels>]`."""

    merged = ET.Element("testsuites")
    suite = ET.SubElement(merged, "testsuite", name="vk-provider SIG Node conformance")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for part, names in parts:
        for case in ET.parse(part).getroot().iter("testcase"):
            rest = str(case.get("name", "")).removeprefix("[It] ")
            if not any(rest == name or rest.startswith(name + " [") for name in names):
                continue
            suite.append(case)
            totals["tests"] += 1
            for key, total in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
                if case.find(key) is not None:
                    totals[total] += 1
    for key, value in totals.items():
        suite.set(key, str(value))
        merged.set(key, str(value))
    ET.ElementTree(merged).write(target, encoding="utf-8", xml_declaration=True)


def _revision() -> str:
    """The commit under test, `+dirty` when the work tree differs from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
    )
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def save_run(out: Path, ran: list[Spec], not_run: list[Spec], facts: RunFacts) -> None:
    """`<out>/specs.json` (the specs run) and `<out>/run.json` (everything `--render-only`
    needs to render the results again, e.g. after triage.yaml changed)."""
    (out / "specs.json").write_text(json.dumps([asdict(s) for s in ran], indent=1))
    record = {
        "facts": {**asdict(facts), "finished": facts.finished.isoformat()},
        "ran": [asdict(s) for s in ran],
        "not_run": [asdict(s) for s in not_run],
    }
    (out / "run.json").write_text(json.dumps(record, indent=1))


def render_saved(outs: list[Path]) -> None:
    """Render docs/conformance.md's results from the `run.json` of each of `outs` with the
    current triage: one run, or a suite run in parts (by SIG, say) taken as one run whose wall
    time is the parts' sum. A spec in several parts counts once, with its result in the last
    part that ran it (a part run again after a fix)."""
    ran_by_key: dict[tuple[str, int, str], Spec] = {}
    not_run_by_key: dict[tuple[str, int, str], Spec] = {}
    parts: list[RunFacts] = []
    for out in outs:
        try:
            record = json.loads((out / "run.json").read_text())
        except (OSError, ValueError) as err:
            raise SystemExit(f"conformance: no saved run in {out}: {err}") from None
        saved = record["facts"]
        parts.append(RunFacts(**{**saved, "finished": datetime.datetime.fromisoformat(saved["finished"])}))
        for spec in (Spec(**s) for s in record["ran"]):
            ran_by_key[spec.key] = spec
            not_run_by_key.pop(spec.key, None)
        for spec in (Spec(**s) for s in record["not_run"]):
            if spec.key not in ran_by_key:
                not_run_by_key[spec.key] = spec
    ran, not_run = list(ran_by_key.values()), list(not_run_by_key.values())
    facts = RunFacts(
        seconds=sum(p.seconds for p in parts),
        focus="' + '".join(dict.fromkeys(p.focus for p in parts)),
        skip=parts[0].skip,
        shards=max(p.shards for p in parts),
        version=parts[0].version,
        revision=", ".join(dict.fromkeys(p.revision for p in parts)),
        finished=max(p.finished for p in parts),
    )
    render_into(DOC, render(ran, not_run, load_triage(), facts))
    log(f"rendered {DOC.relative_to(REPO)} from {', '.join(str(out / 'run.json') for out in outs)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.run", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--focus",
        help=f"the specs to run (default: {DEFAULT_FOCUS}; with --cluster, {CLUSTER_FOCUS})",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help=f"a cluster of {CLUSTER_NODES} nodes with kube-proxy and CoreDNS (--cluster-network; root)",
    )
    parser.add_argument(
        "--control-plane",
        choices=("real", "emulator"),
        default="real",
        help="the control plane the node runs against: the upstream one, or the sandbox's emulator "
        "(docs/fidelity.md compares the two) (default: %(default)s)",
    )
    parser.add_argument(
        "--skip", default="", help="more specs to leave out, besides triage.yaml's skip entries"
    )
    parser.add_argument(
        "--shards", type=int, default=3, help="e2e.test processes at once (default: %(default)s)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO / "build" / "conformance",
        help="results (default: build/conformance)",
    )
    parser.add_argument("--no-render", action="store_true", help="leave docs/conformance.md as it is")
    parser.add_argument(
        "--subset",
        action="store_true",
        help="run the fast subset of `make test` (conformance/subset.py) instead of --focus; "
        "exit 1 unless every spec of it passed; implies --no-render",
    )
    parser.add_argument(
        "--conformance-only",
        action="store_true",
        help="of the selected specs, run only those tagged [Conformance] (the issue's 90 %% target)",
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="run nothing: render docs/conformance.md again from <out>/run.json with the current triage",
    )
    parser.add_argument(
        "--merge",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="with --render-only: the saved runs of these --out directories as one (a suite run in parts)",
    )
    opts = parser.parse_args(argv)
    if opts.render_only:
        render_saved([d.resolve() for d in opts.merge] or [opts.out.resolve()])
        return 0
    focus = (
        subset_focus() if opts.subset else opts.focus or (CLUSTER_FOCUS if opts.cluster else DEFAULT_FOCUS)
    )

    started = time.time()
    revision = _revision()  # what the providers run: taken before they start, not at the end
    out: Path = opts.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for stale in [*out.glob("shard-*"), *out.glob("serial-*")]:
        if stale.is_file():
            stale.unlink()
    triage = load_triage()
    skip = "|".join(p for p in (skip_regexp(triage), opts.skip) if p)
    bin_dir = build_suite()
    kube_bin = ensure_kube_bin()
    e2e = bin_dir / "e2e.test"
    focused = dry_run(e2e, focus, "", out)
    specs = dry_run(e2e, focus, skip, out)
    if opts.subset and len(specs) != len(SUBSET):
        found = [n for n in SUBSET if any(s.name.startswith(n) for s in specs)]
        missing_names = sorted(set(SUBSET) - set(found))
        raise SystemExit(
            f"conformance: the subset selects {len(specs)} specs, not {len(SUBSET)}: {missing_names}"
        )
    if opts.conformance_only:
        focused = [s for s in focused if s.conformance]
        specs = [s for s in specs if s.conformance]
    keys = {s.key for s in specs}
    not_run = [s for s in focused if s.key not in keys]
    parallel = [s for s in specs if not s.serial]
    serial = [s for s in specs if s.serial]
    log(f"{len(specs)} specs selected ({len(serial)} serial); {opts.shards} shards; results in {out}")

    sandbox = Sandbox(out, kube_bin, opts.cluster, opts.control_plane)
    try:
        sandbox.wait_ready()
        log(f"node(s) {', '.join(sandbox.nodes)} Ready; running the suite")
        reports = run_shards(e2e, focus, skip, shard(parallel, opts.shards), sandbox.kubeconfig, out, "shard")
        if serial:
            reports += run_shards(e2e, focus, skip, shard(serial, 1), sandbox.kubeconfig, out, "serial")
    finally:
        sandbox.stop()

    ran_by_report = {
        r: [spec for spec in load_specs(r) if spec.key in keys and spec.attempts > 0] for r in reports
    }
    ran = [spec for specs_of_shard in ran_by_report.values() for spec in specs_of_shard]
    merge_junit(
        [
            (r.with_suffix(".xml"), {s.name for s in shard_specs})
            for r, shard_specs in ran_by_report.items()
            if r.with_suffix(".xml").exists()
        ],
        out / "junit.xml",
    )
    facts = RunFacts(
        seconds=time.time() - started,
        focus=focus + (" (of those, only the [Conformance] ones)" if opts.conformance_only else ""),
        skip=skip,
        shards=opts.shards,
        version=(REPO / "KUBE_VERSION").read_text().strip(),
        revision=revision,
        finished=datetime.datetime.now(datetime.UTC),
    )
    save_run(out, ran, not_run, facts)
    missing = keys - {s.key for s in ran}
    if missing:
        log(f"{len(missing)} selected spec(s) have no result (a shard ended early); see {out}/shard-*.log")
    if not (opts.no_render or opts.subset):
        render_into(DOC, render(ran, not_run, triage, facts))
        log(f"rendered {DOC.relative_to(REPO)}")
    passed = sum(s.passed for s in ran)
    log(f"{passed} of {len(ran)} run specs passed in {facts.seconds:.0f} s; JUnit in {out / 'junit.xml'}")
    for spec in ran:
        if not spec.passed:
            log(f"{spec.state}: {spec.name}: {spec.failure.splitlines()[0] if spec.failure else ''}")
    return 1 if opts.subset and (missing or passed < len(ran)) else 0


if __name__ == "__main__":
    raise SystemExit(main())
