"""The API's OpenAPI document: every function's Powertools schema, merged into one file.

Each Lambda function has its own Powertools event handler (``app``), and each can describe its own
routes (``app.get_openapi_schema()``); API Gateway serves them all under one URL. This module merges
those schemas with Powertools' ``OpenAPIMerge``, adds the JWT bearer scheme and, from
``agent_memory.http.routes``, who may call each operation (``x-access``; public operations
get ``security: []``), and writes ``functions/api/openapi.json``, which the ApiFunction serves at
``GET /v1/openapi.json``. (The ApiFunction cannot import the other handlers in Lambda: each
function's package holds only its own folder.)

Every operation states every status it can answer, derived from what the route IS, never listed per
route, so a route added later is documented by the same rules (:func:`response_codes`): who may call
it (``ROUTE_POLICY``), its method, its path and query parameters, and whether its function may call
the LLM (its template policies allow ``bedrock:InvokeModel`` or reading the Anthropic key). Every
error status carries the one error body of ``agent_memory.http.errors`` (``Error``), or API
Gateway's own ``{"message"}`` where the gateway answers first (401 without a valid token, 429
throttling, 503 integration timeout).

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
_WRITE_METHODS = frozenset({"post", "put", "patch", "delete"})
#: The accesses that need a bearer token (``agent_memory.http.routes.Access`` but ``public``).
_TOKEN_ACCESS = frozenset({"member", "admin", "operator", "admin_or_operator"})
_BODY_METHODS = frozenset({"post", "put", "patch"})

#: The error body of every error the functions answer (``agent_memory.http.errors.error_response``);
#: an error adds its own fields (``current_version``, ``limit_bytes``, ``detail``, ...).
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Error",
    "required": ["error", "reason", "retryable", "request_id"],
    "properties": {
        "error": {"type": "string", "description": "machine-readable code, e.g. `version_conflict`"},
        "reason": {"type": "string", "description": "why, safe to show; never quotes the request's content"},
        "retryable": {"type": "boolean", "description": "the same request may succeed later"},
        "request_id": {"type": "string"},
    },
    "additionalProperties": True,
}
#: API Gateway's own error body (no valid token, throttling, integration timeout).
GATEWAY_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "GatewayError",
    "required": ["message"],
    "properties": {"message": {"type": "string"}},
}
_ERROR_REF = {"$ref": "#/components/schemas/Error"}
_GATEWAY_REF = {"$ref": "#/components/schemas/GatewayError"}
_EITHER_REF = {"anyOf": [_ERROR_REF, _GATEWAY_REF]}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before retrying (a whole number, at least 1)",
        "schema": {"type": "integer", "minimum": 1},
    }
}

#: status -> (description, body schema, whether it carries Retry-After).
_ERRORS: dict[int, tuple[str, dict[str, Any], bool]] = {
    400: ("malformed request: a path parameter outside its pattern, a body that is not UTF-8, a tampered "
          "continuation token", _ERROR_REF, False),
    401: ("no valid bearer token", _EITHER_REF, False),
    403: ("not a member of the project (an admin route: not its admin)", _ERROR_REF, False),
    404: ("the project or the resource the path names does not exist", _ERROR_REF, False),
    409: ("conflict: a concurrent write won (`version_conflict`, retryable, with `current_version`), the "
          "`If-Match` version is stale, the id exists, or a request with this `Idempotency-Key` is still "
          "running (`request_in_progress`)", _ERROR_REF, True),
    413: ("a field or the body is over its UTF-8 byte limit (`limit_bytes`, `actual_bytes`)", _ERROR_REF, False),
    415: ("the body is not declared `Content-Type: application/json`", _ERROR_REF, False),
    422: ("invalid input: not one JSON object, nested too deep, failing validation (`detail`), or refused by "
          "a rule (`over_token_cap`, `confirmation_required`, ...)", _ERROR_REF, False),
    428: ("`If-Match` (the version the write is based on) is required", _ERROR_REF, False),
    429: ("too many requests (API Gateway throttling)", _GATEWAY_REF, True),
    502: ("a service behind the function failed: the LLM provider (`llm_auth`, `llm_bad_response`, ...) or a "
          "storage call (`service_error`)", _ERROR_REF, False),
    503: ("busy: the LLM (`llm_unavailable`) or storage (`service_unavailable`) is overloaded, or the gateway "
          "timed out; retry after `Retry-After`", _EITHER_REF, True),
    504: ("the LLM did not answer before the request's deadline (`llm_timeout`); retry after `Retry-After`",
          _ERROR_REF, True),
}


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
    llm = llm_routes()
    for path, item in schema.get("paths", {}).items():
        for method, operation in item.items():
            if method in _METHODS:
                _document_responses(operation, method, path, llm)
    _use_error_schema(schema)
    return schema


def llm_routes(template: Mapping[str, Any] | None = None) -> set[str]:
    """Route keys (``"POST /v1/..."``) served by a function that may call the LLM: its template
    policies allow ``bedrock:InvokeModel`` or reading the Anthropic API key's secret."""
    from infra.template_model import FUNCTION_TYPE, load_template, resources_of_type

    template = template if template is not None else load_template()
    keys: set[str] = set()
    for resource in resources_of_type(template, FUNCTION_TYPE).values():
        props = resource.get("Properties") or {}
        policies = json.dumps(props.get("Policies") or [])
        if "bedrock:InvokeModel" not in policies and "AnthropicSecretName" not in policies:
            continue
        for event in (props.get("Events") or {}).values():
            if event.get("Type") == "HttpApi":
                event_props = event.get("Properties") or {}
                keys.add(f"{str(event_props.get('Method', 'ANY')).upper()} {event_props.get('Path', '')}")
    return keys


