"""Benchmarks of vk-provider against raw Docker and the control plane (issue 11); not part of `make test`.

What lives here: the runnable modules and the small modules they share.

- `bench.startup`: N pods created at once, creation to Running; then the raw docker-py floor
  (pause + app container per "pod") in the same run; the ratios.
- `bench.lone`: N pods created one at a time beside M Running ones (the kubelet density
  test's shape; M = 0: a lone pod), each creation to Running; the floor the same way; the ratios.
- `bench.steady`: N running pods left alone for S seconds: API requests, the provider's CPU
  and RSS, Docker API calls per second (counted at a proxy in front of the engine socket).
- `bench.churn`: N pods created, Running, deleted; seconds, pods/status writes and the
  node's final DELETEs per pod.
- `bench.scrape`: N running pods, K scrapes of `/metrics/cadvisor`: the provider's CPU per
  scrape (fresh and cached) and the engine calls it costs.
- `bench.apiserver`: the emulator against the real kube-apiserver and etcd, no provider: N
  objects created and listed, a W-patch burst, K watches (docs/fidelity.md).
- `bench.growth`: the grid of the benches above at the sizes of issue 32's table, one at a
  time in their own processes, one Markdown table per bench.
- Shared: `bench.sandbox` (starting and stopping a `vk-provider sandbox` subprocess),
  `bench.pods` (the pods and their watch), `bench.api_counts` (the request counters of both
  control planes), `bench.docker_engine` (the counting Docker socket proxy, removing labelled
  containers), `bench.procfs` (the provider process's CPU and RSS), `bench.report`
  (percentiles, the Markdown table, the `RESULT` line, argument parsing, `run`).

Each module starts what it needs itself and removes every container it made. See
docs/performance.md. Must not: import from `tests/`, or change the provider's behaviour (the
benches only configure it through the sandbox's `--config` file).
"""
