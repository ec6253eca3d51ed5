"""The resilience suite: faults in the provider, Docker, the apiserver and etcd, nothing lost.

Every test here is marked `resilience` (run the suite alone with `pytest -m resilience`) and
`docker`; each starts a load, injects its fault, then checks with `tests.support.convergence`
that the API, the engine and the pods' watched history agree. docs/reliability.md lists each
guarantee with its test. Must not: hold helpers shared with other tiers (tests/support has them).
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/resilience/" in str(item.path):
            item.add_marker(pytest.mark.resilience)
            item.add_marker(pytest.mark.docker)
