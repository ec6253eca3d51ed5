"""The Helm chart's values.schema.json, its `config` part generated from the configuration table.

What lives here: `values_schema(current)`, which returns the chart's schema with
`properties.config` replaced by the configuration file's JSON Schema
(`config_load.config_json_schema`), closed at every level so a typo such as
`config.docker.maxConcurency` fails `helm install`; `config.node.name` and
`config.kubernetes.credentials` are refused there because the chart's top-level `node.name`
names the Node and its top-level `credentials` decides both the provider's and the RBAC's.
The chart's own values (image, rbac, ...) stay as written in the file.
`python -m vk_provider.chart_schema [PATH]` rewrites the file (default
`charts/vk-provider/values.schema.json`); a unit test keeps the committed file equal to a
fresh generation. Must not: be imported by the provider at run time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from vk_provider.config_load import config_json_schema

DEFAULT_PATH = Path("charts/vk-provider/values.schema.json")
NODE_NAME_NOTICE = "(set the top-level node.name instead)"
CREDENTIALS_NOTICE = "(set the top-level credentials instead)"


def values_schema(current: dict[str, Any]) -> dict[str, Any]:
    """`current` (the chart's schema) with its `config` property generated afresh."""
    config = config_json_schema()
    config["description"] = (
        "The provider's configuration file (docs/configuration.md), generated from the "
        "provider's configuration table by `python -m vk_provider.chart_schema`."
    )
    config["properties"]["node"]["properties"]["name"] = {
        "description": "Not set here: the top-level node.name is the Node's name.",
        "enum": [NODE_NAME_NOTICE],
    }
    config["properties"]["kubernetes"]["properties"]["credentials"] = {
        "description": "Not set here: the top-level credentials decides it and the chart's RBAC.",
        "enum": [CREDENTIALS_NOTICE],
    }
    return {**current, "properties": {**current["properties"], "config": config}}


def render(schema: dict[str, Any]) -> str:
    """The file's text: two-space indented JSON and a final newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    path.write_text(render(values_schema(json.loads(path.read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
