"""The handlers in ``functions/`` import only ``agent_memory.wiring``, ``agent_memory.http`` and
``agent_memory.events`` (docs/architecture.md, "Layout"): what a function does is in those
packages, the handler module holds its Powertools objects, its decorators and
``return app.resolve(event, context)``.

import-linter cannot check them (``functions/*/app.py`` are outside the ``agent_memory`` package,
and its contracts forbid, they do not allow only): this test reads every handler's imports, at any
depth of the module, with ``ast``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HANDLERS = sorted((REPO / "functions").glob("*/app.py"))
#: What a handler may import: the three packages (and their modules), and the standard library's
#: names a handler module uses for its annotations and its folder.
ALLOWED = ("agent_memory.wiring", "agent_memory.http", "agent_memory.events", "typing", "pathlib", "__future__", "gc")


def imported_modules(source: str) -> list[str]:
    """Every module ``source`` imports (``import x``, ``from x import y``; relative imports as
    ``.x``), wherever the statement is."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append("." * node.level + (node.module or ""))
    return found


def disallowed(source: str) -> list[str]:
    """The imports of ``source`` outside :data:`ALLOWED`."""
    return [m for m in imported_modules(source) if not any(m == a or m.startswith(a + ".") for a in ALLOWED)]


def test_there_is_a_handler_per_function_folder() -> None:
    assert {p.parent.name for p in HANDLERS} == {
        "admin", "api", "chat", "governance", "job_dispatcher", "job_worker", "reminder", "sessions",
        "wecom_callback", "wecom_inbound", "wecom_sender",
    }


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda p: p.parent.name)
def test_a_handler_imports_only_wiring_http_and_events(handler: Path) -> None:
    assert disallowed(handler.read_text(encoding="utf-8")) == []


def _gc_calls(body: list[ast.stmt]) -> list[tuple[int, str]]:
    return [(i, stmt.value.func.attr) for i, stmt in enumerate(body)
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Attribute) and isinstance(stmt.value.func.value, ast.Name)
            and stmt.value.func.value.id == "gc"]


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda p: p.parent.name)
def test_a_handler_loads_its_modules_with_the_cyclic_gc_off_and_turns_it_on_after(handler: Path) -> None:
    # docs/architecture.md, "Cold start": no GC pass during the imports; what they built is frozen
    body = ast.parse(handler.read_text(encoding="utf-8")).body
    first_package_import = next(i for i, stmt in enumerate(body) if isinstance(stmt, ast.ImportFrom)
                                and (stmt.module or "").startswith("agent_memory"))
    calls = _gc_calls(body)
    assert [name for _, name in calls] == ["disable", "freeze", "enable"]
    assert calls[0][0] < first_package_import
    assert calls[-1][0] == len(body) - 1  # the last statement: GC is on again once the module is loaded


def test_the_check_finds_every_kind_of_import_outside_the_three_packages() -> None:
    # Given a handler that reaches past them in every way an import can be written
    source = (
        "from agent_memory.http.routes.api import api_app\n"
        "from agent_memory.wiring import build_api_function\n"
        "import agent_memory.adapters.dynamo.chat\n"
        "from agent_memory.chat.turn import handle_message\n"
        "from aws_lambda_powertools.utilities.typing import LambdaContext\n"
        "from agent_memory import config\n"
        "from . import helpers\n"
        "def lambda_handler(event, context):\n"
        "    from agent_memory.observability import logger\n"
        "    import boto3\n"
    )
    # Then each of them is reported, and only them
    assert disallowed(source) == [
        "agent_memory.adapters.dynamo.chat", "agent_memory.chat.turn", "aws_lambda_powertools.utilities.typing",
        "agent_memory", ".", "agent_memory.observability", "boto3",
    ]
