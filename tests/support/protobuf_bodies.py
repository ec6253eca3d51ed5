"""Request bodies kubectl sends in protobuf (kubectl 1.32 and 1.37, captured with -v=8).

`CONFIGMAP` and `SERVICE`: what the sandbox's protobuf decoder must read (the unit tests say what
they decode to) and the seeds the fuzz tests mutate. Must not: decode them or hold expectations.
"""

from __future__ import annotations

# kubectl create configmap x --from-literal=a=b
CONFIGMAP = bytes.fromhex(
    "6b387300"
    "0a0f0a0276311209436f6e6669674d6170"
    "121b0a110a01781200"
    "1a0022002a0032003800420012060a0161120162"
    "1a002200"
)


# kubectl create service clusterip x --tcp=80:8080
SERVICE = bytes.fromhex(
    "6b3873000a0d0a02763112075365727669636512630a1b0a017812001a002200"
    "2a003200380042005a080a0361707012017812400a1b0a0738302d3830383012"
    "0354435018502207080010903f1a00280012080a036170701201781a00220943"
    "6c757374657249503a00420052005a00600068001a020a001a002200"
)
