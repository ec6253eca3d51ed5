"""The real upstream control plane for `vk-provider sandbox --control-plane real`.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler (and, with `--cluster-network`,
kube-proxy), built from their Go modules by `scripts/ensure-kube.sh`, each run as a process of
its own with a PKI made here; the apiserver advertises this host's default-route address.
Modules: `pki` (certificates and service-account keys), `components` (the command line of each
component and the cluster's address ranges, pure), `process` (one component process and its
log), `cluster` (`RealControlPlane`: start in order, wait until ready, stop), `identities` (the
credentials the providers run with: the chart's RBAC or a kubelet's node identity),
`host_network` (the advertised address, and the routes and lock of the cluster network),
`pod_forwarding` (the iptables rules that let the nodes' pods reach each other unmasqueraded),
`node_cni` (each node's CNI configuration with `--pod-network cni`) and `coredns` (kubeadm's
CoreDNS add-on and the providers' clusterDNS).
Must not: import the emulator's server or the provider (the host's address and the provider
nodes' default taint come from `vk_common`).
"""
