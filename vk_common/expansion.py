"""The kubelet's `$(VAR)` expansion of command, args, env values and subPathExpr (pure).

What lives here: `expand(text, lookup)`: `$(NAME)` replaced by `lookup(NAME)`, `$$` a literal
`$`, a reference `lookup` does not know kept as written.
Must not: import the provider or the sandbox.

Upstream: third_party/forked/golang/expansion/expand.go.
"""

from __future__ import annotations

from collections.abc import Callable


def _wrap(name: str) -> str:
    return f"$({name})"


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """Expand `$(VAR)` references; `$$` is a literal `$`; unknown references stay as written."""
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            nxt = text[cursor + 1]
            if nxt == "$":
                out.append("$")
                advance = 1
            elif nxt == "(":
                close = text.find(")", cursor + 2)
                if close == -1:
                    out.append("$(")
                    advance = 1
                else:
                    name = text[cursor + 2 : close]
                    value = lookup(name)
                    out.append(_wrap(name) if value is None else value)
                    advance = close - cursor
            else:
                out.append("$" + nxt)
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)
