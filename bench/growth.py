"""How each figure grows with the pods: the benches at several sizes, one after the other, one table.

`python -m bench.growth [--control-plane emulator|real|both] [--only startup,lone,...] [--out DIR]`

What lives here: the grid of issue 32's table (docs/performance.md): `bench.startup` at 20, 100
and 250 pods, `bench.lone` (10 pods) beside 0 and 50 running ones, `bench.steady` at 50, 200 and 500,
`bench.scale` at 100, 250 and 500, `bench.churn` at 500, on each control plane asked for. Each
bench runs as its own `python -m bench.<name>` subprocess, one at a time (never two at once: they
share the engine and the two cores); its whole output is kept in
`DIR/<plane>-<bench>-<pods>[-background-N].txt` and its `RESULT` line read; at the end (and after
every run, so a stopped grid leaves what it measured) `DIR/growth.md` holds one table per bench
with the figures the issue's goals name. A bench that fails is a row saying so, and the grid goes
on. Must not: import from `tests/`, run
anything itself but the bench modules, or judge a figure (the goals live in the docs).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import report
from bench.sandbox import REPO


@dataclass(frozen=True)
class Step:
    bench: str
    pods: int
    extra: tuple[str, ...] = ()

    def file_name(self, plane: str) -> str:
        return "-".join((plane, self.bench, str(self.pods), *(a.lstrip("-") for a in self.extra))) + ".txt"


# The sizes of the table (20, 100, 250, 500), each where its bench says something.
GRID = (
    Step("startup", 20),
    Step("startup", 100),
    Step("startup", 250),
    Step("lone", 10, ("--background", "0")),
    Step("lone", 10, ("--background", "50")),
    Step("steady", 50),
    Step("steady", 200),
    Step("steady", 500),
    Step("scale", 100),
    Step("scale", 250),
    Step("scale", 500),
    Step("churn", 500),
)

# The RESULT keys each bench's table shows, in order.
COLUMNS = {
    "startup": (
        "p50_ratio",
        "p99_ratio",
        "throughput_ratio",
        "machine_cpu_ratio",
        "client_ms",
        "floor_client_ms",
    ),
    "lone": ("background", "p50_ratio", "p99_ratio", "provider_p99_s", "slo_met"),
    "steady": ("cpu_pct", "rss_mb", "docker_calls_per_s", "api_requests", "seconds"),
    "scale": (
        "seconds_to_all_running",
        "cpu_ms_per_pod_max",
        "idle_cpu_pct_max",
        "rss_mb_max",
        "lost",
        "duplicated",
        "stray",
    ),
    "churn": ("status_writes_per_pod", "final_deletes_per_pod", "seconds"),
}


def parse_result(output: str) -> dict[str, str] | None:
    """The key=value pairs of the last `RESULT` line of a bench's output, or None if it has none."""
    for line in reversed(output.splitlines()):
        if line.startswith("RESULT "):
            return dict(pair.split("=", 1) for pair in line.split()[1:] if "=" in pair)
    return None


def run_step(step: Step, plane: str, out: Path) -> dict[str, str] | None:
    """One bench in its own process; its output in `out`; its RESULT, or None if it failed."""
    argv = [sys.executable, "-m", f"bench.{step.bench}", "--pods", str(step.pods), "--control-plane", plane]
    argv += step.extra
    report.progress(" ".join(argv[1:]))
    began = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    out.write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    result = parse_result(done.stdout) if done.returncode == 0 else None
    report.progress(f"{'done' if result else 'FAILED'} in {time.monotonic() - began:.0f} s: {out.name}")
    return result


def tables(rows: Sequence[tuple[str, Step, dict[str, str] | None]]) -> str:
    """One Markdown table per bench: a row per (plane, pods), its COLUMNS."""
    parts: list[str] = []
    for bench, columns in COLUMNS.items():
        mine = [(plane, step, result) for plane, step, result in rows if step.bench == bench]
        if not mine:
            continue
        body = [
            [plane, step.pods, *((result or {}).get(c, "FAILED" if result is None else "") for c in columns)]
            for plane, step, result in mine
        ]
        parts.append(f"### {bench}\n\n" + report.markdown_table(["control plane", "pods", *columns], body))
    return "\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.growth", description=__doc__.splitlines()[0])
    parser.add_argument("--control-plane", choices=("emulator", "real", "both"), default="both")
    parser.add_argument(
        "--only",
        default="",
        metavar="BENCHES",
        help=f"comma-separated, of: {', '.join(COLUMNS)} (default: all)",
    )
    parser.add_argument(
        "--out", type=Path, help="the outputs' directory (default: bench-results/growth-<time>)"
    )
    args = parser.parse_args(argv)
    only = {name for name in args.only.split(",") if name}
    if unknown := only - set(COLUMNS):
        parser.error(f"--only: no bench {', '.join(sorted(unknown))}")
    out: Path = args.out or REPO / "bench-results" / time.strftime("growth-%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    planes = ("emulator", "real") if args.control_plane == "both" else (args.control_plane,)
    rows: list[tuple[str, Step, dict[str, str] | None]] = []
    for plane in planes:
        for step in GRID:
            if only and step.bench not in only:
                continue
            rows.append((plane, step, run_step(step, plane, out / step.file_name(plane))))
            (out / "growth.md").write_text(tables(rows))
    print(tables(rows), end="")
    return 0 if all(result is not None for _, _, result in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
