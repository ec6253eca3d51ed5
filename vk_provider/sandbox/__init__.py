"""The sandbox control plane: a protocol-faithful Kubernetes API server for tests and `vk-provider sandbox`.

The store, resource registry and HTTP handlers live in store.py, resources.py and handlers*.py;
server.py wires them with the scheduler, node lifecycle, PKI and kubelet proxy. This package never
imports the provider's internals, and the provider never imports it: they meet only over HTTP.
"""
