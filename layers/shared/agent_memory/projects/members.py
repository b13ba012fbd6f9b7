"""The project and member use cases (``POST /v1/projects``, ``GET/PATCH .../{project_id}``,
``GET .../members``, ``PUT/DELETE .../members/{user_id}``).

Membership decides access (``agent_memory.http.auth``): these use cases are the only writers of
``MEMBER#`` items besides the local tooling. A project always keeps at least one admin: removing or
demoting the last one is refused (``LastAdmin``, 409) by the store, in the write itself.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

from agent_memory.domain.errors import InvalidInput, NotFound
from agent_memory.domain.models import ClinicalDataSource, Member, Project, StudyRole
from agent_memory.ports import MemberStore


class MemberList(BaseModel):
    """The 200 body of ``GET .../members``: every member, by user id."""

    project_id: str
    items: list[Member]


class MemberChange(BaseModel):
    """A stored membership and whether the PUT created it (201) or replaced one (200)."""

    member: Member
    created: bool


#: Most memberships ``GET /v1/me`` lists (a person works in a handful of projects).
MAX_MEMBERSHIPS = 100


class MyProject(BaseModel):
    """One project the caller is a member of: the project (name, time zone, kind) and the caller's
    roles and name in it."""

    project_id: str
    name: str
    time_zone: str
    kind: str
    project_role: Literal["admin", "member"]
    study_role: StudyRole
    display_name: str


class Me(BaseModel):
    """``GET /v1/me``: who the token says the caller is, whether a platform operator, and the
    projects they are a member of (by project id; a removed project is left out)."""

    user_id: str
    operator: bool
    projects: list[MyProject]


def who_am_i(store: MemberStore, *, user_id: str, operator: bool) -> Me:
    """The caller and their memberships (at most :data:`MAX_MEMBERSHIPS`), each with its project."""
    memberships = store.memberships_of(user_id, limit=MAX_MEMBERSHIPS)
    projects = {p.project_id: p for p in store.get_projects([m.project_id for m in memberships])}
    mine = [
        MyProject(project_id=m.project_id, name=project.name, time_zone=project.time_zone, kind=project.kind,
                  project_role=m.project_role, study_role=m.study_role, display_name=m.display_name)
        for m in memberships if (project := projects.get(m.project_id)) is not None
    ]
    return Me(user_id=user_id, operator=operator, projects=mine)


def create_project(
    store: MemberStore, *, project_id: str, name: str, time_zone: str, kind: Literal["iit", "consultation"],
    now: datetime,
) -> Project:
    """Store a new project (no members yet: a platform operator adds the first admin).

    Raises:
        AlreadyExists: the id is taken (409). Ids and zones are validated by the request model.
    """
    project = Project(project_id=project_id, name=name, time_zone=time_zone, kind=kind, created_at=now)
    store.create_project(project)
    return project


def get_project(store: MemberStore, project_id: str) -> Project:
    """The project. Raises ProjectNotFound (404)."""
    return store.get_project(project_id)


def update_project(
    store: MemberStore, project_id: str, *, name: str | None = None, time_zone: str | None = None,
    clinical_data: ClinicalDataSource | None = None, token_secret_prefix: str = "",
) -> Project:
    """Change the name, the time zone (activity markers and job periods follow it from the next
    request on: every turn and job reads the project record) or the clinical data source (its
    token secret by NAME only). Fields left None stay as they are.

    ``token_secret_prefix``: the name prefix the functions may read token secrets under
    (``CLINICAL_TOKEN_SECRET_PREFIX``; the chat role's IAM grant): a secret outside it is refused
    here, so an admin cannot point the tools at another secret of the account.

    Raises:
        ProjectNotFound: unknown project (404).
        InvalidInput: a token secret outside ``token_secret_prefix`` (422).
    """
    if clinical_data is not None and not clinical_data.token_secret.startswith(token_secret_prefix):
        raise InvalidInput(f"clinical_data.token_secret: must be a secret name starting with {token_secret_prefix!r}")
    project = store.get_project(project_id)
    changes = {k: v for k, v in {"name": name, "time_zone": time_zone, "clinical_data": clinical_data}.items()
               if v is not None}
    if not changes:
        return project
    updated = project.model_copy(update=changes)
    store.update_project(updated)
    return updated


def list_members(store: MemberStore, project_id: str) -> MemberList:
    """Every member of the project. Raises ProjectNotFound (404)."""
    store.get_project(project_id)
    return MemberList(project_id=project_id, items=store.list_members(project_id))


def put_member(
    store: MemberStore, project_id: str, user_id: str, *, project_role: Literal["admin", "member"],
    study_role: StudyRole, display_name: str, actor: str, now: datetime,
) -> MemberChange:
    """Add or replace a membership (a replaced one keeps when and by whom it was first added).

    Raises:
        ProjectNotFound: unknown project (404).
        LastAdmin: it would demote the project's last admin (409).
        VersionConflict: a concurrent change of the same membership (409).
    """
    store.get_project(project_id)
    current = store.get_member(project_id, user_id)
    member = Member(
        project_id=project_id, user_id=user_id, project_role=project_role, study_role=study_role,
        display_name=display_name,
        added_at=current.added_at if current else now, added_by=current.added_by if current else actor,
    )
    created = store.put_member(member)
    return MemberChange(member=member, created=created)


def remove_member(store: MemberStore, project_id: str, user_id: str) -> None:
    """Remove a membership: the user's next request to the project is refused (403).

    Raises:
        NotFound: ``user_id`` is not a member (404).
        LastAdmin: the project's last admin (409).
    """
    if not store.remove_member(project_id, user_id):
        raise NotFound(f"{user_id} is not a member of project {project_id}")


__all__ = [
    "MAX_MEMBERSHIPS", "Me", "MemberChange", "MemberList", "MyProject", "create_project", "get_project",
    "list_members", "put_member", "remove_member", "update_project", "who_am_i",
]
