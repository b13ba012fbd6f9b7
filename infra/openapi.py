"""The API's OpenAPI document: every function's Powertools schema, merged into one file.

Each Lambda function has its own Powertools event handler (``app``), and each can describe its own
routes (``app.get_openapi_schema()``); API Gateway serves them all under one URL. This module merges
those schemas with Powertools' ``OpenAPIMerge``, adds the JWT bearer scheme and, from
``agent_memory.http.routes``, who may call each operation (``x-access``; public operations
get ``security: []``), and writes ``functions/api/openapi.json``, which the ApiFunction serves at
``GET /v1/openapi.json``. (The ApiFunction cannot import the other handlers in Lambda: each
function's package holds only its own folder.)

``python -m infra.openapi`` (``make openapi``) regenerates the file from the handlers as the local
stack loads them; ``--check`` exits 1 when the committed file is stale (a test does the same).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
OPENAPI_FILE = REPO_ROOT / "functions" / "api" / "openapi.json"
TITLE = "Agent Memory Service API"
API_VERSION = "1.0.0"
DESCRIPTION = (
    "Memory for LLM assistants in clinical research: chat, sessions, hot memory (with the admin "
    "editor), history book, projects and members. Every operation but the public ones needs a JWT "
    "bearer token (its `sub` is the user id); the project's membership (`PUT .../members/{user_id}`) "
    "decides access and role, and platform operators carry `platform-admins` in `cognito:groups`. "
    "`x-access` says who may call an operation: `member` / `admin` of the project, `operator`, or "
    "`admin_or_operator`."
)
#: Why an operation of each access answers 403.
_FORBIDDEN = {
    "member": "not a member of the project",
    "admin": "not an admin of the project",
    "operator": "not a platform operator",
    "admin_or_operator": "neither an admin of the project nor a platform operator",
}
_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def merged_schema(apps: Mapping[str, Any]) -> dict[str, Any]:
    """One OpenAPI document from the resolvers ``{function logical id: app}``."""
    from aws_lambda_powertools.event_handler.openapi.merge import OpenAPIMerge
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    from agent_memory.http.routes import ROUTE_POLICY

    merge = OpenAPIMerge(
        title=TITLE,
        version=API_VERSION,
        description=DESCRIPTION,
        security_schemes={"jwt": HTTPBearer(bearerFormat="JWT")},
        security=[{"jwt": []}],
        on_conflict="error",
    )
    for logical_id in sorted(apps):
        try:
            merge.add_schema(apps[logical_id].get_openapi_schema(title=logical_id, version=API_VERSION))
        except Exception as exc:
            raise RuntimeError(f"{logical_id}: Powertools cannot describe its routes: {exc}") from exc
    schema: dict[str, Any] = json.loads(merge.get_openapi_json_schema())
    for path, item in schema.get("paths", {}).items():
        for method, operation in item.items():
            if method not in _METHODS:
                continue
            access = ROUTE_POLICY.get(f"{method.upper()} {path}")
            operation["x-access"] = access or "undeclared"
            if access == "public":
                operation["security"] = []
                continue
            responses = operation.setdefault("responses", {})
            responses.setdefault("401", {"description": "no valid bearer token"})
            responses.setdefault("403", {"description": _FORBIDDEN.get(access or "", "not allowed")})
    return schema


def render(schema: Mapping[str, Any]) -> str:
    """The file's text (stable: sorted keys, UTF-8, trailing newline)."""
    return json.dumps(schema, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def build_from_local_stack() -> str:
    """Load every handler the way the local stack does and render the merged document."""
    from infra.local.stack import LocalStack

    with LocalStack(port=0, moto_port=0, moto_mode="process", isolated=True, seed=False, anthropic_api_key="",
                    env_overrides={"LLM_PROVIDER": "offline"}) as stack:
        return render(merged_schema(http_apps(stack)))


def http_apps(stack: Any) -> dict[str, Any]:
    """``{logical id: app}`` of the stack's functions that have an HTTP event handler."""
    apps = {name: getattr(fn.module, "app", None) for name, fn in stack.functions.items()}
    return {name: app for name, app in apps.items() if hasattr(app, "get_openapi_schema")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.openapi", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed file is stale")
    args = parser.parse_args(argv)
    text = build_from_local_stack()
    current = OPENAPI_FILE.read_text(encoding="utf-8") if OPENAPI_FILE.exists() else ""
    if args.check:
        if text != current:
            print(f"{OPENAPI_FILE.relative_to(REPO_ROOT)} is stale: run `make openapi`", file=sys.stderr)
            return 1
        return 0
    OPENAPI_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {OPENAPI_FILE.relative_to(REPO_ROOT)} ({len(json.loads(text).get('paths', {}))} paths)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
