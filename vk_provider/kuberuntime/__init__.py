"""The kuberuntime layer: a pod turned into fully resolved, engine-neutral configurations.

What lives here: the kubelet's rules that decide what a pod's sandbox and containers get,
computed from the pod and the node's settings into plain values any engine can apply, with the
Events those rules call for returned to the caller instead of recorded (`dns.py`: the pod's
resolver configuration). Upstream: the parts of pkg/kubelet/kuberuntime and the helpers it calls
that run before a CRI request is sent.
Must not: import the pod workers (`vk_provider.pods`) or an engine (`vk_provider.runtime.docker`),
read files, record Events or call an engine: the pod workers read and record, the engine applies.
"""
