"""Helpers shared by the integration, e2e and resilience tests.

`planes`: the two control planes behind one interface (the emulator in-process, the real
upstream control plane as a session-wide `vk-provider sandbox --control-plane real`
subprocess) and the `--control-plane=emulator|real|both` tiers; `polling`: `eventually`
(async) and `until` (blocking), the one way tests wait; `pods_api`: a fake apiserver for
the pod sources.
"""
