"""Kubernetes objects and apiserver access: the shared object vocabulary and pod rules
(objects.py), the dict-based client, the list+watch reflector and the Event recorder."""
