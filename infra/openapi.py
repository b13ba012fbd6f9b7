"""The API's OpenAPI document: every function's Powertools schema, merged into one file.

Each HTTP Lambda function has its own routes (``agent_memory.http.routes.<function>``), and
Powertools describes them (``get_openapi_schema()`` of a resolver that includes them); API Gateway
serves them all under one URL. This module merges those schemas with Powertools' ``OpenAPIMerge``
and adds the JWT bearer scheme; who may call each operation (``x-access``) is written by the route
declarations themselves (``agent_memory.http.routing``), and public operations get
``security: []``. It writes ``functions/api/openapi.json``, which the ApiFunction serves at
``GET /v1/openapi.json``. (The ApiFunction cannot import the other functions' routes in Lambda
without loading them at cold start: the document is generated ahead.)

Every operation states every status it can answer, derived from what the route IS, never listed per
route, so a route added later is documented by the same rules (:func:`response_codes`): who may call
it (its ``x-access``), its method, its path and query parameters, and whether its function may call
the LLM (its template policies allow ``bedrock:InvokeModel`` or reading the Anthropic key). Every
error status carries the one error body of ``agent_memory.http.errors`` (``Error``), or API
Gateway's own ``{"message"}`` where the gateway answers first (401 without a valid token, 429
throttling, 503 integration timeout).

``python -m infra.openapi`` (``make openapi``) regenerates the file from the route modules;
``--check`` exits 1 when the committed file is stale (a test does the same).
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
    "`x-access` says who may call an operation: `signed_in` (any valid token), `member` / `admin` of the "
    "project, `operator`, or `admin_or_operator`."
)
#: Why an operation of each access answers 403.
_FORBIDDEN = {
    "member": "not a member of the project",
    "admin": "not an admin of the project",
    "operator": "not a platform operator",
    "admin_or_operator": "neither an admin of the project nor a platform operator",
    "signed_in": "not allowed",
}
_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
_WRITE_METHODS = frozenset({"post", "put", "patch", "delete"})
#: The accesses that need a bearer token (``agent_memory.http.routes.Access`` but ``public``).
_TOKEN_ACCESS = frozenset({"signed_in", "member", "admin", "operator", "admin_or_operator"})
_BODY_METHODS = frozenset({"post", "put", "patch"})
#: The operation's access and its rules beyond the schema, written by its route declaration
#: (``agent_memory.http.routing``).
ACCESS = "x-access"
RULES = "x-rules-beyond-schema"
#: The media type of a body the route reads itself (another service's protocol: the body gate checks
#: only UTF-8, never JSON; ``agent_memory.http.routing.RAW_BODY_EXTENSION``).
RAW_BODY = "x-raw-body"

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
    llm = llm_routes()
    for path, item in schema.get("paths", {}).items():
        for method, operation in item.items():
            if method not in _METHODS:
                continue
            if operation.get(ACCESS) == "public":
                operation["security"] = []
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
    *, method: str, access: str | None, parameters: set[str], query: bool, body: bool, llm: bool,
    precondition: bool = False, raw_body: bool = False,
) -> set[int]:
    """The error statuses an operation can answer, from what it is (see the module docstring).

    Args:
        method: lower-case HTTP method.
        access: ``public`` / ``signed_in`` / ``member`` / ``admin`` / ``operator`` / ``admin_or_operator``
            (the route's ``x-access``), None when undeclared.
        parameters: names of its path parameters.
        query: it takes query parameters.
        body: it declares a request body.
        llm: its function may call the LLM.
        precondition: it requires ``If-Match`` (428 without).
        raw_body: it reads its body itself (no media type or JSON gate: no 415).
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
        # the body gate: UTF-8, size, and unless the route reads the body itself, media type and one JSON object
        codes |= {400, 413} if raw_body else {400, 413, 415, 422}
    if method in _WRITE_METHODS and access in _TOKEN_ACCESS:
        codes.add(409)  # every write is conditional: a concurrent writer, a stale If-Match, an existing id
    if precondition:
        codes |= {422, 428}  # a write based on a version: If-Match required, and a version's form
    if llm:
        codes |= {502, 503, 504}
    return codes


def _document_responses(operation: dict[str, Any], method: str, path: str, llm: set[str]) -> None:
    """State every status ``operation`` answers with its body, its path parameters' rules, its
    body's shape and the rules beyond the schema it applies."""
    parameters = operation.get("parameters") or []
    access = operation.get(ACCESS)
    codes = response_codes(
        method=method,
        access=access,
        parameters={p["name"] for p in parameters if p.get("in") == "path"},
        query=any(p.get("in") == "query" for p in parameters),
        body="requestBody" in operation,
        llm=f"{method.upper()} {path}" in llm,
        precondition=any(p.get("in") == "header" and p.get("name") == "if-match" and p.get("required")
                         for p in parameters),
        raw_body=RAW_BODY in operation,
    )
    _path_patterns(parameters)
    _one_object_body(operation)
    _raw_body(operation)
    responses: dict[str, Any] = operation.setdefault("responses", {})
    _object_success_bodies(responses)
    if "422" in responses and 422 not in codes:
        del responses["422"]  # Powertools' default, where nothing can fail validation
    rules = {int(status): rule for status, rule in (operation.get(RULES) or {}).items()}
    for code in sorted(codes | set(rules)):
        description, body_schema, retry_after = _ERRORS[code]
        error: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": body_schema}}}
        if retry_after:
            error["headers"] = dict(_RETRY_AFTER)
        if code in rules:  # the route's own rule that no schema states
            error["description"] = f"{description}; {rules[code]}"
        responses[str(code)] = error
    if "403" in responses:  # who is refused, by the route's access
        responses["403"]["description"] = _FORBIDDEN.get(access or "", "not allowed")
    if access == "public":  # no token: a 401 / 403 is the route's own rule (another service's signature)
        for code in (401, 403):
            if code in rules:
                responses[str(code)]["description"] = rules[code]
    if method == "head":  # a HEAD answer never has a body
        for answer in responses.values():
            answer.pop("content", None)
            answer.pop("headers", None)


def _path_patterns(parameters: list[dict[str, Any]]) -> None:
    """The path gate's rule on every string path parameter that states none of its own
    (``guard.PATH_PARAMETER_RE``; a user id: ``guard.PATH_USER_ID_PATTERN``), anchored."""
    from agent_memory.http.guard import PATH_PARAMETER_RE, PATH_USER_ID_PATTERN

    for parameter in parameters:
        schema = parameter.get("schema") or {}
        if parameter.get("in") == "path" and schema.get("type") == "string" and "pattern" not in schema:
            user = parameter.get("name") == "user_id"
            schema["pattern"] = PATH_USER_ID_PATTERN if user else f"^{PATH_PARAMETER_RE.pattern}$"
            if user:
                parameter["description"] = (
                    "A user id; in a path only letters, digits, '-', '.', '_' and '~' (a percent-escaped "
                    "character is refused with 400), and neither '.' nor '..'."
                )


def _one_object_body(operation: dict[str, Any]) -> None:
    """A JSON body is one object: the body gate refuses anything else (422), so an optional body
    is the object or nothing at all, never ``null``."""
    media = ((operation.get("requestBody") or {}).get("content") or {}).get("application/json") or {}
    schema = media.get("schema") or {}
    alternatives = [s for s in schema.get("anyOf") or [] if s != {"type": "null"}]
    if "anyOf" in schema and len(alternatives) == 1:
        media["schema"] = {**alternatives[0], **{k: v for k, v in schema.items() if k not in ("anyOf", "title")}}


def _raw_body(operation: dict[str, Any]) -> None:
    """A body the route reads itself is stated as text of its media type (any declared
    ``Content-Type`` is accepted: the body gate checks only UTF-8 and the size)."""
    media = operation.get(RAW_BODY)
    if media:
        operation["requestBody"] = {"required": True, "content": {str(media): {"schema": {"type": "string"}}}}


def _object_success_bodies(responses: dict[str, Any]) -> None:
    """``Response[str]``: the handler sends a JSON document as text; every JSON body this API
    answers is one object (what the object holds, the route's description says). A 204 and a 304
    have no content at all (RFC 9110, 15.3.5 and 15.4.5), nor does a redirect."""
    for status in ("204", "302", "304"):
        responses.get(status, {}).pop("content", None)
    for status, success in responses.items():
        media = (success.get("content") or {}).get("application/json") or {}
        if str(status).startswith("2") and (media.get("schema") or {}).get("type") == "string":
            media["schema"] = {"type": "object", "title": "Return"}


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


def build() -> str:
    """The merged document of every HTTP function's routes, rendered."""
    return render(merged_schema(http_apps()))


def http_apps(template: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{function logical id: a resolver of its routes}`` for every function of ``template.yaml``
    with HTTP events (its handler folder names its routes' module, ``agent_memory.http.routes``)."""
    _layer_on_path()
    from agent_memory.http.powertools import APIGatewayHttpResolver
    from agent_memory.http.routes import function_routes
    from infra.template_model import FUNCTION_TYPE, load_template, resources_of_type

    apps: dict[str, Any] = {}
    for logical_id, resource in resources_of_type(template or load_template(), FUNCTION_TYPE).items():
        props = resource.get("Properties") or {}
        if not any(e.get("Type") == "HttpApi" for e in (props.get("Events") or {}).values()):
            continue
        app = APIGatewayHttpResolver(enable_validation=True)
        function_routes(Path(str(props["CodeUri"])).name).register(app)
        apps[logical_id] = app
    return apps


def _layer_on_path() -> None:
    layer = str(REPO_ROOT / "layers" / "shared")
    if layer not in sys.path:
        sys.path.insert(0, layer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.openapi", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed file is stale")
    args = parser.parse_args(argv)
    text = build()
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
