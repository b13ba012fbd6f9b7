"""Authentication from the JWT claims API Gateway's JWT authorizer verified; authorization from
the project's membership items in DynamoDB.

The token proves identity only. Claims used (a Cognito user pool or any OIDC issuer can carry them):
- ``sub``: the user id;
- ``cognito:groups``: the caller is a platform operator when it contains ``platform-admins``
  (API Gateway HTTP API passes every claim as a string; arrays arrive as ``"[a b]"``).

Which projects a user may use, and with which role, is the ``MEMBER#{user_id}`` item of the
project (``agent_memory.domain.models.Member``), read by the route guard through a
``MemberReader`` port (or, for a chat turn, in the turn's own BatchGetItem): removing a member
refuses their very next request. A ``custom:projects`` claim, which older tokens carried, grants
nothing. A platform operator is a member of no project by being one: operators may create
projects and add or replace members (the first admin included), and use a project only through a
membership of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent_memory.domain.errors import Forbidden, Unauthorized
from agent_memory.http.powertools import APIGatewayProxyEventV2

if TYPE_CHECKING:
    from agent_memory.domain.models import Member

Role = Literal["admin", "member"]
#: Older tokens listed projects and roles here; it grants nothing any more (membership is in DynamoDB).
PROJECTS_CLAIM = "custom:projects"
#: The groups claim of a Cognito ID token; :data:`OPERATOR_GROUP` in it makes a platform operator.
GROUPS_CLAIM = "cognito:groups"
OPERATOR_GROUP = "platform-admins"
_SPLIT = re.compile(r"[\s,;]+")
#: A user id (``sub``): 1-128 printable ASCII characters without spaces (Cognito's are UUIDs).
#: Control, format (bidi, zero-width) and other non-ASCII characters are refused: the id is the
#: audit actor and appears in provenance, where it must read as what it is.
USER_ID_RE = re.compile(r"[!-~]{1,128}")


@dataclass(frozen=True)
class Caller:
    """The authenticated user: id, whether a platform operator, and the membership of the path's
    project the route guard looked up (None: not a member, or not looked up)."""

    user_id: str
    operator: bool = False
    member: Member | None = field(default=None)

    def role_in(self, project_id: str) -> Role | None:
        """The caller's role in ``project_id`` or None when not a member of it."""
        if self.member is None or self.member.project_id != project_id:
            return None
        return self.member.project_role


def claim_values(value: Any) -> list[str]:
    """A multi-valued claim as a list: a JSON array, or API Gateway's ``"[a b]"`` / ``"a,b"`` text."""
    if value is None:
        return []
    items = value if isinstance(value, list) else _SPLIT.split(str(value).strip().strip("[]"))
    return [str(v).strip().strip('"') for v in items if str(v).strip().strip('"')]


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
    return Caller(user_id=str(sub), operator=OPERATOR_GROUP in claim_values(claims.get(GROUPS_CLAIM)))


def authorize(caller: Caller, project_id: str, *, admin: bool = False) -> Role:
    """Check the caller may use ``project_id`` (as an admin when ``admin``), from the membership
    the guard looked up (``caller.member``).

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
