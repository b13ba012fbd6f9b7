"""``agent_memory.http.powertools``, the one module that relies on Powertools internals: its
event-handler and event-source packages stay uninitialised in the HTTP functions and give the real
objects when asked for anything else, and the route guard takes the resolver's request validation
place. On a Powertools upgrade the first test fails and says what to re-check.

Each lazy-loading check runs in a fresh interpreter: in this process other tests may already have
imported the packages the plain way (then the module leaves them as they are).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_memory.http.powertools import CHECKED_VERSION, PROVIDED, lazy_package

REPO = Path(__file__).resolve().parents[2]
EVENT_HANDLER = "aws_lambda_powertools.event_handler"
DATA_CLASSES = "aws_lambda_powertools.utilities.data_classes"
#: What to re-check before moving CHECKED_VERSION to a new Powertools version.
RECHECK = """
Powertools {installed} is installed (requirements.txt pins {pinned}); agent_memory/http/powertools.py
was checked against {checked}. Before setting CHECKED_VERSION to the new version, re-check:
1. the lazy registration: the names PROVIDED gives each package are still what its __init__ binds,
   and no submodule asks its package for another one while it is imported (the other tests of this
   file), and the API function still leaves both packages uninitialised;
2. validate_requests_with: the resolver still runs `_request_validation_middleware` first for every
   route, before the middlewares given to use() (tests/unit/test_route_guard.py: 403 before any
   400 / 422);
3. whether the lazy loading is still worth it: `make bench` import_ratio_no_llm_handler with and
   without the registration (target 1.7); remove it when the target holds without.
"""


def test_the_installed_powertools_is_the_version_its_internals_were_checked_against() -> None:
    import importlib.metadata
    import re

    installed = importlib.metadata.version("aws-lambda-powertools")
    found = re.search(r"^aws-lambda-powertools(?:\[[^\]]*\])?==([^\s;]+)", (REPO / "requirements.txt").read_text(),
                      re.MULTILINE)
    pinned = found.group(1) if found else "nothing"
    assert installed == pinned == CHECKED_VERSION, RECHECK.format(installed=installed, pinned=pinned,
                                                                  checked=CHECKED_VERSION)


def test_the_route_guard_takes_the_place_of_request_validation_or_refuses_to_start() -> None:
    from agent_memory.http.powertools import (
        APIGatewayHttpResolver,
        OpenAPIRequestValidationMiddleware,
        validate_requests_with,
    )

    class First(OpenAPIRequestValidationMiddleware):
        pass

    # Given a resolver that validates requests, its validation's place takes the guard
    validating = APIGatewayHttpResolver(enable_validation=True)
    guard = First()
    validate_requests_with(validating, guard)
    assert validating._request_validation_middleware is guard
    # and a resolver without that place refuses: the guard would never run
    with pytest.raises(RuntimeError, match="no longer validates requests"):
        validate_requests_with(APIGatewayHttpResolver(), First())


def _run(code: str, *, function: str | None = None) -> Any:
    """Run ``code`` in a fresh interpreter with the layer (and ``functions/<function>``) on the
    path and the functions' table variables; its last stdout line is JSON."""
    path = [str(REPO / "layers" / "shared")] + ([str(REPO / "functions" / function)] if function else [])
    env = {
        **os.environ, "PYTHONPATH": os.pathsep.join(path), "FLOW_LOG_TABLE": "f", "MEMORY_TABLE": "m",
        "SESSIONS_TABLE": "s", "AWS_DEFAULT_REGION": "eu-west-1", "LLM_PROVIDER": "offline",
    }
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


#: Modules the API function never imports at cold start: the other resolvers (AppSync brings
#: asyncio), the event classes of other services, the LLM SDK; and of ours, the full settings, the
#: ports (annotations only), the jobs', sessions' and admin records, the hot-memory editor, what
#: only its context route uses (the context view, the chat's repository, session and message models
#: and items) and what only its memory route uses (the hot-memory document).
NOT_IMPORTED = (
    "asyncio", "anthropic", f"{EVENT_HANDLER}.appsync", f"{EVENT_HANDLER}.bedrock_agent",
    f"{EVENT_HANDLER}.vpc_lattice", f"{DATA_CLASSES}.kafka_event", f"{DATA_CLASSES}.sqs_event",
    "agent_memory.config", "agent_memory.ports", "agent_memory.domain.jobs", "agent_memory.domain.session_models",
    "agent_memory.domain.records", "agent_memory.hot_memory.editor", "agent_memory.domain.turns",
    "agent_memory.adapters.dynamo.chat", "agent_memory.adapters.dynamo.message_mappers",
    "agent_memory.adapters.dynamo.conversation_tables", "agent_memory.adapters.dynamo.record_tables",
    "agent_memory.chat.context_view", "agent_memory.hot_memory.document",
)


