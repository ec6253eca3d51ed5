"""How a bench reports and runs: progress lines, percentiles, the Markdown table, the `RESULT`
line (`result_line`, `print_result`), the arguments every bench takes, `run` (exit 0, or 1 with
the error on stderr; SIGTERM cancels like Ctrl-C) and `main` (the bench modules' `main`).

Must not: import from `tests/`; print anything but the tables and the `RESULT` line on stdout
(progress goes to stderr); know about the sandbox, the pods or what is counted.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
import traceback
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any


def progress(message: str) -> None:
    """A progress line on stderr (stdout holds only the tables and the RESULT line)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def common_arguments(parser: argparse.ArgumentParser, pods: int) -> None:
    parser.add_argument("--pods", type=int, default=pods, metavar="N", help=f"pods (default: {pods})")
    parser.add_argument(
        "--control-plane",
        choices=("emulator", "real"),
        default="emulator",
        help="the sandbox's control plane (default: emulator)",
    )
    parser.add_argument(
        "--kube-bin",
        metavar="DIR",
        help="with --control-plane real: the binaries (default: what scripts/ensure-kube.sh prints)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="how long to wait for the pods to be Running, or gone (default: 300)",
    )


def settle_argument(parser: argparse.ArgumentParser, default: float) -> None:
    """`--settle S`: the wait after all pods are Running, before a bench measures."""
    parser.add_argument(
        "--settle",
        type=float,
        default=default,
        metavar="S",
        help=f"wait after all pods are Running, before measuring (default: {default:g})",
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between the closest ranks."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def result_line(values: Mapping[str, object]) -> str:
    """`RESULT key=value ...`: the one line a script reads (the last line of the output)."""
    return "RESULT " + " ".join(f"{key}={fmt(value)}" for key, value in values.items())


def print_result(args: argparse.Namespace, values: Mapping[str, object]) -> None:
    """Print the `RESULT` line (the last line of stdout): `values`, then the run's `pods` and
    `control_plane`."""
    print(result_line({**values, "pods": args.pods, "control_plane": args.control_plane}), flush=True)


def ratio(provider: float, floor: float) -> float:
    return provider / floor if floor > 0 else float("inf")


def run(body: Callable[[], Coroutine[Any, Any, None]]) -> int:
    """Run a bench's coroutine: 0 when it printed its RESULT line, 1 (the error on stderr) if not.
    SIGTERM, like Ctrl-C, cancels it, so its clean-up (the sandbox, the containers) still runs."""

    async def guarded() -> None:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        await body()

    try:
        asyncio.run(guarded())
    except (KeyboardInterrupt, asyncio.CancelledError):
        progress("interrupted")
        return 1
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        progress(f"failed: {type(exc).__name__}: {exc}")
        return 1
    return 0


def main(
    argv: list[str] | None,
    prog: str,
    description: str,
    bench: Callable[[argparse.Namespace], Coroutine[Any, Any, None]],
    more_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    pods: int = 20,
) -> int:
    """A bench module's `main`: `common_arguments` (`pods` pods by default), then the bench's own
    (`more_arguments`), then `run` of `bench(args)`."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    common_arguments(parser, pods=pods)
    if more_arguments is not None:
        more_arguments(parser)
    args = parser.parse_args(argv)
    return run(lambda: bench(args))
