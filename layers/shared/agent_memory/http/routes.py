"""Who may call which route: ONE declared table, applied to every request by ONE middleware.

Every HTTP route of ``template.yaml`` has exactly one entry in :data:`ROUTE_POLICY`, keyed by the
API Gateway route key (``"{METHOD} {template path}"``, the ``routeKey`` of the payload-2.0 event):

- ``public``: no token (the route opts out of the JWT authorizer in the template);
- ``member``: a verified token whose ``sub`` is a member of the path's ``project_id``: the
  project's ``MEMBER#{sub}`` item in DynamoDB decides, read through the ``MemberReader`` port (one
  GetItem) — or, on the chat route, in the turn's own BatchGetItem (no extra round trip; the turn
  refuses a non-member before it writes anything);
- ``admin``: the same, with the project role ``admin``;
- ``operator``: a platform operator (``cognito:groups`` contains ``platform-admins``), no project;
- ``admin_or_operator``: the project's admin, or a platform operator (who needs no membership).

Every HTTP function builds its event handler with :func:`guarded_resolver`, whose
:class:`RouteGuard` middleware runs first for every request: it authenticates the caller,
authorizes the route from the table, refuses malformed requests, and puts the ONE
:class:`~agent_memory.http.auth.Caller` into the request context, where routes read it with
:func:`current_caller`. It runs before the request is validated, so a caller outside the project
always gets 403, never a 422 that would describe the route. A route missing from the table is
refused (fail closed); ``tests/integration/test_access_control.py`` enumerates the template's
routes and fails for any route without an entry.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, MutableMapping
from dataclasses import replace
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Literal

from agent_memory.domain.errors import Forbidden, Unauthorized
from agent_memory.http.auth import USER_ID_RE, Caller, authorize, caller_from_event
from agent_memory.http.errors import RequestRejected, register_error_handlers
from agent_memory.http.powertools import (
    APIGatewayHttpResolver,
    APIGatewayProxyEventV2,
    ApiGatewayResolver,
    NextMiddleware,
    OpenAPIRequestValidationMiddleware,
    RequestValidationError,
    Response,
)

if TYPE_CHECKING:
    from agent_memory.ports import MemberReader

Access = Literal["public", "member", "admin", "operator", "admin_or_operator"]

_P = "/v1/projects/{project_id}"

#: Route key -> who may call it. Keep in step with template.yaml (a test enforces it).
ROUTE_POLICY: Mapping[str, Access] = {
    # ---------------------------------------------------------------- public (no authorizer)
    "GET /v1/health": "public",
    "HEAD /v1/health": "public",  # liveness probes that send HEAD: 200, no body
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
    # ---------------------------------------------------------------- answer feedback (SessionsFunction)
    f"PUT {_P}/sessions/{{session_id}}/messages/{{message_id}}/feedback": "member",
    f"GET {_P}/feedback": "admin",
    # ---------------------------------------------------------------- reminders (SessionsFunction)
    # Members see and cancel their own; admins see and cancel everyone's (decided in the use case).
    f"GET {_P}/reminders": "member",
    f"DELETE {_P}/reminders/{{reminder_id}}": "member",
    # ---------------------------------------------------------------- inspection (ApiFunction)
    f"GET {_P}/sessions/{{session_id}}/messages/{{message_id}}/context": "admin",
    # ---------------------------------------------------------------- hot memory
    # Admins only: reading the hot memory with its provenance, changing it, and its history
    # (revisions, review queue, audit).
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
    # ---------------------------------------------------------------- governance (GovernanceFunction)
    # Erasure on withdrawal of consent and the project export: the project's admins only.
    f"DELETE {_P}/patients/{{patient_id}}": "admin",
    f"GET {_P}/patients/{{patient_id}}/erasure": "admin",
    f"DELETE {_P}/sessions/{{session_id}}": "admin",
    f"GET {_P}/sessions/{{session_id}}/erasure": "admin",
    f"GET {_P}/export": "admin",
    # Removal of a whole project (after an export): platform operators only.
    f"DELETE {_P}": "operator",
    f"GET {_P}/removal": "operator",
    # ---------------------------------------------------------------- projects and members (AdminFunction)
    "POST /v1/projects": "operator",
    f"GET {_P}": "member",
    f"PATCH {_P}": "admin",
    f"GET {_P}/members": "member",
    f"PUT {_P}/members/{{user_id}}": "admin_or_operator",
    f"DELETE {_P}/members/{{user_id}}": "admin",
}

#: The chat route: its membership is read in the turn's one BatchGetItem (``chat.turn``), not by
#: the guard, so a turn stays at one read and one write.
CHAT_ROUTE = f"POST {_P}/sessions/{{session_id}}/messages"


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


def admit(
    event: Mapping[str, Any], members: MemberReader | None = None, *, deferred: frozenset[str] = frozenset()
) -> Caller | None:
    """Apply :data:`ROUTE_POLICY` to a payload-2.0 event.

    Args:
        members: the membership lookup (one GetItem per request on a member or admin route).
        deferred: route keys whose membership the route itself checks in its own read (the chat
            turn); the caller is admitted with ``member = None`` there.

    Returns:
        The caller (with ``member`` set to the membership of the path's project), or None on a
        public route.

    Raises:
        Unauthorized: no verified claims on a non-public route (401).
        Forbidden: not a member of the path's project, not its admin on an admin route, not a
            platform operator on an operator route, a project route without a project, or an
            undeclared route (403).
    """
    route_key = str(event.get("routeKey") or "")
    access = access_for(route_key)
    if access == "public":
        return None
    caller = caller_from_event(APIGatewayProxyEventV2(dict(event)))
    if access == "operator":
        if not caller.operator:
            raise Forbidden("this route is for platform operators")
        return caller
    project_id = (event.get("pathParameters") or {}).get("project_id")
    if project_id is None:
        raise Forbidden("this route needs a project")
    if access == "admin_or_operator" and caller.operator:
        return caller
    if route_key in deferred and access == "member":
        return caller
    project = str(project_id)
    # An id no project can have is no project the caller is a member of (and never reaches a key).
    member = members.get_member(project, caller.user_id) if members and PATH_PARAMETER_RE.fullmatch(project) else None
    caller = replace(caller, member=member)
    authorize(caller, project, admin=access in ("admin", "admin_or_operator"))
    return caller


#: Every path parameter (ids, ISO weeks, versions): letters, digits, ``.``, ``_``, ``-``; 1..128
#: characters, starting with a letter or digit (the same rule as ids in request bodies). Matched
#: against the whole value (``fullmatch``: no trailing newline slips through).
PATH_PARAMETER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: Deepest nesting of arrays and objects a request body may have: twice what the deepest request
#: model (a diagnosis report, 32 levels inside its body) allows, so that model's own check answers
#: with its own reason, while a nesting bomb never reaches a recursive parser.
MAX_BODY_DEPTH = 64
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def body_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in JSON ``text``, brackets inside strings not counted;
    linear in the text's length and never recursive (checked before any parser runs)."""
    depth = deepest = 0
    for token in _STRUCTURE.findall(text):
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def check_request(event: Mapping[str, Any]) -> None:
    """Refuse a malformed request before its body or parameters are read, with a reason that
    never quotes the request's content.

    Raises:
        RequestRejected: a path parameter outside :data:`PATH_PARAMETER_RE` -> 400 (a 2,000-character
            session id would otherwise reach DynamoDB's 1,024-byte key limit; ``..``, ``%2F``, NUL
            are refused); a body that is not UTF-8 -> 400; a body on POST/PUT/PATCH not declared
            ``application/json`` -> 415 (it would otherwise be read as a form and echoed in
            validation errors); a JSON body nested deeper than :data:`MAX_BODY_DEPTH`, not JSON,
            or not one JSON object (an array would otherwise be read as its first element) -> 422.
    """
    _check_path(event)
    raw = event.get("body")
    if raw is None or raw == "":
        return
    text = str(raw)
    if event.get("isBase64Encoded"):
        try:
            text = base64.b64decode(raw, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise RequestRejected(HTTPStatus.BAD_REQUEST, "invalid_encoding", "the body must be UTF-8 text") from None
    method = str(((event.get("requestContext") or {}).get("http") or {}).get("method") or "").upper()
    if method in _BODY_METHODS:
        headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
        media, _, params = headers.get("content-type", "").partition(";")
        media = media.strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise RequestRejected(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                "send the body as JSON with Content-Type: application/json",
            )
        _check_json_object(text)
        # Media types are case-insensitive and "+json" is JSON (RFC 6838 section 4.2.8), but the
        # request validation after this reads only a literal "application/json": say it so.
        raw_headers = event.get("headers")
        if isinstance(raw_headers, MutableMapping):
            for name in [k for k in raw_headers if str(k).lower() == "content-type"]:
                raw_headers[name] = "application/json" + (f";{params}" if params else "")


def _check_path(event: Mapping[str, Any]) -> None:
    """Path parameters as the handlers see them: every one matches :data:`PATH_PARAMETER_RE` (a
    ``user_id``: :data:`~agent_memory.http.auth.USER_ID_RE`, the rule of the token's ``sub``), and
    the raw path holds no percent-escape (no valid id needs one, so a decoded parameter can never
    differ from the raw path segment the handler reads)."""
    for name, value in (event.get("pathParameters") or {}).items():
        rule = USER_ID_RE if name == "user_id" else PATH_PARAMETER_RE
        if not isinstance(value, str) or not rule.fullmatch(value):
            raise RequestRejected(
                HTTPStatus.BAD_REQUEST, "invalid_path_parameter",
                f"path parameter {name} must be 1-128 printable ASCII characters" if name == "user_id"
                else f"path parameter {name} must be 1-128 letters, digits, '.', '_' or '-'",
            )
    if "%" in str(event.get("rawPath") or ""):
        raise RequestRejected(
            HTTPStatus.BAD_REQUEST, "invalid_path_parameter",
            "path parameters must be 1-128 letters, digits, '.', '_' or '-' (no percent-escapes)",
        )


def _check_json_object(text: str) -> None:
    """The body is one JSON object, nested at most :data:`MAX_BODY_DEPTH` deep (checked first,
    without recursion), with numbers Python can hold."""
    if body_depth(text) > MAX_BODY_DEPTH:
        raise RequestRejected(
            HTTPStatus.UNPROCESSABLE_ENTITY, "invalid_body", f"the body is nested deeper than {MAX_BODY_DEPTH} levels"
        )
    try:
        value = json.loads(text)
    except ValueError:
        raise RequestRejected(HTTPStatus.UNPROCESSABLE_ENTITY, "invalid_body", "the body is not valid JSON") from None
    if not isinstance(value, dict):
        raise RequestRejected(HTTPStatus.UNPROCESSABLE_ENTITY, "invalid_body", "the body must be one JSON object")


class RouteGuard(OpenAPIRequestValidationMiddleware):
    """The first middleware of every route: admit the request, then validate it.

    Admission is :func:`admit` (401 / 403 from :data:`ROUTE_POLICY` and the membership ``members``
    reads) followed by :func:`check_request` (400 / 415); the admitted caller goes into
    ``app.context["caller"]``. Only then does Powertools' request validation run (422), so it never
    answers a caller the route does not admit. Refusals are raised and answered by the error map.
    """

    def __init__(self, members: MemberReader | None = None, deferred: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.members = members
        self.deferred = deferred

    def handler(self, app: ApiGatewayResolver, next_middleware: NextMiddleware) -> Response:
        event = app.current_event.raw_event
        caller = admit(event, self.members, deferred=self.deferred)
        if caller is not None:
            app.append_context(caller=caller)
        if caller is None or str(event.get("routeKey") or "") not in self.deferred:
            check_request(event)
            return super().handler(app, next_middleware)
        try:
            check_request(event)
            return super().handler(app, next_middleware)
        except (RequestRejected, RequestValidationError):
            # A deferred route reads membership in its own read, which a refused request never
            # reaches: only then is it looked up here, so a non-member still gets 403, never a
            # 400 / 422 that would describe the route.
            admit(event, self.members)
            raise


def guarded_resolver(
    *, members: MemberReader | None, idempotency: bool = False, deferred: frozenset[str] = frozenset()
) -> APIGatewayHttpResolver:
    """The event handler of an HTTP function: request validation on, :class:`RouteGuard` first,
    the error map attached (``idempotency``: with the answers to the idempotency errors).

    ``members`` is the membership lookup of the guard (None: every member or admin route outside
    ``deferred`` is refused, fail closed); ``deferred``: routes that check membership in their own
    read (only :data:`CHAT_ROUTE`).

    Powertools runs its request validation before every middleware given to ``use()``; the guard
    therefore takes the validation's own place at the head of each route's middleware stack.

    Raises:
        RuntimeError: this Powertools version has no such place (the guard would not run).
    """
    app = APIGatewayHttpResolver(enable_validation=True)
    if not isinstance(getattr(app, "_request_validation_middleware", None), OpenAPIRequestValidationMiddleware):
        raise RuntimeError("the Powertools event handler no longer validates requests where RouteGuard expects")
    app._request_validation_middleware = RouteGuard(members, deferred)
    register_error_handlers(app, idempotency=idempotency)
    return app


def current_caller(app: ApiGatewayResolver) -> Caller:
    """The caller :class:`RouteGuard` admitted for this request.

    Raises:
        Unauthorized: no caller (a public route has none): fail closed.
    """
    caller = app.context.get("caller")
    if not isinstance(caller, Caller):
        raise Unauthorized("a valid bearer token is required")
    return caller


__all__ = [
    "CHAT_ROUTE",
    "Access",
    "PATH_PARAMETER_RE",
    "ROUTE_POLICY",
    "RouteGuard",
    "access_for",
    "admit",
    "check_request",
    "current_caller",
    "guarded_resolver",
    "route_key_of",
]
