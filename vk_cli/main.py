"""The `vk-provider` command line: argument parsing and dispatch to the subcommands.

What lives here: `main(argv) -> int` (the console script) with `run`, `check-config`, `clean`,
`remove-node`, `sandbox` and `version` (and `--version`). Each subcommand is one (add_parser,
handler) pair in `_commands()`; a handler takes the parsed arguments and returns the exit code.
The chosen subcommand's flags default to their `VK_PROVIDER_*` variables (`vk_cli.env`).
Exit code 2 means bad usage, a bad variable or a bad configuration, with one line on stderr;
`check-config` and `run` also check the files and the engine address the configuration names
(`vk_provider.config_files`), the same check for both. Must not: hold provider logic; `run`
only loads and checks the configuration and hands it to `vk_provider.app.run_provider`.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

import yaml

from vk_cli.env import EnvError, EnvValue, apply_env, env_error
from vk_provider import __version__
from vk_provider.config import Config
from vk_provider.config_load import (
    LOG_FORMATS,
    LOG_LEVELS,
    ConfigError,
    apply_overrides,
    effective_config,
    load_config,
)
from vk_sandbox import command as sandbox_command

EXIT_USAGE = 2

_SubParsers = Any  # argparse's _SubParsersAction, which typeshed marks private
_Handler = Callable[[argparse.Namespace], int]


def _add_run(subparsers: _SubParsers) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run", help="run the provider: register the virtual Node and run its pods in Docker"
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="the configuration file (YAML)")
    parser.add_argument("--kubeconfig", metavar="FILE", help="overrides kubernetes.kubeconfig")
    parser.add_argument("--node-name", metavar="NAME", help="overrides node.name")
    parser.add_argument(
        "--log-level", metavar="LEVEL", help=f"overrides logging.level ({'|'.join(LOG_LEVELS)})"
    )
    parser.add_argument(
        "--log-format", metavar="FORMAT", help=f"overrides logging.format ({'|'.join(LOG_FORMATS)})"
    )
    return parser


def _checked_config(path: str, args: argparse.Namespace, **overrides: str | None) -> Config:
    """The configuration at `path` with the flag overrides, its files and engine address checked
    as `run` uses them (`vk_provider.config_files`); raises ConfigError."""
    config = _overridden(path, args, **overrides)
    # Imported when needed: it loads the Docker and Kubernetes client libraries.
    from vk_provider.config_files import check_config_files

    check_config_files(config, path)
    return config


def _overridden(path: str, args: argparse.Namespace, **overrides: str | None) -> Config:
    """The configuration at `path` with the flags (or their variables) applied over it."""
    config = load_config(path)
    try:
        return apply_overrides(config, **overrides)
    except ConfigError as exc:
        raise env_error(exc, args) from None


def _run_with_config(
    args: argparse.Namespace,
    main: str,
    call: dict[str, Any] | None = None,
    *,
    check_files: bool = False,
    **overrides: str | None,
) -> int:
    """Load `--config` with the flag overrides, and with `check_files` check the files it names
    (exit 2 with one line when anything is bad), set up logging, then run
    `vk_provider.<main>(config, **call)` (main is `module.function`) to its exit code."""
    # Before the first import of kubernetes_asyncio: the provider uses none of its models.
    from vk_provider.kube.lean_import import install

    install()
    try:
        if check_files:
            config = _checked_config(args.config, args, **overrides)
        else:
            config = _overridden(args.config, args, **overrides)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    from vk_common.logging import setup_logging

    setup_logging(
        config.logging.level,
        config.logging.format,
        config.logging.components,
        keep_recent=config.kubelet_server.enable_system_log_query,
    )
    # Imported when needed (the other subcommands do without the provider's dependencies).
    module, _, function = main.rpartition(".")
    entry: Callable[..., Coroutine[Any, Any, int]] = getattr(
        importlib.import_module(f"vk_provider.{module}"), function
    )
    return asyncio.run(entry(config, **(call or {})))


def _run(args: argparse.Namespace) -> int:
    return _run_with_config(
        args,
        "app.run_provider",
        check_files=True,
        node_name=args.node_name,
        kubeconfig=args.kubeconfig,
        log_level=args.log_level,
        log_format=args.log_format,
    )


def _add_node_command(subparsers: _SubParsers, name: str, help_text: str) -> argparse.ArgumentParser:
    """A subcommand acting on the node of a configuration file: --config and --node-name."""
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=help_text)
    parser.add_argument("--config", required=True, metavar="FILE", help="the configuration file (YAML)")
    parser.add_argument("--node-name", metavar="NAME", help="overrides node.name")
    return parser


def _add_clean(subparsers: _SubParsers) -> argparse.ArgumentParser:
    return _add_node_command(
        subparsers,
        "clean",
        "remove the containers, volumes and files of every pod of the node from the engine "
        "(run it after the provider stopped; the apiserver is not touched)",
    )


def _clean(args: argparse.Namespace) -> int:
    return _run_with_config(args, "app.clean_node", node_name=args.node_name)


def _add_remove_node(subparsers: _SubParsers) -> argparse.ArgumentParser:
    parser = _add_node_command(
        subparsers,
        "remove-node",
        "take the node out of the cluster for good: stop its provider's Deployment, remove the "
        "node's pods from the engine and delete the Node (the Helm chart's pre-delete hook)",
    )
    parser.add_argument(
        "--stop-deployment",
        metavar="NAMESPACE/NAME",
        type=_deployment_ref,
        help="the provider's Deployment, scaled to 0 and waited for before anything is removed",
    )
    return parser


def _deployment_ref(value: str) -> str:
    from vk_provider.node_removal import parse_deployment

    try:
        parse_deployment(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _remove_node(args: argparse.Namespace) -> int:
    return _run_with_config(
        args, "node_removal.remove_node", {"deployment": args.stop_deployment}, node_name=args.node_name
    )


def _add_check_config(subparsers: _SubParsers) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "check-config", help="validate a configuration file and print the effective configuration"
    )
    parser.add_argument("file", metavar="FILE", nargs="?", help="the configuration file (YAML)")
    parser.add_argument("--config", metavar="FILE", help="the same, as run takes it")
    return parser


def _check_config(args: argparse.Namespace) -> int:
    if isinstance(args.config, EnvValue) and args.file:  # the word given wins over $VK_PROVIDER_CONFIG
        args.config = None
    if args.file and args.config and args.file != args.config:
        print("vk-provider check-config: FILE and --config name different files", file=sys.stderr)
        return EXIT_USAGE
    path = args.file or args.config
    if not path:
        print(
            "vk-provider check-config: a configuration file is required: FILE or --config FILE",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        config = _checked_config(path, args)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(yaml.safe_dump(effective_config(config), sort_keys=False))
    return 0


def _add_version(subparsers: _SubParsers) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser("version", help="print the version")
    return parser


def _version(args: argparse.Namespace) -> int:
    print(f"vk-provider {__version__}")
    return 0


def _commands() -> list[tuple[Callable[[_SubParsers], argparse.ArgumentParser], _Handler]]:
    """Every subcommand: a function adding its parser (returning it) and its handler."""
    return [
        (_add_run, _run),
        (_add_check_config, _check_config),
        (_add_clean, _clean),
        (_add_remove_node, _remove_node),
        (_add_version, _version),
        (sandbox_command.add_parser, sandbox_command.run_sandbox),
    ]


def build_parser(
    command: str | None = None, environ: Mapping[str, str] | None = None
) -> argparse.ArgumentParser:
    """The whole command line; the flags of subcommand `command` default to their variables in
    `environ` (raises EnvError for a bad one)."""
    parser = argparse.ArgumentParser(
        prog="vk-provider",
        description="A virtual-kubelet provider that runs the pods of a virtual Node as Docker containers.",
    )
    parser.add_argument("--version", action="version", version=f"vk-provider {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_parser, handler in _commands():
        subparser = add_parser(subparsers)
        subparser.set_defaults(handler=handler)
        if environ is not None and subparser.prog.rsplit(" ", 1)[-1] == command:
            apply_env(subparser, environ)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # The top-level parser has no option taking a value: the first word is the subcommand.
    command = next((word for word in argv if not word.startswith("-")), None)
    try:
        parser = build_parser(command, os.environ)
    except EnvError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage and 0 after --help
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: _Handler = args.handler
    return handler(args)
