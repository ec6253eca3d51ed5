"""docs/pod-spec-support.md against the pinned version's pod spec schema.

The table lists every field of the types below (and of any other schema type it has a
section for), one `Type.field` row each, with a status of supported, refused or ignored. The
field lists come from the official definitions kubernetes-validate packages for
KUBE_VERSION's minor (the same files as the sandbox's `validation/schema.definitions`, read
here directly); nothing touches the network. A failure prints the paths to add or remove.
Also checked: each row sits once under its type's heading, refused and ignored rows say why,
a supported volume source has its own section, and a note's `Type.field` names a row.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from vk_common.kube_version import KUBE_MINOR_VERSION, KUBE_VERSION

DOC = Path(__file__).resolve().parents[2] / "docs" / "pod-spec-support.md"
CORE = "io.k8s.api.core.v1."
STATUSES = {"supported", "refused", "ignored"}

# The types whose every field the issue asks for, and the nested types the doc chose to split
# (docs/pod-spec-support.md states the rule). A supported volume source's type is required too
# (test_every_supported_volume_source_has_its_fields).
REQUIRED_TYPES = (
    "PodSpec",
    "PodSecurityContext",
    "Container",
    "EphemeralContainer",
    "SecurityContext",
    "Volume",
    "Capabilities",
    "ResourceRequirements",
    "ContainerPort",
    "EnvVar",
    "EnvVarSource",
    "EnvFromSource",
    "Probe",
    "HTTPGetAction",
    "Lifecycle",
    "LifecycleHandler",
    "VolumeMount",
    "PodDNSConfig",
    "HostAlias",
    "KeyToPath",
    "DownwardAPIVolumeFile",
    "VolumeProjection",
    "ServiceAccountTokenProjection",
)

_SECTION = re.compile(r"^## `(\w+)`\s*$")
_ROW = re.compile(r"^\|\s*`(\w+)\.(\w+)`\s*\|\s*([^|]*?)\s*\|(.*)\|\s*$")


@cache
def definitions() -> dict[str, Any]:
    root = (
        resources.files("kubernetes_validate")
        / "kubernetes-json-schema"
        / f"v{KUBE_MINOR_VERSION}.0-local-strict"
    )
    with (root / "_definitions.json").open("rb") as f:
        defs: dict[str, Any] = json.load(f)["$defs"]
    return defs


def schema_fields(type_name: str) -> dict[str, Any]:
    definition = definitions().get(CORE + type_name)
    assert definition is not None, f"{type_name} is not a type of {KUBE_VERSION}"
    props: dict[str, Any] = definition.get("properties") or {}
    return props


def referenced_type(prop: dict[str, Any]) -> str | None:
    """The core/v1 type a property holds (directly or as list items), e.g. `EmptyDirVolumeSource`."""
    ref = prop.get("$ref") or (prop.get("items") or {}).get("$ref") or ""
    name = ref.rsplit("/", 1)[-1]
    return name.removeprefix(CORE) if name.startswith(CORE) else None


@dataclass(frozen=True)
class Table:
    rows: dict[str, dict[str, tuple[str, str]]]  # {type: {field: (status, notes)}}
    misplaced: tuple[str, ...]  # rows not under their type's section
    duplicated: tuple[str, ...]


@cache
def table() -> Table:
    """The doc's sections and rows; a row belongs to the section (a "## `Type`" heading) above it."""
    rows: dict[str, dict[str, tuple[str, str]]] = {}
    section: str | None = None
    misplaced: list[str] = []
    duplicated: list[str] = []
    for number, line in enumerate(DOC.read_text().splitlines(), 1):
        if line.startswith("## "):
            heading = _SECTION.match(line)
            section = heading[1] if heading else None
            if section is not None:
                rows.setdefault(section, {})
            continue
        row = _ROW.match(line)
        if row is None:
            continue
        type_name, field, status, notes = row[1], row[2], row[3], row[4].strip()
        if type_name != section or section is None:
            misplaced.append(f"line {number}: {type_name}.{field} (section {section})")
            continue
        if field in rows[section]:
            duplicated.append(f"{type_name}.{field}")
        rows[section][field] = (status, notes)
    return Table(rows, tuple(misplaced), tuple(duplicated))


