"""Who may call which route, decided ONCE per request, in ONE place: the route guard.

Every HTTP function builds its event handler with :func:`guarded_resolver` from its
:class:`~agent_memory.http.routing.Routes` (each route declares its access where it is defined).
The :class:`RouteGuard` middleware runs first for every request: it authenticates the caller,
authorizes the route from the routes' table and the caller's membership of the path's project,
refuses malformed requests, and puts the ONE :class:`~agent_memory.http.auth.Caller` into the
request context, where routes take it with :data:`CurrentCaller`. It runs before the request is
validated, so a caller outside the project always gets 403, never a 400 or 422 that would describe
the route. An undeclared route is refused (fail closed).

The membership comes from the function's :class:`MembershipSource`: the project's ``MEMBER#{sub}``
item read with one GetItem (:func:`member_lookup`), or, in the chat function, the turn's own
BatchGetItem, which reads the membership with the rest of what the turn needs and hands that read
to the route (:class:`Membership` ``read``), so a turn stays at one read and one write
(docs/architecture.md, "Request path").
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from agent_memory.domain.errors import Forbidden, Unauthorized
from agent_memory.domain.ids import ID_PATTERN
from agent_memory.http.auth import USER_ID_RE, Caller, authorize, caller_from_event
from agent_memory.http.errors import RequestRejected, register_error_handlers
from agent_memory.http.powertools import (
    APIGatewayHttpResolver,
    APIGatewayProxyEventV2,
    ApiGatewayResolver,
    Depends,
    NextMiddleware,
    OpenAPIRequestValidationMiddleware,
    Request,
    Response,
    validate_requests_with,
)
from agent_memory.http.routing import Access, Routes

if TYPE_CHECKING:
    from agent_memory.domain.models import Member
    from agent_memory.ports import MemberReader


@dataclass(frozen=True)
class Membership:
    """The caller's membership of a project as a :class:`MembershipSource` read it.

    ``member``: the ``MEMBER#`` item (None: not a member). ``read``: what the source read along
    with it, handed to the route (the chat turn's read); None when it read nothing else.
    """

    member: Member | None
    read: object | None = None


class MembershipSource(Protocol):
    """Reads the caller's membership of the path's project for one request (the raw payload-2.0
    ``event``, the project id as the path gate admits it, the caller's user id)."""

    def __call__(self, event: Mapping[str, Any], project_id: str, user_id: str) -> Membership: ...


def member_lookup(members: MemberReader) -> MembershipSource:
    """The membership source of every function but chat: the ``MEMBER#`` item, one GetItem."""

    def read(event: Mapping[str, Any], project_id: str, user_id: str) -> Membership:
        return Membership(members.get_member(project_id, user_id))

    return read


@dataclass(frozen=True)
class Admission:
    """Who the guard admitted: the caller (None on a public route) and what the membership
    source read along with the membership (None: nothing)."""

    caller: Caller | None
    read: object | None = None


def admit(
    event: Mapping[str, Any], table: Mapping[str, Access], membership: MembershipSource | None
) -> Admission:
    """Apply the routes' ``table`` to a payload-2.0 event.

    Args:
        table: route key -> access (``Routes.table`` of the function).
        membership: where the caller's membership of the path's project is read (None: nowhere,
            so every member or admin route is refused: fail closed).

    Returns:
        The caller (with ``member`` set to the membership of the path's project, when a member or
        admin route needed it) and what the source read along with it; no caller on a public route.

    A ``signed_in`` route admits any verified caller (it names no project; the route reads only
    the caller's own data).

    Raises:
        Unauthorized: no verified claims on a non-public route (401).
        Forbidden: not a member of the path's project (a project that does not exist has no
            members), not its admin on an admin route, not a platform operator on an operator
            route, a project route without a project, or an undeclared route (403).
    """
    access = table.get(str(event.get("routeKey") or ""))
    if access is None:
        raise Forbidden("this route has no access policy")
    if access == "public":
        return Admission(None)
    caller = caller_from_event(APIGatewayProxyEventV2(dict(event)))
    if access == "signed_in":
        return Admission(caller)
    if access == "operator":
        if not caller.operator:
            raise Forbidden("this route is for platform operators")
        return Admission(caller)
    project_id = (event.get("pathParameters") or {}).get("project_id")
    if project_id is None:
        raise Forbidden("this route needs a project")
    if access == "admin_or_operator" and caller.operator:
        return Admission(caller)
    project = str(project_id)
    # An id no project can have is no project the caller is a member of (and never reaches a key).
    found = (
        membership(event, project, caller.user_id)
        if membership is not None and PATH_PARAMETER_RE.fullmatch(project)
        else Membership(None)
    )
    caller = replace(caller, member=found.member)
    authorize(caller, project, admin=access in ("admin", "admin_or_operator"))
    return Admission(caller, found.read)


#: Every path parameter (ids, ISO weeks, versions): letters, digits, ``.``, ``_``, ``-``; 1..128
#: characters, starting with a letter or digit (the same rule as ids in request bodies,
#: ``domain.ids.ID_PATTERN``). Matched against the whole value (``fullmatch``: no trailing newline
#: slips through).
PATH_PARAMETER_RE = re.compile(ID_PATTERN.removeprefix("^").removesuffix("$"))
#: A ``user_id`` in a path, as the path gate admits it: a user id (:data:`~agent_memory.http.auth.USER_ID_RE`)
#: whose characters a client sends as they are (RFC 3986 unreserved: letters, digits, ``-``, ``.``,
#: ``_``, ``~``), and neither ``.`` nor ``..`` (clients escape those); any escaped character is
#: refused (400). What the OpenAPI document states for a ``user_id`` path parameter.
PATH_USER_ID_PATTERN = (
    r"^(?:[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,127}|\.[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,126}|\.\.[A-Za-z0-9._~-]{1,126})$"
)
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


def check_request(event: Mapping[str, Any], *, raw_body: bool = False) -> None:
    """Refuse a malformed request before its body or parameters are read, with a reason that
    never quotes the request's content. ``raw_body``: the route reads its body itself (another
    service's protocol, ``Routes.route(raw_body=...)``): only the path and UTF-8 are checked.

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
    if raw_body:
        return
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

    Admission is :func:`admit` (401 / 403 from the routes' table and the caller's membership)
    followed by :func:`check_request` (400 / 415 / 422 for the request's form); the admitted
    caller goes into the request context (``caller``, read by :data:`CurrentCaller`), with what
    the membership source read along with the membership (``membership_read``, read by
    :func:`membership_read`) and the monotonic instant the guard received the request
    (``received_at``). Only then does Powertools' request validation run (422), so it never
    answers a caller the route does not admit. Refusals are raised and answered by the error map.
    """

    def __init__(self, table: Mapping[str, Access], membership: MembershipSource | None,
                 raw_bodies: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.table = table
        self.membership = membership
        self.raw_bodies = dict(raw_bodies or {})

    def handler(self, app: ApiGatewayResolver, next_middleware: NextMiddleware) -> Response:
        app.append_context(received_at=time.monotonic())
        event = app.current_event.raw_event
        admitted = admit(event, self.table, self.membership)
        if admitted.caller is not None:
            app.append_context(caller=admitted.caller)
        if admitted.read is not None:
            app.append_context(membership_read=admitted.read)
        check_request(event, raw_body=str(event.get("routeKey") or "") in self.raw_bodies)
        return super().handler(app, next_middleware)


def guarded_resolver(
    routes: Routes,
    *,
    membership: MembershipSource | None,
    provide: Mapping[Callable[[], Any], Any] | None = None,
    idempotency: bool = False,
) -> APIGatewayHttpResolver:
    """The event handler of an HTTP function: ``routes`` included, request validation on,
    :class:`RouteGuard` first, the error map attached.

    Args:
        routes: the function's routes (their table is what the guard applies).
        membership: the function's membership source (None: every member or admin route is
            refused, fail closed).
        provide: the collaborators the routes declare with ``Depends(placeholder)``: placeholder ->
            the object (Powertools' ``dependency_overrides``; wiring builds the objects).
        idempotency: add the answers to the Powertools idempotency errors.
    """
    app = APIGatewayHttpResolver(enable_validation=True)
    routes.register(app)
    validate_requests_with(app, RouteGuard(routes.table, membership, routes.raw_bodies))
    register_error_handlers(app, idempotency=idempotency)
    for placeholder, value in (provide or {}).items():
        app.dependency_overrides[placeholder] = _constant(value)
    return app


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def current_caller(request: Request) -> Caller:
    """The caller :class:`RouteGuard` admitted for this request (a route's dependency).

    Raises:
        Unauthorized: no caller (a public route has none): fail closed.
    """
    caller = request.context.get("caller")
    if not isinstance(caller, Caller):
        raise Unauthorized("a valid bearer token is required")
    return caller


#: A route parameter that receives the admitted caller.
CurrentCaller = Annotated[Caller, Depends(current_caller)]


def membership_read(request: Request) -> object | None:
    """What the function's membership source read along with the caller's membership (the chat
    turn's read), or None (a route's dependency)."""
    return request.context.get("membership_read")


def received_at(request: Request) -> float:
    """The ``time.monotonic()`` instant the guard received this request (a route's dependency)."""
    return float(request.context.get("received_at") or time.monotonic())


__all__ = [
    "PATH_PARAMETER_RE",
    "PATH_USER_ID_PATTERN",
    "Admission",
    "CurrentCaller",
    "Membership",
    "MembershipSource",
    "RouteGuard",
    "admit",
    "check_request",
    "current_caller",
    "guarded_resolver",
    "member_lookup",
    "membership_read",
    "received_at",
]
