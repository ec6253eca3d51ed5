"""The Helm chart README's values table, generated from values.yaml.

What lives here: `values_table(values_text)`, the Markdown table of every value of the chart
(one row per leaf: a mapping's keys joined by dots, a list or an empty mapping one value; its
default as JSON; its description from the `# -- ` comment line right above the key in
values.yaml, as helm-docs reads them), and `render(readme, values_text)`, the README with its
table under `## Values` replaced. `python -m vk_provider.chart_readme` rewrites
charts/vk-provider/README.md; a unit test keeps the committed file equal to a fresh generation.
Must not: be imported by the provider at run time, or change anything of the README but the
table.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from itertools import takewhile
from pathlib import Path
from typing import Any

import yaml

CHART = Path("charts/vk-provider")
HEADER = "| Key | Default | Description |\n| --- | --- | --- |\n"
_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.-]+):(?: |$)")
_DESCRIPTION = re.compile(r"^ *# -- (?P<text>.+)$")


class MissingDescription(Exception):
    """A value of values.yaml without its `# -- ` line."""


def leaves(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of each leaf, in the file's order."""
    if isinstance(data, dict) and data:
        for key, value in data.items():
            yield from leaves(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, data


def descriptions(values_text: str) -> dict[str, str]:
    """Dotted key -> the text of the `# -- ` line right above the key's line."""
    found: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    pending = ""
    for line in values_text.splitlines():
        comment = _DESCRIPTION.match(line)
        if comment:
            pending = comment["text"].strip()
            continue
        key = _KEY.match(line)
        if key:
            indent = len(key["indent"])
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, key["key"]))
            if pending:
                found[".".join(name for _, name in stack)] = pending
        pending = ""
    return found


def values_table(values_text: str) -> str:
    """The Markdown table of every leaf of values.yaml; raises MissingDescription."""
    described = descriptions(values_text)
    rows = []
    for key, value in leaves(yaml.safe_load(values_text)):
        if key not in described:
            raise MissingDescription(f"values.yaml: {key}: no `# -- ` description line above it")
        default = json.dumps(value, ensure_ascii=False)
        rows.append(f"| `{key}` | `{default}` | {described[key]} |\n")
    return HEADER + "".join(rows)


def render(readme: str, values_text: str) -> str:
    """`readme` with the table under `## Values` (its header to its last row) generated afresh."""
    head, values = readme.split("\n## Values\n", 1)
    before, table = values.split(HEADER, 1)
    rows = "".join(takewhile(lambda line: line.startswith("|"), table.splitlines(keepends=True)))
    rest = table[len(rows) :]
    return f"{head}\n## Values\n{before}{values_table(values_text)}{rest}"


def main(argv: list[str]) -> int:
    chart = Path(argv[0]) if argv else CHART
    readme = chart / "README.md"
    try:
        text = render(readme.read_text(), (chart / "values.yaml").read_text())
    except MissingDescription as exc:
        print(exc, file=sys.stderr)
        return 1
    readme.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
