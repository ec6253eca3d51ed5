"""The ground floor both top-level packages stand on: Kubernetes vocabulary and process utilities.

What lives here: the supported Kubernetes version (`kube_version`, `KUBE_VERSION`), quantities and
durations (`quantity`), the kubelet's sysctl and hostPath-type vocabulary (`sysctls`,
`hostpath_types`), shared names (`vocabulary`), logging (`logging`, `log_ring`), the background-
task idiom (`tasks`), the guarded HTTPS listener of the kubelet API and the sandbox API
(`guarded_listener`) and the host's address (`host_address`).
Must not: import `vk_provider` or `vk_sandbox`; both import this package, and nothing here
knows which one runs.
"""
