"""Which volume types the node mounts (vk_provider.pods.volume_sources)."""

from __future__ import annotations

from vk_provider.pods.volume_sources import unsupported_volumes, volume_type


def test_volume_type_is_the_source_field() -> None:
    assert volume_type({"name": "d", "persistentVolumeClaim": {"claimName": "c"}}) == "persistentVolumeClaim"
    assert volume_type({"name": "d"}) == ""


def test_unsupported_types_are_named_and_mounted_ones_are_not() -> None:
    pod = {
        "spec": {
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "c"}},
                {"name": "drv", "csi": {"driver": "x.example.com"}},
                {"name": "eph", "ephemeral": {"volumeClaimTemplate": {}}},
                {"name": "nfs", "nfs": {"server": "s", "path": "/"}},
                {"name": "scratch", "emptyDir": {}},
                {"name": "host", "hostPath": {"path": "/x"}},
                {"name": "cm", "configMap": {"name": "c"}},
                {"name": "sec", "secret": {"secretName": "s"}},
                {"name": "dw", "downwardAPI": {}},
                {"name": "pr", "projected": {"sources": []}},
                {"name": "img", "image": {"reference": "busybox"}},
            ]
        }
    }
    assert unsupported_volumes(pod) == {
        name: f"{kind} volumes are not supported on this node: it has no volume plugin for them"
        for name, kind in [
            ("data", "persistentVolumeClaim"),
            ("drv", "csi"),
            ("eph", "ephemeral"),
            ("nfs", "nfs"),
        ]
    }


def test_every_projection_source_is_written_by_the_node() -> None:
    """clusterTrustBundle and podCertificate sources included (pods.volumes)."""
    bundle = {"clusterTrustBundle": {"signerName": "example.com/s", "path": "ca.pem"}}
    cert = {
        "podCertificate": {"signerName": "example.com/s", "keyType": "ED25519", "credentialBundlePath": "c"}
    }
    pod = {
        "spec": {
            "volumes": [{"name": "p", "projected": {"sources": [{"configMap": {"name": "c"}}, bundle, cert]}}]
        }
    }
    assert unsupported_volumes(pod) == {}
