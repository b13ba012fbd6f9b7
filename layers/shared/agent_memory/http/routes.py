"""Who may call which route: ONE declared table, used by every handler and by the tests.

Every HTTP route of ``template.yaml`` has exactly one entry here, keyed by the API Gateway route
key (``"{METHOD} {template path}"``, the ``routeKey`` of the payload-2.0 event):

- ``public``: no token (the route opts out of the JWT authorizer in the template);
- ``member``: a verified token whose ``custom:projects`` claim lists the path's ``project_id``;
- ``admin``: the same, with the role ``admin`` in that project.

:func:`route_guard` wraps a function's ``lambda_handler`` and applies the table BEFORE the event
handler runs (before body validation too), so a caller outside the project always gets 403, never
a 422 that would tell them anything about the route. A route missing from the table is refused
(fail closed); ``tests/integration/test_access_control.py`` enumerates the template's routes and
fails for any route without an entry (case B08).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from agent_memory.domain.errors import Forbidden, Unauthorized
from agent_memory.http.auth import Caller, authorize, caller_from_event

Access = Literal["public", "member", "admin"]

_P = "/v1/projects/{project_id}"

#: Route key -> who may call it. Keep in step with template.yaml (a test enforces it).
ROUTE_POLICY: Mapping[str, Access] = {
    # ---------------------------------------------------------------- public (no authorizer)
    "GET /v1/health": "public",
    "GET /v1/openapi.json": "public",
    "GET /admin": "public",  # the editor page itself holds no data; its data calls carry the token
    "GET /admin/editor.js": "public",
    # ---------------------------------------------------------------- chat (ChatFunction)
    f"POST {_P}/sessions/{{session_id}}/messages": "member",
    # ---------------------------------------------------------------- sessions (SessionsFunction)
    f"POST {_P}/sessions": "member",
    f"GET {_P}/sessions": "member",
    f"GET {_P}/sessions/{{session_id}}": "member",
    f"POST {_P}/sessions/{{session_id}}/transcript": "member",
    f"POST {_P}/sessions/{{session_id}}/diagnoses": "member",
    f"GET {_P}/sessions/{{session_id}}/diagnoses": "member",
    f"GET {_P}/sessions/{{session_id}}/diagnoses/{{diagnosis_id}}": "member",
    f"GET {_P}/patients/{{patient_id}}/sessions": "member",
    f"GET {_P}/patients/{{patient_id}}/compare": "member",
    # ---------------------------------------------------------------- inspection (ApiFunction)
    f"GET {_P}/sessions/{{session_id}}/messages/{{message_id}}/context": "admin",
    # ---------------------------------------------------------------- hot memory
    # The hot-memory API is the admins' (issue 5: "Hot-memory API (admin)"): reading it with its
    # provenance, changing it and its history (revisions, review queue, audit).
    f"GET {_P}/memory": "admin",
    f"PUT {_P}/memory": "admin",
    f"DELETE {_P}/memory/lines/{{line_id}}": "admin",
    f"GET {_P}/memory/revisions": "admin",
    f"GET {_P}/memory/revisions/{{version}}": "admin",
    f"POST {_P}/memory/revisions/{{version}}/restore": "admin",
    f"GET {_P}/memory/review": "admin",
    f"POST {_P}/memory/review/{{item_id}}/approve": "admin",
    f"POST {_P}/memory/review/{{item_id}}/reject": "admin",
    f"GET {_P}/memory/audit": "admin",
    # ---------------------------------------------------------------- history book
    f"GET {_P}/reports": "member",
    f"PUT {_P}/reports/{{iso_week}}": "admin",
}


def route_key_of(method: str, path: str) -> str:
    """The route key of a template route: ``"GET /v1/projects/{project_id}/memory"``."""
    return f"{method.upper()} {path}"


def access_for(route_key: str) -> Access:
    """The declared access of a route.

    Raises:
        Forbidden: the route has no entry (fail closed: an undeclared route serves nobody).
    """
    access = ROUTE_POLICY.get(route_key)
    if access is None:
        raise Forbidden("this route has no access policy")
    return access


def authorize_event(event: Mapping[str, Any]) -> Caller | None:
    """Apply :data:`ROUTE_POLICY` to a payload-2.0 event.

    Returns:
        The caller, or None on a public route.

    Raises:
        Unauthorized: no verified claims on a non-public route (401).
        Forbidden: not a member of the path's project, not its admin on an admin route, an admin
            route without a project, or an undeclared route (403).
    """
    access = access_for(str(event.get("routeKey") or ""))
    if access == "public":
        return None
    caller = caller_from_event(APIGatewayProxyEventV2(dict(event)))
    project_id = (event.get("pathParameters") or {}).get("project_id")
    if project_id is None:
        if access == "admin":
            raise Forbidden("an admin route needs a project")
        return caller
    authorize(caller, str(project_id), admin=access == "admin")
    return caller


#: Every path parameter (ids, ISO weeks, versions): letters, digits, ``.``, ``_``, ``-``; 1..128
#: characters, starting with a letter or digit (the same rule as ids in request bodies).
PATH_PARAMETER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _error(event: Mapping[str, Any], status: int, code: str, reason: str) -> dict[str, Any]:
    request_id = str(((event.get("requestContext") or {}).get("requestId")) or "")
    body = {"error": code, "reason": reason, "retryable": False, "request_id": request_id}
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(body, ensure_ascii=False),
        "isBase64Encoded": False,
    }


def request_problem(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Reject malformed requests before routing, with a JSON 4xx whose reason never quotes
    the request's content:

    - a path parameter outside :data:`PATH_PARAMETER_RE` -> 400 (a 2,000-character session
      id would otherwise reach DynamoDB's 1,024-byte key limit; ``..``, ``%2F``, NUL refused);
    - a body that is not UTF-8 -> 400;
    - a body on POST/PUT/PATCH that is not declared ``application/json`` -> 415 (otherwise
      the body would be read as a form and echoed in validation errors).
    Returns None when the request may proceed.
    """
    for name, value in ((event.get("pathParameters") or {}) or {}).items():
        if not isinstance(value, str) or not PATH_PARAMETER_RE.match(value):
            return _error(event, 400, "invalid_path_parameter",
                          f"path parameter {name} must be 1-128 letters, digits, '.', '_' or '-'")
    raw = event.get("body")
    if raw is None or raw == "":
        return None
    if event.get("isBase64Encoded"):
        try:
            base64.b64decode(raw, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return _error(event, 400, "invalid_encoding", "the body must be UTF-8 text")
    method = str(((event.get("requestContext") or {}).get("http") or {}).get("method") or "").upper()
    if method in _BODY_METHODS:
        headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            return _error(event, 415, "unsupported_media_type", "send the body as JSON with Content-Type: application/json")
    return None


def denial_response(event: Mapping[str, Any], exc: Unauthorized | Forbidden) -> dict[str, Any]:
    """The proxy result for a refused request (same body shape as ``agent_memory.http.errors``)."""
    unauthorized = isinstance(exc, Unauthorized)
    request_id = str(((event.get("requestContext") or {}).get("requestId")) or "")
    headers = {"Content-Type": "application/json"}
    if unauthorized:
        headers["WWW-Authenticate"] = 'Bearer error="invalid_token"'
    body = {
        "error": "unauthorized" if unauthorized else "forbidden",
        "reason": exc.reason,
        "retryable": False,
        "request_id": request_id,
    }
    return {
        "statusCode": 401 if unauthorized else 403,
        "headers": headers,
        "body": json.dumps(body, ensure_ascii=False),
        "isBase64Encoded": False,
    }


Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def route_guard(app: ApiGatewayResolver) -> Callable[[Handler], Handler]:
    """Decorate a ``lambda_handler``: refuse with 401/403 per :data:`ROUTE_POLICY` before the
    event handler resolves the route; otherwise put the caller into ``app.context["caller"]``."""

    def decorator(handler: Handler) -> Handler:
        @functools.wraps(handler)
        def wrapper(event: dict[str, Any], context: Any) -> dict[str, Any]:
            try:
                caller = authorize_event(event)
            except (Unauthorized, Forbidden) as exc:
                return denial_response(event, exc)
            problem = request_problem(event)
            if problem is not None:
                return problem
            if caller is not None:
                app.append_context(caller=caller)
            return handler(event, context)

        return wrapper

    return decorator


def current_caller(app: ApiGatewayResolver) -> Caller:
    """The caller :func:`route_guard` admitted (checked again from the event when unguarded).

    Raises:
        Unauthorized / Forbidden: as :func:`authorize_event`.
    """
    caller = app.context.get("caller")
    if isinstance(caller, Caller):
        return caller
    checked = authorize_event(app.current_event.raw_event)
    if checked is None:
        raise Unauthorized("a valid bearer token is required")
    return checked


__all__ = [
    "Access",
    "ROUTE_POLICY",
    "access_for",
    "authorize_event",
    "current_caller",
    "denial_response",
    "request_problem",
    "route_guard",
    "route_key_of",
]