def test_the_api_function_imports_neither_package_init_nor_anything_else_it_never_runs() -> None:
    # Given the API handler imported as Lambda imports it
    loaded = _run(
        "import json, sys, app\n"
        f"eh, dc = sys.modules['{EVENT_HANDLER}'], sys.modules['{DATA_CLASSES}']\n"
        "print(json.dumps({\n"
        "    'lazy': ['__getattr__' in vars(eh), '__getattr__' in vars(dc)],\n"
        f"    'loaded': [m for m in {NOT_IMPORTED!r} if m in sys.modules],\n"
        "    'resolver': type(app.app).__name__,\n"
        "}))\n",
        function="api",
    )
    # Then both packages are still lazy, and none of those modules was imported
    assert loaded == {"lazy": [True, True], "loaded": [], "resolver": "APIGatewayHttpResolver"}


def test_any_other_name_runs_the_real_init_and_gives_the_submodules_objects() -> None:
    # Given the packages registered lazily
    result = _run(
        "import json, sys\n"
        "import agent_memory.http.powertools as p\n"
        f"eh = sys.modules['{EVENT_HANDLER}']\n"
        "before = 'aws_lambda_powertools.event_handler.appsync' in sys.modules\n"
        "from aws_lambda_powertools.event_handler import AppSyncResolver, APIGatewayHttpResolver, Response\n"
        "from aws_lambda_powertools.event_handler import api_gateway, appsync\n"
        "from aws_lambda_powertools.utilities.data_classes import SQSEvent, APIGatewayProxyEventV2\n"
        "from aws_lambda_powertools.utilities.data_classes import api_gateway_proxy_event, sqs_event\n"
        f"dc = sys.modules['{DATA_CLASSES}']\n"
        "print(json.dumps({\n"
        "    'appsync_before': before,\n"
        "    'same': [APIGatewayHttpResolver is api_gateway.APIGatewayHttpResolver is p.APIGatewayHttpResolver,\n"
        "             Response is api_gateway.Response is p.Response, AppSyncResolver is appsync.AppSyncResolver,\n"
        "             APIGatewayProxyEventV2 is api_gateway_proxy_event.APIGatewayProxyEventV2\n"
        "             is p.APIGatewayProxyEventV2, SQSEvent is sqs_event.SQSEvent],\n"
        "    'all': ['AppSyncResolver' in eh.__all__, 'SQSEvent' in dc.__all__],\n"
        "    'lazy_after': ['__getattr__' in vars(eh), '__getattr__' in vars(dc)],\n"
        "}))\n"
    )
    # When a name only the package's __init__ binds is imported, the __init__ runs once, in place:
    # the objects are the submodules' own (the ones our modules use), and the packages are ordinary again
    assert result == {
        "appsync_before": False,
        "same": [True, True, True, True, True],
        "all": [True, True],
        "lazy_after": [False, False],
    }



def test_each_provided_name_is_what_the_package_init_binds() -> None:
    # Given the names the registration gave each lazy package, before the __init__ runs
    result = _run(
        "import json, sys\n"
        "import agent_memory.http.powertools as p\n"
        "given = {(package, name): sys.modules[package].__dict__[name]\n"
        "         for package, submodules in p.PROVIDED.items() for names in submodules.values() for name in names}\n"
        "for package in p.PROVIDED:\n"
        "    sys.modules[package].__all__  # runs the __init__\n"
        "rows = [[package, name, name in sys.modules[package].__all__, getattr(sys.modules[package], name) is obj]\n"
        "        for (package, name), obj in given.items()]\n"
        "print(json.dumps(sorted(rows)))\n"
    )
    # Then every one is exported by the package's __init__, which bound the very same object
    assert len(result) == sum(len(names) for submodules in PROVIDED.values() for names in submodules.values()) == 18
    assert [row for row in result if row[2:] != [True, True]] == []

