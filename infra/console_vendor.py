"""Vendor the team console's browser libraries from the npm registry (``make console-vendor``).

The console (``functions/admin/static/console/``) has no build step and no CDN at run time: each
library's distributed file is copied, at the exact version pinned in :data:`LIBRARIES`, into
``vendor/``, with its licence text into ``vendor/licenses/``, and ``vendor/vendor.json`` records
what was copied from where with its SHA-256 (``tests/unit/test_console_vendor.py`` checks the
files against it, so a hand edit of a vendored file fails the tests).

One change is made to a file, and recorded: Preact's hooks module imports the bare specifier
``"preact"``, which a browser resolves only through an import map (an inline script the console's
Content-Security-Policy does not allow); it is rewritten to the sibling file ``./preact.mjs``.

Usage: ``python -m infra.console_vendor`` (needs ``npm`` on the PATH and the npm registry).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

CONSOLE = Path(__file__).resolve().parents[1] / "functions" / "admin" / "static" / "console"
VENDOR = CONSOLE / "vendor"


@dataclass(frozen=True)
class Library:
    """One npm package: the files copied (``source`` inside the package -> ``dest`` in vendor/),
    its licence file, and the text replacements made (old -> new, each must occur)."""

    package: str
    version: str
    licence: str
    files: dict[str, str]
    licence_file: str = "LICENSE"
    rewrites: dict[str, dict[str, str]] = field(default_factory=dict)


LIBRARIES: tuple[Library, ...] = (
    Library("preact", "11.2.0", "MIT", {"dist/preact.mjs": "preact.mjs", "hooks/dist/hooks.mjs": "hooks.mjs"},
            rewrites={"hooks.mjs": {'from"preact"': 'from"./preact.mjs"'}}),
    Library("htm", "3.1.1", "Apache-2.0", {"dist/htm.mjs": "htm.mjs"}),
    Library("i18next", "27.2.11", "MIT", {"dist/esm/i18next.js": "i18next.js"}),
    Library("i18next-browser-languagedetector", "8.3.1", "MIT",
            {"dist/esm/i18nextBrowserLanguageDetector.js": "i18next-browser-languagedetector.js"}),
    Library("chart.js", "4.6.2", "MIT", {"dist/chart.umd.min.js": "chart.umd.min.js"}, licence_file="LICENSE.md"),
    Library("oidc-client-ts", "3.5.0", "Apache-2.0",
            {"dist/browser/oidc-client-ts.min.js": "oidc-client-ts.min.js"}),
)


def sha256(path: Path) -> str:
    """The hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _unpack(library: Library, work: Path) -> Path:
    """``npm pack <package>@<version>`` into ``work`` and extract it; returns the package folder."""
    spec = f"{library.package}@{library.version}"
    out = subprocess.run(["npm", "pack", spec, "--silent"], cwd=work, check=True, capture_output=True, text=True)
    tarball = work / out.stdout.strip().splitlines()[-1]
    target = work / library.package.replace("/", "_")
    with tarfile.open(tarball) as archive:
        archive.extractall(target, filter="data")
    return target / "package"


def _copy(library: Library, package: Path) -> list[dict[str, str]]:
    """Copy the library's files (applying its rewrites) and licence; returns their records."""
    records = []
    for source, dest in library.files.items():
        text = (package / source).read_text(encoding="utf-8")
        for old, new in library.rewrites.get(dest, {}).items():
            if old not in text:
                raise SystemExit(f"{library.package}: {old!r} not found in {source}: check the rewrite")
            text = text.replace(old, new)
        (VENDOR / dest).write_text(text, encoding="utf-8")
        records.append({"file": dest, "source": source, "sha256": sha256(VENDOR / dest)})
    licence = VENDOR / "licenses" / f"{library.package.replace('/', '_')}-{library.licence_file}"
    shutil.copyfile(package / library.licence_file, licence)
    return records


def vendor() -> dict[str, object]:
    """Fetch every library of :data:`LIBRARIES` and write vendor/ and vendor.json; returns the manifest."""
    (VENDOR / "licenses").mkdir(parents=True, exist_ok=True)
    manifest: dict[str, object] = {"libraries": []}
    with tempfile.TemporaryDirectory() as tmp:
        for library in LIBRARIES:
            package = _unpack(library, Path(tmp))
            manifest["libraries"].append({  # type: ignore[attr-defined]
                "package": library.package, "version": library.version, "licence": library.licence,
                "source": f"https://www.npmjs.com/package/{library.package}/v/{library.version}",
                "files": _copy(library, package), "rewrites": library.rewrites,
            })
    (VENDOR / "vendor.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


if __name__ == "__main__":
    for entry in vendor()["libraries"]:  # type: ignore[attr-defined]
        print(f"{entry['package']}@{entry['version']} ({entry['licence']}): {[f['file'] for f in entry['files']]}")
