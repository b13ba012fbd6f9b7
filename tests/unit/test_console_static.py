"""The team console's static files: both languages have every string the code uses, the Chinese
UI has no English words, no code renders data as HTML, and the vendored libraries are exactly
what vendor.json records (pinned versions, licence texts present)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

CONSOLE = Path(__file__).resolve().parents[2] / "functions" / "admin" / "static" / "console"
SCRIPTS = sorted((CONSOLE / "js").rglob("*.js"))
#: Latin words the Chinese UI may contain: names of formats and products, a tool's name.
LATIN_ALLOWED = {"AI", "Markdown", "JSON", "UTF", "HTTP", "ISO", "read_history", "W"}
PLURAL = re.compile(r"_(zero|one|two|few|many|other)$")


def flat(tree: dict[str, object], prefix: str = "") -> dict[str, str]:
    """{"a.b.c": value} of a nested resource tree, plural suffixes folded (``x_one`` -> ``x``)."""
    out: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat(value, f"{name}."))
        else:
            out[PLURAL.sub("", name)] = str(value)
    return out


def resources(lang: str) -> dict[str, str]:
    return flat(json.loads((CONSOLE / "locales" / f"{lang}.json").read_text(encoding="utf-8")))


def test_both_languages_have_the_same_strings() -> None:
    zh, en = resources("zh"), resources("en")
    assert sorted(set(zh) ^ set(en)) == []
    assert len(zh) > 300


def test_every_literal_key_the_code_uses_exists_in_both_languages() -> None:
    zh, en = resources("zh"), resources("en")
    literal = re.compile(r'\bt\("([a-zA-Z]+\.[\w.]+)"')
    used = {key for script in SCRIPTS for key in literal.findall(script.read_text(encoding="utf-8"))}
    assert len(used) > 150
    assert sorted(k for k in used if k not in zh or k not in en) == []


def test_the_chinese_strings_have_no_english_words() -> None:
    leaks = {
        key: words
        for key, value in resources("zh").items()
        if (words := set(re.findall(r"[A-Za-z_]{2,}", re.sub(r"\{\{\w+\}\}", "", value))) - LATIN_ALLOWED)
    }
    assert leaks == {}


def test_every_api_error_code_has_a_message_in_both_languages() -> None:
    http = Path(__file__).resolve().parents[2] / "layers/shared/agent_memory/http"
    errors_py = (http / "errors.py").read_text()
    sources = "".join(p.read_text() for p in sorted(http.rglob("*.py")))
    codes = set(re.findall(r'HTTPStatus\.\w+, "([a-z_]+)"', sources))
    codes |= set(re.findall(r'\(\s*"(llm_[a-z_]+)"', errors_py))
    assert {"forbidden", "version_conflict", "over_token_cap", "last_admin", "llm_auth"} <= codes
    for lang in ("zh", "en"):
        assert sorted(code for code in codes if f"errors.{code}" not in resources(lang)) == [], lang


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(CONSOLE)))
def test_no_script_renders_data_as_html_or_evaluates_strings(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    html_sinks = r"\.(?:innerHTML|outerHTML)\b|insertAdjacentHTML|document\.write|dangerouslySetInnerHTML"
    assert re.findall(html_sinks, text) == [] and re.findall(r"\beval\(|new Function\(", text) == []


def test_the_vendored_files_are_the_pinned_packages_files() -> None:
    manifest = json.loads((CONSOLE / "vendor" / "vendor.json").read_text(encoding="utf-8"))
    third_party = (CONSOLE / "THIRD_PARTY.md").read_text(encoding="utf-8")
    vendored = set()
    for library in manifest["libraries"]:
        assert re.fullmatch(r"\d+\.\d+\.\d+", library["version"]), library
        assert f"| {library['version']} | {library['licence']} |" in third_party, library["package"]
        assert list((CONSOLE / "vendor" / "licenses").glob(f"{library['package']}-LICENSE*")), library["package"]
        for entry in library["files"]:
            data = (CONSOLE / "vendor" / entry["file"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file"]
            vendored.add(entry["file"])
    on_disk = {p.name for p in (CONSOLE / "vendor").iterdir() if p.is_file() and p.name != "vendor.json"}
    assert on_disk == vendored


def test_scripts_import_only_the_console_s_own_files() -> None:
    for script in SCRIPTS:
        for target in re.findall(r'from\s+"([^"]+)"', script.read_text(encoding="utf-8")):
            assert target.startswith("."), (script.name, target)
            assert (script.parent / target).resolve().is_file(), (script.name, target)
