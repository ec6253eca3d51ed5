"""vk-provider: a virtual-kubelet provider that runs pods as local Docker containers.

Only the version, and the User-Agent made of it that the provider sends to the apiserver and to the
engine, live here; nothing is imported at package import time.
"""

__version__ = "0.1.0"
USER_AGENT = f"vk-provider/{__version__}"
