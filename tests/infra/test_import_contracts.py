"""Each kind of violation of the house's rules breaks the contract that states the rule.

The contracts (``.importlinter``; docs/architecture.md, "Layout") are only worth what they catch.
This test copies the ``agent_memory`` package, adds one import of each forbidden kind to a module
of the copy (at the end of the module, inside a function, so the copy need not run), runs
``lint-imports`` once on the copy with the repository's own ``.importlinter``, and checks that
every injected import is reported under the contract named for it. The handlers in
``functions/`` are outside the package: their rule is checked by ``test_handler_imports.py``,
whose checker is applied here to an injected handler too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra.test_handler_imports import disallowed

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "layers" / "shared" / "agent_memory"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

#: Contract names, by the first words of their ``name`` in ``.importlinter``.
TIERS = "Tiers:"
ADAPTERS_PROTECTED = "Only wiring imports adapters"
ADAPTERS_DOWN = "Adapters import only"
NO_SDK = "Features, http, events, structured, ports and domain import no SDK"
NO_POWERTOOLS = "Features, structured, ports and domain never import Powertools"
DOMAIN_PURE = "The domain imports no other part"

#: (module of the copy that gets the import, module it imports, contract that must break).
VIOLATIONS: list[tuple[str, str, str]] = [
    ("agent_memory.projects.members", "agent_memory.chat.turn", TIERS),  # a lower tier imports a higher one
    ("agent_memory.consultation.sessions", "agent_memory.reminders.service", TIERS),  # siblings of one tier
    ("agent_memory.chat.turn", "agent_memory.jobs.runner", TIERS),  # siblings of the top feature tier
    ("agent_memory.hot_memory.document", "agent_memory.history.reports", TIERS),  # bottom tier reaches up
    ("agent_memory.chat.prompt", "agent_memory.wiring", TIERS),  # a feature imports wiring
    ("agent_memory.http.guard", "agent_memory.events.jobs", TIERS),  # http and events are independent
    ("agent_memory.adapters.dynamo.chat", "agent_memory.chat.turn", TIERS),  # an adapter imports a feature
    ("agent_memory.chat.context_view", "agent_memory.adapters.dynamo.chat", ADAPTERS_PROTECTED),
    ("agent_memory.http.errors", "agent_memory.adapters.sqs", ADAPTERS_PROTECTED),
    ("agent_memory.adapters.sns", "agent_memory.structured", ADAPTERS_DOWN),
    ("agent_memory.hot_memory.editor", "boto3", NO_SDK),
    ("agent_memory.jobs.archive", "pynamodb.models", NO_SDK),
    ("agent_memory.history.reports", "botocore.exceptions", NO_SDK),
    ("agent_memory.chat.agent", "anthropic", NO_SDK),
    ("agent_memory.reminders.service", "requests", NO_SDK),
    ("agent_memory.projects.members", "redcap", NO_SDK),
    ("agent_memory.http.auth", "jwt", NO_SDK),
    ("agent_memory.consultation.summary", "aws_lambda_powertools.utilities.parameters", NO_POWERTOOLS),
    ("agent_memory.domain.models", "agent_memory.ports", DOMAIN_PURE),
]


def _module_file(root: Path, module: str) -> Path:
    relative = Path(*module.split(".")[1:])
    package = root / relative / "__init__.py"
    return package if package.exists() else (root / relative).with_suffix(".py")


def _broken_sections(report: str) -> dict[str, str]:
    """The text reported under each broken contract, by contract name (as printed)."""
    _, _, broken = report.partition("Broken contracts")
    sections: dict[str, str] = {}
    name = None
    lines = broken.splitlines()
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[i + 1].strip()) and line.strip():
            name = line.strip()
            sections[name] = ""
        elif name is not None:
            sections[name] += line + "\n"
    return sections


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """lint-imports' report on a copy of the package with every violation of :data:`VIOLATIONS`."""
    root = tmp_path_factory.mktemp("house") / "agent_memory"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    for importer, imported, _ in VIOLATIONS:
        path = _module_file(root, importer)
        path.write_text(
            path.read_text(encoding="utf-8") + f"\n\ndef _injected_{abs(hash(imported))}() -> None:\n"
            f"    import {imported}  # noqa\n",
            encoding="utf-8",
        )
    done = subprocess.run(
        [str(LINT_IMPORTS), "--config", str(REPO / ".importlinter"), "--no-cache"],
        cwd=REPO, env={"PYTHONPATH": str(root.parent), "PATH": "/usr/bin:/bin", "COLUMNS": "10000"},
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # 1 = contracts broken (not an error)
    return done.stdout


def test_the_repository_keeps_every_contract() -> None:
    done = subprocess.run(
        [str(LINT_IMPORTS), "--config", str(REPO / ".importlinter")],
        cwd=REPO, env={"PYTHONPATH": str(PACKAGE.parent), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(("importer", "imported", "contract"), VIOLATIONS, ids=lambda v: str(v))
def test_each_injected_violation_breaks_its_contract(report: str, importer: str, imported: str, contract: str) -> None:
    sections = _broken_sections(report)
    named = [text for name, text in sections.items() if name.startswith(contract)]
    assert named, f"contract {contract!r} was not broken; broken: {list(sections)}"
    # lint-imports names the importing module and the imported one (for an external package, its
    # top-level name) in the chain it reports.
    target = imported if imported.startswith("agent_memory") else imported.split(".")[0]
    pattern = re.compile(rf"{re.escape(importer)}\b.*->\s*{re.escape(target)}\b")
    assert any(pattern.search(text) for text in named), f"{importer} -> {imported} not reported under {contract!r}"


def test_a_handler_importing_a_feature_is_refused_by_the_handler_check() -> None:
    source = (REPO / "functions" / "chat" / "app.py").read_text(encoding="utf-8")
    injected = source + "\nfrom agent_memory.chat.turn import handle_message\nimport agent_memory.adapters.sqs\n"
    assert disallowed(source) == []
    assert disallowed(injected) == ["agent_memory.chat.turn", "agent_memory.adapters.sqs"]
