"""Emulator fidelity: the same HTTP request scenarios against the emulator and the real kube-apiserver.

harness.py runs a scenario against two servers and compares what a client sees; builders.py makes
the objects and the steps scenarios are written with; scenarios_objects.py and scenarios_api.py are
the scenarios (data), scenarios.py their one list; report.py renders docs/fidelity.md; bursts.py
sends concurrent bursts to both servers and compares their outcomes, clients.py drives the official
`kubernetes` client, kubernetes_asyncio and kubectl through one sequence on each. `python -m
tests.support.fidelity REAL_KUBECONFIG EMULATOR_KUBECONFIG [SCENARIO...]` runs the scenarios
against two sandboxes that are already running and prints the differences.
"""
