"""The node's kubelet HTTP API (logs, exec, attach, pods, stats); see docs/kubelet-api.md."""

from vk_provider.kubeletapi.server import KubeletServer

__all__ = ["KubeletServer"]
