"""The fast subset of the conformance run that `make test` runs (tests/e2e/test_conformance_subset.py):
`SUBSET`, twenty-two upstream specs across container lifecycle, probes, hooks, the downward
API, volumes (a ClusterTrustBundle and a pod certificate projection too), security context,
termination messages, ephemeral containers, RuntimeClass and pod status, each short (no
`[Slow]`), and `subset_focus`, the `--ginkgo.focus` that selects exactly them.

Must not: run anything. A name here that the built suite does not have fails the test (the
dry run must select exactly these specs), so a version bump cannot silently shrink the subset.
"""

from __future__ import annotations

import re

SUBSET = (
    "[sig-node] Containers should be able to override the image's default command (container entrypoint)",
    "[sig-node] Container Runtime blackbox test on terminated container should report termination message "
    "from file when pod succeeds and TerminationMessagePolicy FallbackToLogsOnError is set",
    "[sig-node] Downward API should provide pod name, namespace and IP address as env vars",
    "[sig-storage] Downward API volume should provide podname only",
    "[sig-storage] ConfigMap should be consumable from pods in volume",
    "[sig-storage] Secrets should be consumable from pods in volume",
    "[sig-storage] EmptyDir volumes should support (non-root,0644,default)",
    "[sig-node] Security Context When creating a container with runAsUser should run the container "
    "with uid 65534",
    "[sig-node] Container Lifecycle Hook when create a pod with lifecycle hook should execute poststart "
    "exec hook properly",
    '[sig-node] Probing container should be restarted with a exec "cat /tmp/health" liveness probe',
    "[sig-node] InitContainer should invoke init containers on a RestartNever pod",
    "[sig-node] Ephemeral Containers will start an ephemeral container in an existing pod",
    "[sig-node] RuntimeClass should reject a Pod requesting a non-existent RuntimeClass",
    "[sig-node] Pods should get a host IP",
    "[sig-node] Pods should be updated",
    "[sig-node] Pods should support remote command execution over websockets",
    "[sig-node] Pods Extended (pod generation) Pod Generation pod generation should start at 1 and increment "
    "per update",
    "[sig-node] Variable Expansion should allow substituting values in a volume subpath",
    "[sig-node] ConfigMap should be consumable via environment variable",
    "[sig-node] Kubelet when scheduling a busybox command in a pod should print the output to logs",
    "[sig-auth] [FeatureGate:ClusterTrustBundle] [FeatureGate:ClusterTrustBundleProjection] should be able "
    "to mount a single ClusterTrustBundle by name",
    "[sig-auth] Projected PodCertificate [FeatureGate:PodCertificateRequest] "
    "[FeatureGate:ClusterTrustBundle] [FeatureGate:ClusterTrustBundleProjection] "
    "MaxExpirationSeconds validations should issue certificate "
    "with default life time (24h) when MaxExpirationSeconds is not set",
)


_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")


def _re2_literal(text: str) -> str:
    """`text` as an RE2 literal. Python's `re.escape` is not used: it escapes spaces, which
    RE2 refuses."""
    return _RE2_SPECIAL.sub(r"\\\1", text)


def subset_focus() -> str:
    """A `--ginkgo.focus` regular expression (Go RE2) matching each SUBSET name followed by
    its tags (` [`) or the end. Not anchored at the start: the text Ginkgo matches does not
    begin with the `[sig-...]` of the name; the run checks that exactly len(SUBSET) specs are
    selected."""
    return "|".join(f"{_re2_literal(name)}(?: \\[|$)" for name in SUBSET)
