"""Authentication and tenancy from the JWT claims API Gateway's JWT authorizer verified.

Claims used (a Cognito user pool or any OIDC issuer can carry them):
- ``sub``: the user id;
- ``custom:projects``: the projects the user belongs to with a role each, as one string
  ``"demo-iit:admin,demo-clinic:member"`` (API Gateway HTTP API passes every claim as a
  string; arrays arrive as ``"[a b]"``, which is accepted too).

Every request is checked against the one route -> role table (:mod:`agent_memory.http.routes`)
by the route guard, the first middleware of every route, which calls :func:`caller_from_event` and
:func:`authorize` once: no valid claims -> 401, a project the user is not in -> 403, an admin route
for a member -> 403. Routes read the admitted :class:`Caller` from the request context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from agent_memory.domain.errors import Forbidden, Unauthorized

Role = Literal["admin", "member"]
PROJECTS_CLAIM = "custom:projects"
_SPLIT = re.compile(r"[\s,;]+")
#: A user id (``sub``): 1-128 printable ASCII characters without spaces (Cognito's are UUIDs).
#: Control, format (bidi, zero-width) and other non-ASCII characters are refused: the id is the
#: audit actor and appears in provenance, where it must read as what it is.
USER_ID_RE = re.compile(r"[!-~]{1,128}")


@dataclass(frozen=True)
class Caller:
    """The authenticated user: id and role per project."""

    user_id: str
    roles: dict[str, Role] = field(default_factory=dict)

    def role_in(self, project_id: str) -> Role | None:
        """The caller's role in ``project_id`` or None when not a member."""
        return self.roles.get(project_id)


def parse_projects_claim(value: Any) -> dict[str, Role]:
    """``"p1:admin,p2:member"`` / ``"[p1:admin p2:member]"`` / a list -> ``{p1: admin, p2: member}``.

    Entries without a valid role are ignored (never widened to a default role). A project named
    twice with different roles gets the least privilege (``member``), whatever the order.
    """
    if value is None:
        return {}
    items = value if isinstance(value, list) else _SPLIT.split(str(value).strip().strip("[]"))
    roles: dict[str, Role] = {}
    for raw in items:
        entry = str(raw).strip().strip('"')
        if ":" not in entry:
            continue
        project, role = entry.rsplit(":", 1)
        if project and role in ("admin", "member"):
            roles[project] = "member" if roles.get(project, role) != role else role  # type: ignore[assignment]
    return roles


def claims_of(event: APIGatewayProxyEventV2) -> dict[str, Any]:
    """The JWT claims of the request ({} when there are none)."""
    try:
        authorizer = event.request_context.authorizer
        if authorizer is not None and authorizer.jwt_claim:
            return dict(authorizer.jwt_claim)
    except (AttributeError, KeyError, TypeError):
        pass
    return {}


def caller_from_event(event: APIGatewayProxyEventV2) -> Caller:
    """The caller of the request.

    Raises:
        Unauthorized: no verified claims, no ``sub``, or a ``sub`` outside :data:`USER_ID_RE`
            (HTTP 401).
    """
    claims = claims_of(event)
    sub = claims.get("sub")
    if not sub:
        raise Unauthorized("a valid bearer token is required")
    if not isinstance(sub, str) or not USER_ID_RE.fullmatch(sub):
        raise Unauthorized("the token's subject must be 1-128 printable ASCII characters")
    return Caller(user_id=str(sub), roles=parse_projects_claim(claims.get(PROJECTS_CLAIM)))


def authorize(caller: Caller, project_id: str, *, admin: bool = False) -> Role:
    """Check the caller may use ``project_id`` (as an admin when ``admin``).

    Returns:
        The caller's role in the project.

    Raises:
        Forbidden: not a member of the project, or not its admin for an admin route (403).
    """
    role = caller.role_in(project_id)
    if role is None:
        raise Forbidden(f"you are not a member of project {project_id}")
    if admin and role != "admin":
        raise Forbidden(f"this route needs the admin role in project {project_id}")
    return role
