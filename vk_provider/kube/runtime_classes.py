"""The cluster's RuntimeClasses, followed by a reflector (the kubelet's runtimeclass manager).

What lives here: `RuntimeClassLister`, a `StoreLister` over `node.k8s.io/v1` runtimeclasses whose
`handler(name)` gives a pod's `runtimeClassName` its handler, with the kubelet's errors for a
RuntimeClass that does not exist (`runtimeclass.node.k8s.io "x" not found`) or cannot be looked
up yet (`RuntimeClassNotFound`, carried into the pod's FailedCreatePodSandBox Event).
Must not: decide whether the node can run a handler (the runtime does) or write anything.

Upstream: pkg/kubelet/runtimeclass/runtimeclass_manager.go (LookupRuntimeHandler).
"""

from __future__ import annotations

from vk_provider.kube.client import KubeClient
from vk_provider.kube.store_lister import StoreLister

RUNTIME_CLASSES_PATH = "/apis/node.k8s.io/v1/runtimeclasses"


class RuntimeClassNotFound(LookupError):
    """The pod's RuntimeClass could not be resolved; the message is the kubelet's error."""


class RuntimeClassLister(StoreLister):
    def __init__(self, client: KubeClient) -> None:
        super().__init__(client, RUNTIME_CLASSES_PATH, "runtimeclasses")

    def handler(self, runtime_class_name: str) -> str:
        """The handler of RuntimeClass `runtime_class_name` ("" for none: the default handler)."""
        if not runtime_class_name:
            return ""
        if not self.synced():
            raise RuntimeClassNotFound(
                f"failed to lookup RuntimeClass {runtime_class_name}: the RuntimeClasses are not listed yet"
            )
        found = self.get(runtime_class_name)
        if found is None:
            raise RuntimeClassNotFound(f'runtimeclass.node.k8s.io "{runtime_class_name}" not found')
        return str(found.get("handler") or "")
