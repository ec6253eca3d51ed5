"""`python -m tests.support.fidelity REAL_KUBECONFIG EMULATOR_KUBECONFIG [SCENARIO...]`: the
scenarios against two sandboxes that are already running; prints the differences."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.support.fidelity.harness import Server, run_pair
from tests.support.fidelity.scenarios import SCENARIOS


async def _main(real_config: str, emulator_config: str, names: list[str]) -> int:
    real = Server.from_kubeconfig("real", Path(real_config))
    emulator = Server.from_kubeconfig("emulator", Path(emulator_config))
    failed = 0
    for s in SCENARIOS:
        if names and s.name not in names:
            continue
        result = await run_pair(real, emulator, s)
        diffs = result.differences
        print(f"{'ok  ' if not diffs else 'DIFF'} {s.name}")
        for d in diffs:
            print(f"     {d}")
        failed += bool(diffs)
    print(f"{failed} scenario(s) differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(_main(sys.argv[1], sys.argv[2], sys.argv[3:])))
