"""Kubernetes names the provider and the sandbox both use.

What lives here: the taint every provider node carries by default (`PROVIDER_TAINT_KEY`,
`PROVIDER_TAINT_EFFECT`; the provider's `config.DEFAULT_TAINT`), which the sandbox's add-ons
tolerate. Must not: import the provider or the sandbox.
"""

from __future__ import annotations

PROVIDER_TAINT_KEY = "virtual-kubelet.io/provider"
PROVIDER_TAINT_EFFECT = "NoSchedule"
