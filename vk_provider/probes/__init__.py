"""Container probes: liveness, readiness and startup, as the kubelet's prober runs them.

What lives here: `spec` (parsing with the API defaults), `results` (the per-worker threshold
state machine), `messages` (Event wording), `handlers` (exec / httpGet / tcpSocket / grpc),
`worker` (one asyncio task per pod, container and probe) and `manager` (`ProbeManager`).
Must not: start or stop containers (the pod workers do, on the manager's results).

Upstream: pkg/kubelet/prober/.
"""
