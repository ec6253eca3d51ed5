"""Docker container queries for tests: the containers carrying some labels, safe under removal.

docker-py's `containers.list` inspects every container it lists, so one the provider removes
between the list and the inspect raised NotFound (a CI flake at stop 18); `ignore_removed`
skips those. This module only reads: it must not create, stop or remove containers.
"""

from __future__ import annotations

from typing import Any


def labelled(
    docker_client: Any, labels: str | list[str], *, all: bool = True, status: str | None = None
) -> list[Any]:
    """The containers that carry every label in `labels` (running ones only unless `all`)."""
    filters: dict[str, Any] = {"label": labels}
    if status is not None:
        filters["status"] = status
    return list(docker_client.containers.list(all=all, filters=filters, ignore_removed=True))
