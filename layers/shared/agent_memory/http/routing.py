"""Route declarations: every route says who may call it where it is defined.

A function's routes are a :class:`Routes`: decorators that take the route's access as a required
argument. ``@routes.get(path, "member")`` declares a route that :meth:`Routes.register` adds to a
Powertools resolver as ``app.get(path, openapi_extensions={"x-access": "member"})``, and records
the route key (``"GET /v1/projects/{project_id}/..."``, API Gateway's ``routeKey`` of the
payload-2.0 event) -> access in :attr:`Routes.table`. So there is no second, hand-kept list:

- the route guard of the function (``agent_memory.http.guard``) applies :attr:`Routes.table`;
- the OpenAPI document carries ``x-access`` from the same declaration (Powertools' own
  ``openapi_extensions``);
- ``agent_memory.http.routes.route_table()`` joins every function's table, and the tests check
  ``template.yaml``'s events against it, function by function.

The declarations are registered on each resolver directly, never through a shared Powertools
``Router``: including one module-level ``Router`` in several resolvers of one process (the local
runtime's containers) would hand each new resolver the request context of the last one.

Accesses:

- ``public``: no token (the route opts out of the JWT authorizer in the template);
- ``signed_in``: a verified token, no project (the caller's own identity and memberships);
- ``member``: a verified token whose ``sub`` is a member of the path's ``project_id`` (the
  project's ``MEMBER#{sub}`` item decides);
- ``admin``: the same, with the project role ``admin``;
- ``operator``: a platform operator (``cognito:groups`` contains ``platform-admins``), no project;
- ``admin_or_operator``: the project's admin, or a platform operator (who needs no membership).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args

from agent_memory.http.powertools import ApiGatewayResolver

Access = Literal["public", "signed_in", "member", "admin", "operator", "admin_or_operator"]
#: Every access, in the order above.
ACCESSES: tuple[Access, ...] = get_args(Access)
#: The OpenAPI extension each operation's access is written to.
ACCESS_EXTENSION = "x-access"
#: The OpenAPI extension naming the media type of a body the route reads itself, as raw text (a
#: protocol of another service, e.g. WeCom's XML callbacks): the route guard then checks only that
#: the body is UTF-8, never that it is JSON (docs/architecture.md, "API contract").
RAW_BODY_EXTENSION = "x-raw-body"
#: The OpenAPI extension of the rules a route applies that no JSON Schema can state (a week that
#: does not exist, ``from`` after ``to``, a continuation token the listing did not issue, a limit in
#: UTF-8 bytes): ``{status: the rule}`` (docs/architecture.md, "API contract").
RULES_EXTENSION = "x-rules-beyond-schema"

_F = TypeVar("_F", bound=Callable[..., Any])
_PARAMETER = re.compile(r"<(\w+)>")


def route_key_of(method: str, path: str) -> str:
    """API Gateway's route key of a route: ``"GET /v1/projects/{project_id}/memory"`` (a Powertools
    path's ``<name>`` parameters written ``{name}``, as in the template)."""
    return f"{method.upper()} {_PARAMETER.sub(r'{\1}', path)}"


@dataclass(frozen=True)
class RouteDeclaration:
    """One declared route: method, Powertools path, access, the route function and the other
    options of Powertools' ``route`` (status code, responses, description, ...)."""

    method: str
    path: str
    access: Access
    func: Callable[..., Any]
    options: Mapping[str, Any]
    rules: Mapping[int, str]
    raw_body: str | None = None

    def extensions(self) -> dict[str, Any]:
        """The operation's OpenAPI extensions: its access, the media type of a raw body it reads
        itself, and its rules beyond the schema."""
        extensions: dict[str, Any] = {ACCESS_EXTENSION: self.access}
        if self.raw_body:
            extensions[RAW_BODY_EXTENSION] = self.raw_body
        if self.rules:
            extensions[RULES_EXTENSION] = {str(status): rule for status, rule in sorted(self.rules.items())}
        return extensions


class Routes:
    """One function's routes, each declared with its access (see the module docstring).

    ``table`` maps each route key to its access; ``raw_bodies`` the route keys whose body the route
    reads itself (to its media type); ``declared`` lists the routes in declaration order.
    """

    def __init__(self) -> None:
        self.table: dict[str, Access] = {}
        self.raw_bodies: dict[str, str] = {}
        self.declared: list[RouteDeclaration] = []

    def route(
        self, method: str, path: str, access: Access, *, rules: Mapping[int, str] | None = None,
        raw_body: str | None = None, **options: Any,
    ) -> Callable[[_F], _F]:
        """Declare a route: ``rules`` are the refusals of the route no JSON Schema can state
        (status -> the rule, in the OpenAPI document's :data:`RULES_EXTENSION`); ``raw_body`` the
        media type of a body the route reads itself as text (another service's protocol: no JSON
        checks, :data:`RAW_BODY_EXTENSION`); ``options`` are those of Powertools' ``route`` (the
        function is returned unchanged; :meth:`register` adds it to a resolver).

        Raises:
            ValueError: an unknown access, a route declared twice, or ``openapi_extensions`` given
                (the access is the extension this class writes).
        """
        if access not in ACCESSES:
            raise ValueError(f"unknown access {access!r} for {method} {path}")
        if "openapi_extensions" in options:
            raise ValueError("the access is the route's OpenAPI extension: declare it, not openapi_extensions")
        key = route_key_of(method, path)
        if key in self.table:
            raise ValueError(f"{key} is declared twice")
        self.table[key] = access
        if raw_body:
            self.raw_bodies[key] = raw_body

        def declare(func: _F) -> _F:
            self.declared.append(
                RouteDeclaration(method.upper(), path, access, func, dict(options), dict(rules or {}), raw_body)
            )
            return func

        return declare

    def register(self, app: ApiGatewayResolver) -> None:
        """Add every declared route to ``app``, its access as the ``x-access`` OpenAPI extension."""
        for route in self.declared:
            app.route(route.path, route.method, openapi_extensions=route.extensions(), **route.options)(route.func)

    def get(self, path: str, access: Access, **options: Any) -> Callable[[_F], _F]:
        """A ``GET`` route (see :meth:`route`)."""
        return self.route("GET", path, access, **options)

    def head(self, path: str, access: Access, **options: Any) -> Callable[[_F], _F]:
        """A ``HEAD`` route (see :meth:`route`)."""
        return self.route("HEAD", path, access, **options)

    def post(self, path: str, access: Access, **options: Any) -> Callable[[_F], _F]:
        """A ``POST`` route (see :meth:`route`)."""
        return self.route("POST", path, access, **options)

    def put(self, path: str, access: Access, **options: Any) -> Callable[[_F], _F]:
        """A ``PUT`` route (see :meth:`route`)."""
        return self.route("PUT", path, access, **options)

    def patch(self, path: str, access: Access, **options: Any) -> Callable[[_F], _F]:
        """A ``PATCH`` route (see :meth:`route`)."""
        return self.route("PATCH", path, access, **options)

    def delete(self, path: str, access: Access, **options: Any) -> Callable[[_F], _F]:
        """A ``DELETE`` route (see :meth:`route`)."""
        return self.route("DELETE", path, access, **options)


__all__ = [
    "ACCESSES", "ACCESS_EXTENSION", "RAW_BODY_EXTENSION", "RULES_EXTENSION", "Access", "RouteDeclaration", "Routes",
    "route_key_of",
]
