"""The test infrastructure works against the real engine: images exist, containers are cleaned up."""

from __future__ import annotations

import uuid

import docker
import pytest

from tests.conftest import TEST_LABEL, _remove_labelled
from tests.support.containers import labelled


def test_busybox_container_lifecycle(docker_client, test_images, test_labels):
    container = docker_client.containers.create(
        test_images["busybox"],
        command=["sh", "-c", "echo ready; httpd -f -p 8080 -h /var/www & wait"],
        labels=test_labels,
    )
    container.start()
    container.reload()
    assert container.status == "running"
    assert container.attrs["Config"]["Labels"][TEST_LABEL] == test_labels[TEST_LABEL]
    exit_code, output = container.exec_run(["sh", "-c", "wget -qO- http://127.0.0.1:8080/ && which nc"])
    assert exit_code == 0, output
    assert b"hello from vk-test/busybox" in output
    container.remove(force=True)
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(container.id)


def test_pause_image_exits_zero_on_sigterm(docker_client, test_images, test_labels):
    container = docker_client.containers.run(test_images["pause"], detach=True, labels=test_labels)
    container.stop(timeout=10)
    container.reload()
    assert container.attrs["State"]["ExitCode"] == 0


def test_cleanup_removes_leftovers_of_a_failed_test(docker_client, test_images):
    """What the `test_labels` fixture does after a failing test: every labelled container goes."""
    label = f"{TEST_LABEL}={uuid.uuid4().hex[:12]}"
    key, value = label.split("=")
    ids = [
        docker_client.containers.run(test_images["pause"], detach=True, labels={key: value}).id
        for _ in range(2)
    ]
    _remove_labelled(docker_client, label)
    remaining = {c.id for c in labelled(docker_client, label)}
    assert not remaining & set(ids)
