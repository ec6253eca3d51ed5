"""vk-provider: a virtual-kubelet provider that runs pods as local Docker containers.

Only the version lives here; nothing is imported at package import time.
"""

__version__ = "0.1.0"
