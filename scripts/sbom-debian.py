"""Add an image's Debian packages to the CycloneDX SBOM of its Python packages (scripts/release.sh).

Input: the JSON SBOM cyclonedx-py wrote of the image's virtualenv, the image's `dpkg-query -W`
lines (package, version, architecture, tab-separated), the image's Debian version and its
reference. Output on stdout: the same document with one `library` component per Debian package
(purl pkg:deb/debian/NAME@VERSION?arch=ARCH&distro=debian-N, as scanners read them), the image
as the main component, validated against the CycloneDX schema. Run with the release tools'
python (build/release-tools: cyclonedx-python-lib, packageurl-python).
Must not: read anything but its arguments' files, or touch the image.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cyclonedx.schema import OutputFormat, SchemaVersion
from cyclonedx.validation import make_schemabased_validator
from packageurl import PackageURL


def main(sbom_path: str, dpkg_path: str, debian_version: str, image: str) -> None:
    sbom = json.loads(Path(sbom_path).read_text())
    distro = f"debian-{debian_version.split('.')[0]}"
    for line in Path(dpkg_path).read_text().splitlines():
        name, version, arch = line.split("\t")
        purl = PackageURL("deb", "debian", name, version, {"arch": arch, "distro": distro}).to_string()
        sbom["components"].append(
            {"type": "library", "bom-ref": purl, "name": name, "version": version, "purl": purl}
        )
    name, _, tag = image.rpartition(":")
    sbom["metadata"]["component"] = {"type": "container", "bom-ref": image, "name": name, "version": tag}
    text = json.dumps(sbom, indent=2, sort_keys=False)
    version = SchemaVersion.from_version(sbom["specVersion"])
    errors = make_schemabased_validator(OutputFormat.JSON, version).validate_str(text)
    if errors:
        sys.exit(f"sbom-debian: the merged SBOM is not valid CycloneDX {sbom['specVersion']}: {errors}")
    print(text)


if __name__ == "__main__":
    main(*sys.argv[1:])
