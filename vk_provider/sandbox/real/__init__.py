"""The real upstream control plane for `vk-provider sandbox --control-plane real`.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler, built from their Go
modules by `scripts/ensure-kube.sh`, each run as a process of its own on 127.0.0.1 with a
PKI made here. Modules: `pki` (certificates and service-account keys), `components` (the
command line of each component, pure), `process` (one component process and its log),
`cluster` (`RealControlPlane`: start in order, wait until ready, stop), `identities` (the
credentials the providers run with: the chart's RBAC or a kubelet's node identity).
Must not: import the emulator's server or the provider's internals.
"""
