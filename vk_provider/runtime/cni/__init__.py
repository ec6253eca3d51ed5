"""Pod networking through CNI plugins, runtime-neutral: the engine gives a sandbox's id and the
path of its network namespace, this package runs the plugins on it (the kubelet's dockershim
did the same with libcni: pkg/kubelet/dockershim/network/cni/cni.go, k8s.io/kubernetes@v1.23.17).

Modules: `conf` (the first network configuration list of the conf dir), `invoke` (one plugin
run), `cache` (libcni's on-disk cache of ADD results), `network` (ADD, CHECK, DEL of a pod).
"""
