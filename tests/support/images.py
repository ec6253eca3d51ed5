"""The names of the local test images (built by scripts/build-test-images.sh): busybox and pause.

`BUSYBOX_IMAGE` is the image test containers run (sh, httpd, wget; its web root says "hello from
vk-test/busybox"); `PAUSE_IMAGE` is the sandbox (pause) image a provider under test is given.
Must not: build or pull images (the `test_images` fixture of tests/conftest.py builds them).
"""

from __future__ import annotations

BUSYBOX_IMAGE = "vk-test/busybox:1"
PAUSE_IMAGE = "vk-test/pause:1"
