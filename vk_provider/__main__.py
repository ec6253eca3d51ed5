"""`python -m vk_provider`: the same as the `vk-provider` console script."""

import sys

from vk_provider.cli import main

sys.exit(main())
