"""The `vk-provider` command: the one place that imports both the provider and the sandbox.

What lives here: `main.py` (argument parsing and dispatch to `run`, `check-config`, `clean`,
`remove-node`, `sandbox` and `version`), `env.py` (the `VK_PROVIDER_*` variables of each
subcommand's flags) and `__main__.py` (`python -m vk_cli`, which is how the sandbox starts its
providers). Must not: hold provider or sandbox logic.
"""
