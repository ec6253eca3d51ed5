"""Fuzzing the configuration loader (vk_provider.config_load.load_config).

What is fuzzed: the text of a configuration file, three ways: the example configuration
with values, keys and subtrees mutated (dumped as YAML), the example's YAML text mutated
with YAML syntax (anchors, tags, flow and complex keys, deep nesting, huge numbers), and
arbitrary text. The property: every file either loads, or raises `ConfigError` (what the
CLI turns into exit 2) with a one-line message; nothing else escapes. A file that loads
survives `check-config`: its effective configuration dumps as YAML and loads back to the
same Config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzzing import budget, mutated_json, mutated_text
from vk_provider.config_load import ConfigError, effective_config, load_config

EXAMPLE = Path(__file__).resolve().parents[3] / "config.example.yaml"
EXAMPLE_TEXT = EXAMPLE.read_text()
EXAMPLE_DATA: dict[str, Any] = yaml.safe_load(EXAMPLE_TEXT)

YAML_FRAGMENTS = (
    "\n", ": ", "- ", "? ", "? [a]\n: 1\n", "{", "}", "[", "]", ",", "&a ", "*a", "<<: *a\n", "!!str ",
    "!!int ", "!!float ", "!!binary ", "!!timestamp 2001-02-30", "!!python/object:os.system ",
    "!!set {a}", "!!omap [a: 1]", "%YAML 1.1\n---\n", "---\n", "...\n", "'", '"', "|\n  ", ">-\n  ",
    "#", "\t", "~", ".inf", ".nan", "0x1F", "0o17", "1_000", "2001-12-14", "1e1000000",
    "1e9999999999", "[" * 5000, "{a: " * 300, "\ufeff", "\x85", "\u2028",
)  # fmt: skip


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-config") / "config.yaml"


def _load_or_config_error(config_file: Path, text: str) -> None:
    config_file.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        config = load_config(config_file)
    except ConfigError as exc:
        assert "\n" not in str(exc), str(exc)
        return
    shown = yaml.safe_dump(effective_config(config), sort_keys=False)  # what check-config prints
    config_file.write_text(shown, encoding="utf-8")
    assert load_config(config_file) == config


@budget(300)
@given(doc=mutated_json(EXAMPLE_DATA))
def test_mutated_configurations_load_or_raise_config_error(config_file: Path, doc: Any) -> None:
    _load_or_config_error(config_file, yaml.safe_dump(doc, allow_unicode=True))


@budget(400)
@given(text=mutated_text(EXAMPLE_TEXT, YAML_FRAGMENTS, max_mutations=6))
def test_mutated_yaml_text_loads_or_raises_config_error(config_file: Path, text: str) -> None:
    _load_or_config_error(config_file, text)


@budget(300)
@given(
    text=st.lists(
        st.sampled_from(YAML_FRAGMENTS) | st.characters(exclude_categories=("Cs",)), max_size=40
    ).map("".join)
)
def test_arbitrary_text_loads_or_raises_config_error(config_file: Path, text: str) -> None:
    _load_or_config_error(config_file, text)
