"""The upstream Kubernetes conformance run against vk-provider (issue 16); not part of `make test`.

What lives here: `conformance.run` (`python -m conformance.run`, what `make conformance` runs:
the real control plane with one vk-provider node, the SIG Node `[Conformance]` and
`[NodeConformance]` specs of the built `e2e.test` in shards, the JUnit file), `conformance.specs`
(the suite's spec reports: names, files, states, sharding), `conformance.triage` (why a spec
did not pass: `triage.yaml`), and `conformance.report` (docs/conformance.md's results section).

Must not: import from `tests/`; change how the provider behaves beyond the `--config` keys of
the node it runs (no taint, so the suite's pods land on it).
"""
