"""`python -m vk_cli`: the same as the `vk-provider` console script."""

import sys

from vk_cli.main import main

sys.exit(main())