def response_codes(
    *, method: str, access: str | None, parameters: set[str], query: bool, body: bool, llm: bool
) -> set[int]:
    """The error statuses an operation can answer, from what it is (see the module docstring).

    Args:
        method: lower-case HTTP method.
        access: ``public`` / ``member`` / ``admin`` / ``operator`` / ``admin_or_operator``
            (``ROUTE_POLICY``), None when undeclared.
        parameters: names of its path parameters.
        query: it takes query parameters.
        body: it declares a request body.
        llm: its function may call the LLM.
    """
    codes = {429}  # API Gateway throttles every route
    if parameters or query or body:
        codes.add(422)  # request validation
    if parameters or query:
        codes.add(400)  # the path gate; tampered continuation tokens
    if access in _TOKEN_ACCESS:
        codes |= {401, 403, 502, 503}  # the token; the project's membership; storage behind every data route
    if parameters:
        codes.add(404)  # the project (and what else the path names) may not exist
    if method in _BODY_METHODS:
        codes |= {400, 413, 415, 422}  # the body gate: UTF-8, size, media type, one JSON object
    if method in _WRITE_METHODS and access in _TOKEN_ACCESS:
        codes.add(409)  # every write is conditional: a concurrent writer, a stale If-Match, an existing id
    if method in _WRITE_METHODS and access == "admin":
        codes.add(428)  # admin writes are based on a version: If-Match (required where it changes a document)
    if llm:
        codes |= {502, 503, 504}
    return codes


def _document_responses(operation: dict[str, Any], method: str, path: str, llm: set[str]) -> None:
    key = f"{method.upper()} {path}"
    from agent_memory.http.auth import USER_ID_RE
    from agent_memory.http.routes import PATH_PARAMETER_RE, ROUTE_POLICY

    parameters = operation.get("parameters") or []
    codes = response_codes(
        method=method,
        access=ROUTE_POLICY.get(key),
        parameters={p["name"] for p in parameters if p.get("in") == "path"},
        query=any(p.get("in") == "query" for p in parameters),
        body="requestBody" in operation,
        llm=key in llm,
    )
    for parameter in parameters:
        schema = parameter.get("schema") or {}
        if parameter.get("in") == "path" and schema.get("type") == "string" and "pattern" not in schema:
            # the path gate's rule for every path parameter (routes.PATH_PARAMETER_RE; a user id:
            # auth.USER_ID_RE, the token subject's rule), anchored
            rule = USER_ID_RE if parameter.get("name") == "user_id" else PATH_PARAMETER_RE
            schema["pattern"] = f"^{rule.pattern}$"
    responses: dict[str, Any] = operation.setdefault("responses", {})
    for status, success in responses.items():
        media = (success.get("content") or {}).get("application/json") or {}
        if str(status).startswith("2") and (media.get("schema") or {}).get("type") == "string":
            # ``Response[str]``: the handler sends a JSON document as text; every JSON body this API
            # answers is one object (what the object holds, the route's description says)
            media["schema"] = {"type": "object", "title": "Return"}
    if "422" in responses and 422 not in codes:
        del responses["422"]  # Powertools' default, where nothing can fail validation
    for code in sorted(codes):
        description, body_schema, retry_after = _ERRORS[code]
        error: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": body_schema}}}
        if retry_after:
            error["headers"] = dict(_RETRY_AFTER)
        responses[str(code)] = error
    if "403" in responses:  # who is refused, by the route's access
        responses["403"]["description"] = _FORBIDDEN.get(ROUTE_POLICY.get(key) or "", "not allowed")
    if method == "head":  # a HEAD answer never has a body
        for answer in responses.values():
            answer.pop("content", None)
            answer.pop("headers", None)


def _use_error_schema(schema: dict[str, Any]) -> None:
    """Add ``Error`` and ``GatewayError`` to the components; drop Powertools' validation-error
    schemas once nothing refers to them (every 422 answers with ``Error``)."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["Error"] = ERROR_SCHEMA
    components["GatewayError"] = GATEWAY_ERROR_SCHEMA
    for name in ("HTTPValidationError", "ValidationError"):
        others = {k: v for k, v in components.items() if k != name}
        if f"#/components/schemas/{name}" not in json.dumps([schema.get("paths", {}), others]):
            components.pop(name, None)


def render(schema: Mapping[str, Any]) -> str:
    """The file's text (stable: sorted keys, UTF-8, trailing newline)."""
    return json.dumps(schema, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def build_from_local_stack() -> str:
    """Load every handler the way the local stack does and render the merged document."""
    from infra.local.stack import LocalStack

    with LocalStack(port=0, moto_port=0, isolated=True, seed=False, anthropic_api_key="",
                    env_overrides={"LLM_PROVIDER": "offline"}) as stack:
        return render(merged_schema(http_apps(stack)))


def http_apps(stack: Any) -> dict[str, Any]:
    """``{logical id: app}`` of the stack's functions that have an HTTP event handler."""
    apps = {name: getattr(module, "app", None) for name, module in stack.handler_modules().items()}
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
