"""`VK_PROVIDER_*` environment variables: the defaults of a subcommand's flags.

What lives here: `apply_env(parser, environ)`, which makes `VK_PROVIDER_<FLAG>` (the long
option upper-cased, `-` as `_`: `--node-name` is `VK_PROVIDER_NODE_NAME`) the default of each
flag of one subcommand's parser, converted and checked as the flag's own value is (its type,
its choices; `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off` for a switch); `variable(option)`;
`env_error(exc, args)`, which turns a `ConfigError` about a flag whose value came from the
environment into one naming the variable. So a flag wins over its variable, the variable over
the configuration file (the flags are applied over the file), the file over the defaults. An
empty variable counts as unset. Must not: read the configuration file, or know any
subcommand's flags by name (a new flag gets its variable by being added).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from vk_provider.config_load import ConfigError

PREFIX = "VK_PROVIDER_"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class EnvError(Exception):
    """A variable whose value its flag would refuse; `str()` is one line naming it."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"environment: {name}: {reason}")


class EnvValue(str):
    """A flag's value taken from the variable `variable` (so an error can name it)."""

    variable: str

    def __new__(cls, value: str, variable: str) -> EnvValue:
        self = super().__new__(cls, value)
        self.variable = variable
        return self


def variable(option: str) -> str:
    """`--node-name` -> `VK_PROVIDER_NODE_NAME`."""
    return PREFIX + option.lstrip("-").upper().replace("-", "_")


def env_flags(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.Action]]:
    """(variable, action) of each long flag of `parser` that takes a variable (not --help)."""
    flags = []
    for action in parser._actions:  # argparse has no public list of a parser's actions
        long = [option for option in action.option_strings if option.startswith("--")]
        if long and not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            flags.append((variable(long[0]), action))
    return flags


def apply_env(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    """Each set variable becomes its flag's default (and the flag no longer required);
    raises EnvError for a value the flag would refuse."""
    for name, action in env_flags(parser):
        raw = environ.get(name, "")
        if raw:
            action.default = _value(name, action, raw)
            action.required = False


def _value(name: str, action: argparse.Action, raw: str) -> Any:
    if action.nargs == 0:  # a switch (store_true / store_false)
        word = raw.strip().lower()
        if word not in _TRUE + _FALSE:
            raise EnvError(name, f"expected one of {', '.join(_TRUE + _FALSE)}, got {raw!r}")
        return action.const if word in _TRUE else not action.const
    value: Any = raw
    if action.type is not None and callable(action.type):
        try:
            value = action.type(raw)
        except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
            reason = str(exc) if isinstance(exc, argparse.ArgumentTypeError) else ""
            kind = getattr(action.type, "__name__", "value")
            raise EnvError(name, reason or f"not a valid {kind}: {raw!r}") from None
    if action.choices is not None and value not in action.choices:
        raise EnvError(name, f"expected one of {', '.join(map(str, action.choices))}, got {raw!r}")
    return EnvValue(value, name) if isinstance(value, str) else value


def env_error(exc: ConfigError, args: argparse.Namespace) -> ConfigError:
    """`exc` (from `apply_overrides`, whose key path is the flag) naming the variable instead
    when the flag's value came from the environment; else `exc` unchanged."""
    value = getattr(args, exc.key_path.lstrip("-").replace("-", "_"), None)
    if exc.source == "command line" and isinstance(value, EnvValue):
        return ConfigError("environment", value.variable, exc.reason)
    return exc
