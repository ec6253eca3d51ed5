"""bench/api_counts.py: the real apiserver's request counts in the emulator's keys, the write
figures made of them, and `diff`."""

from __future__ import annotations

from bench import api_counts


def test_real_request_counts_use_the_emulators_keys() -> None:
    metrics = "\n".join(
        [
            "# TYPE apiserver_request_total counter",
            'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="resource",subresource="status",verb="PATCH",version="v1"} 4',
            'apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="resource",subresource="status",verb="PATCH",version="v1"} 1',
            'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="resource",subresource="",verb="DELETE",version="v1"} 2',
            'apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="namespace",subresource="",verb="POST",version="v1"} 2',
            'apiserver_request_total{code="200",component="apiserver",dry_run="",'
            'group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",'
            'version="v1"} 7',
            'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",'
            'scope="",subresource="/metrics",verb="GET",version=""} 3',
        ]
    )
    counts = api_counts.real_request_counts(metrics)
    assert counts == {
        "patch pods/status": 5,
        "delete pods": 2,
        "create pods": 2,
        "update leases.coordination.k8s.io": 7,
    }
    assert api_counts.pod_writes(counts) == 9
    assert api_counts.status_writes(counts) == 5


def test_diff_keeps_positive_differences() -> None:
    assert api_counts.diff({"a": 3, "b": 1, "c": 2}, {"a": 1, "b": 1}) == {"a": 2, "c": 2}
