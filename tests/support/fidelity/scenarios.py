"""Every fidelity scenario, in the order they run (the watch from resourceVersion 1 first).

Must not: hold scenarios (scenarios_objects.py, scenarios_api.py and scenarios_dra.py do).
"""

from __future__ import annotations

from tests.support.fidelity.harness import Scenario
from tests.support.fidelity.scenarios_api import API_SCENARIOS
from tests.support.fidelity.scenarios_dra import DRA_SCENARIOS
from tests.support.fidelity.scenarios_objects import OBJECT_SCENARIOS

SCENARIOS: tuple[Scenario, ...] = OBJECT_SCENARIOS + API_SCENARIOS + DRA_SCENARIOS
SCENARIO_NAMES = [s.name for s in SCENARIOS]
assert len(set(SCENARIO_NAMES)) == len(SCENARIO_NAMES), "scenario names must be unique"


def scenario(name: str) -> Scenario:
    return next(s for s in SCENARIOS if s.name == name)
