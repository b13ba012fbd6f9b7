"""Tokens for tests that call the local HTTP API (verified like API Gateway's JWT authorizer), and
the memberships that make them useful.

The one place tests get their bearer tokens from (``infra.local.token`` signs them with the local
key the local stack verifies against). A token proves identity only; the project's ``MEMBER#``
item decides access. So :func:`bearer` for ``"p1:admin"`` also makes the user an admin of ``p1``
in the running local stack of this process (when there is one), and :func:`add_member` does the
same on any store (the in-memory fake, or the DynamoDB adapters on moto).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import requests

from agent_memory.domain.models import Member, StudyRole
from infra.local.token import mint_token, project_roles

#: The dev user of the integration tests: admin of both demo projects.
DEV_USER = "dev"
DEV_PROJECTS = "demo-iit:admin,demo-clinic:admin"
#: When test memberships say they were added.
ADDED_AT = datetime(2026, 1, 1, tzinfo=UTC)


def add_member(
    store: Any, project_id: str, user_id: str, project_role: str = "member", study_role: StudyRole = "Other",
    display_name: str | None = None,
) -> Member:
    """Make ``user_id`` a member of ``project_id`` in ``store``: a ``MemberStore`` (the in-memory
    fake), or any DynamoDB repository, whose bound tables then get the member item."""
    if not hasattr(store, "put_member"):
        from agent_memory.adapters.dynamo.members import MemberRepository

        store = MemberRepository()
    member = Member(
        project_id=project_id, user_id=user_id, project_role=project_role,
        study_role=study_role, display_name=display_name or user_id, added_at=ADDED_AT, added_by="test",
    )
    store.put_member(member)
    return member


def grant(projects: str | Mapping[str, str] | Iterable[str], user: str, study_role: StudyRole = "Other") -> None:
    """Make ``user`` a member of each project (``"p1:admin,p2:member"``, entries or a dict) in the
    local stack running in this process; nothing when none runs. A membership that already has the
    role is left as it is (its study role too)."""
    from infra.local.stack import LocalStack

    stack = LocalStack._active
    if stack is None:
        return
    store = stack.members
    for project_id, role in project_roles(projects).items():
        current = store.get_member(project_id, user)
        if current is None or current.project_role != role:
            add_member(store, project_id, user, role, study_role)


def bearer(
    projects: str | Mapping[str, str] = DEV_PROJECTS, user: str = DEV_USER, study_role: StudyRole = "Other"
) -> dict[str, str]:
    """An ``Authorization`` header for ``user``, made a member of ``projects`` (``"p1:admin,p2:member"``
    or a dict) in the running local stack (see :func:`grant`)."""
    grant(projects, user, study_role)
    return {"Authorization": f"Bearer {mint_token(user)}"}


def operator_bearer(user: str = "ops") -> dict[str, str]:
    """An ``Authorization`` header for a platform operator (``cognito:groups``: ``platform-admins``),
    a member of no project."""
    return {"Authorization": f"Bearer {mint_token(user, operator=True)}"}


def authorized_session(projects: str | Mapping[str, str] = DEV_PROJECTS, user: str = DEV_USER) -> requests.Session:
    """A ``requests`` session that sends the bearer token on every request."""
    session = requests.Session()
    session.headers.update(bearer(projects, user))
    return session
