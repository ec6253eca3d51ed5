"""Benchmarks of vk-provider against raw Docker and the control plane (issue 11); not part of `make test`.

What lives here: three runnable modules and the one module they share.

- `bench.startup`: N pods created at once, creation to Running; then the raw docker-py floor
  (pause + app container per "pod") in the same run; the ratios.
- `bench.steady`: N running pods left alone for S seconds: API requests, the provider's CPU
  and RSS, Docker API calls per second (counted at a proxy in front of the engine socket).
- `bench.churn`: N pods created, Running, deleted; seconds, pods/status writes and the
  node's final DELETEs per pod.
- `bench.common`: starting a `vk-provider sandbox` subprocess, the pods and their watch, the
  request counters of both control planes, the counting Docker socket proxy, the provider
  process's CPU and RSS, percentiles, the Markdown table and the `RESULT` line.

Each module starts what it needs itself and removes every container it made. See
docs/performance.md. Must not: import from `tests/`, or change the provider's behaviour (the
benches only configure it through the sandbox's `--config` file).
"""