def test_powertools_utilities_that_import_event_classes_by_path_work_after_the_registration() -> None:
    # Given the packages registered lazily, then the utilities the other functions use
    result = _run(
        "import json, sys\n"
        "import agent_memory.http.powertools\n"
        "from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType\n"
        "from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig\n"
        "from aws_lambda_powertools.utilities.parser.models import SqsRecordModel\n"
        "from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord\n"
        "record = SQSRecord({'messageId': 'm1', 'body': '{}'})\n"
        "print(json.dumps([BatchProcessor(EventType.SQS).event_type.value, record.message_id,\n"
        f"                  '__getattr__' in vars(sys.modules['{DATA_CLASSES}'])]))\n"
    )
    # Then they import their event classes by full path (sqs_event takes S3Event from the
    # package, which the registration provides) without running the package's __init__
    assert result == ["SQS", "m1", True]


# A submodule that, while it is imported, asks its own package for a name the lazy package does not
# have would run the package's __init__, which imports that half-imported submodule again: an
# ImportError. The spy records such requests instead (and lets every other request run the __init__).
_SPY = """
import importlib, json, pkgutil, sys
import agent_memory.http.powertools as p
hazards, failed = [], []

def spy(package, real):
    def __getattr__(name):
        frame = sys._getframe(1)
        while frame is not None:
            module = frame.f_globals.get("__name__", "")
            if frame.f_code.co_name == "<module>" and module.startswith(package.__name__ + "."):
                hazards.append([module, name])
                raise AttributeError(name)
            frame = frame.f_back
        return real(name)
    return __getattr__

for name in (p.DATA_CLASSES, p.EVENT_HANDLER):
    package = sys.modules[name]
    package.__dict__["__getattr__"] = spy(package, package.__dict__["__getattr__"])
for package_name, attribute in WITHDRAWN:
    del sys.modules[package_name].__dict__[attribute]
for name in (p.DATA_CLASSES, p.EVENT_HANDLER):
    for info in pkgutil.walk_packages(sys.modules[name].__path__, name + "."):
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as error:
            if (error.name or "").startswith("aws_lambda_powertools"):
                failed.append([info.name, repr(error)])
            # else: an optional dependency of that submodule (fastjsonschema, ...) is not installed
        except Exception as error:
            failed.append([info.name, repr(error)])
print(json.dumps({"hazards": hazards, "failed": failed}))
"""


def test_no_submodule_asks_its_lazy_package_for_a_name_it_does_not_provide() -> None:
    # Given every submodule of both packages imported after the registration (the pinned fact the
    # module relies on: aws-lambda-powertools in requirements.txt)
    result = _run("WITHDRAWN = []\n" + _SPY)
    # Then none asked its own package for a name while being imported, and every one imported
    assert result == {"hazards": [], "failed": []}


def test_the_check_above_finds_a_submodule_that_needs_a_name_not_provided() -> None:
    # Given S3Event withdrawn from the lazy data_classes package (sqs_event takes it from there)
    result = _run(f"WITHDRAWN = [('{DATA_CLASSES}', 'S3Event')]\n" + _SPY)
    # Then importing sqs_event is reported (and fails: the package has no S3Event yet), nothing else
    assert {tuple(hazard) for hazard in result["hazards"]} == {(f"{DATA_CLASSES}.sqs_event", "S3Event")}
    assert f"{DATA_CLASSES}.sqs_event" in [name for name, _ in result["failed"]]


def test_an_already_imported_package_is_left_as_it_is_and_a_module_is_refused() -> None:
    import json as json_package

    assert lazy_package("json") is json_package
    with pytest.raises(ImportError, match="not an importable package"):
        lazy_package("email.mime.nonexistent_submodule_of_the_test")


def _powertools_imports(path: Path) -> list[str]:
    """Imports in ``path`` of the two packages or any of their submodules."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [n for n in names if any(n == p or n.startswith(p + ".") for p in (EVENT_HANDLER, DATA_CLASSES))]
    return found


def test_our_modules_take_event_handler_and_event_class_names_only_from_the_lazy_module() -> None:
    # Given every handler and every module of the layer
    files = sorted((REPO / "functions").glob("*/app.py")) + sorted((REPO / "layers/shared/agent_memory").rglob("*.py"))
    powertools = REPO / "layers/shared/agent_memory/http/powertools.py"
    # Then none but agent_memory.http.powertools imports those packages (importing any submodule of
    # them first would run the package's __init__ before the registration)
    offenders = {str(f.relative_to(REPO)): _powertools_imports(f) for f in files if f != powertools}
    assert {f: names for f, names in offenders.items() if names} == {}
    assert EVENT_HANDLER + ".api_gateway" in _powertools_imports(powertools)