def test_every_row_sits_once_in_its_type_section() -> None:
    assert not table().misplaced, "rows outside their type's section:\n  " + "\n  ".join(table().misplaced)
    assert not table().duplicated, "rows listed twice:\n  " + "\n  ".join(table().duplicated)


def test_the_doc_names_the_pinned_version() -> None:
    assert KUBE_VERSION in DOC.read_text().splitlines()[0]


def test_every_required_type_has_a_section() -> None:
    missing = [t for t in REQUIRED_TYPES if t not in table().rows]
    assert not missing, "sections to add to docs/pod-spec-support.md: " + ", ".join(missing)


def test_every_field_is_listed() -> None:
    types = sorted(set(REQUIRED_TYPES) | set(table().rows))
    missing = [
        f"{t}.{field}"
        for t in types
        if CORE + t in definitions()
        for field in schema_fields(t)
        if field not in table().rows.get(t, {})
    ]
    assert not missing, f"fields of {KUBE_VERSION} missing from the table:\n  " + "\n  ".join(missing)


def test_no_row_names_a_field_that_does_not_exist() -> None:
    gone = [f"{t} (no such type)" for t in table().rows if CORE + t not in definitions()]
    gone += [
        f"{t}.{field}"
        for t, rows in table().rows.items()
        if CORE + t in definitions()
        for field in rows
        if field not in schema_fields(t)
    ]
    assert not gone, f"rows naming no field of {KUBE_VERSION}:\n  " + "\n  ".join(gone)


def test_every_status_is_one_of_the_three() -> None:
    bad = [
        f"{t}.{field}: {status!r}"
        for t, rows in table().rows.items()
        for field, (status, _) in rows.items()
        if status not in STATUSES
    ]
    assert not bad, "statuses must be supported, refused or ignored (none unknown):\n  " + "\n  ".join(bad)


def test_refused_and_ignored_rows_say_why() -> None:
    silent = [
        f"{t}.{field}"
        for t, rows in table().rows.items()
        for field, (status, notes) in rows.items()
        if status != "supported" and not notes
    ]
    assert not silent, "refused or ignored rows without a message or a reason:\n  " + "\n  ".join(silent)


def test_every_supported_volume_source_has_its_fields() -> None:
    """A volume source the provider supports, or refuses unless a config key allows it ("Allowed by"),
    lists its own fields; one refused outright (no plugin for it) needs no section."""
    volume = schema_fields("Volume")
    missing = [
        f"Volume.{field} -> {source}"
        for field, (status, notes) in table().rows["Volume"].items()
        if (status == "supported" or (status == "refused" and "Allowed by" in notes)) and field in volume
        for source in [referenced_type(volume[field])]
        if source is not None and source not in table().rows
    ]
    assert not missing, "volume sources without a section:\n  " + "\n  ".join(missing)


_REFERENCE = re.compile(r"`([A-Z][A-Za-z]+)(?:\.(\w+))?`")


def test_cross_references_name_rows_of_the_table() -> None:
    """A note's `Type` or `Type.field` that is a schema type points at a section or row here."""
    dangling = [
        f"{t}.{field}: {match[0]}"
        for t, rows in table().rows.items()
        for field, (_, notes) in rows.items()
        for match in _REFERENCE.finditer(notes)
        if CORE + match[1] in definitions()
        and (
            match[1] not in table().rows or (match[2] is not None and match[2] not in table().rows[match[1]])
        )
    ]
    assert not dangling, "notes pointing at no section or row:\n  " + "\n  ".join(dangling)
