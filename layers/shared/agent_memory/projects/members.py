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

from agent_memory.domain.baseline_rules import BASELINE_AUTHOR, RulesLanguage, baseline_rule_lines
from agent_memory.domain.errors import NotFound, ProjectNotFound
from agent_memory.domain.models import HotMemory, IdentifierPolicy, Member, Project, StudyRole
from agent_memory.hot_memory.document import document_tokens
from agent_memory.ports import MemberStore
from agent_memory.projects.clinical_source import (
    ClinicalDataPatch,
    ClinicalSourceDeps,
    apply_clinical_patch,
    remove_clinical_source,
)


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
    now: datetime, rules_language: RulesLanguage = "zh",
) -> Project:
    """Store a new project (no members yet: a platform operator adds the first admin).

    An IIT project starts with the baseline System Rules of an investigator-initiated trial
    (:mod:`agent_memory.domain.baseline_rules`, in ``rules_language``), written with the project in
    one write as hot-memory version 1: admin lines the project's admins review when onboarding and
    may edit or remove like any admin line, and that the distillation's guards hold every relaxing
    statement against from the first day (docs/architecture.md, "Hot memory"). A consultation
    project starts with an empty hot memory.

    Raises:
        AlreadyExists: the id is taken (409; nothing written). Ids and zones are validated by the
            request model.
    """
    project = Project(project_id=project_id, name=name, time_zone=time_zone, kind=kind, created_at=now)
    if kind != "iit":
        store.create_project(project)
        return project
    lines = baseline_rule_lines(rules_language, now=now)
    store.create_project(project, rules=HotMemory(project_id=project_id, lines=lines), actor=BASELINE_AUTHOR,
                         tokens=document_tokens(lines))
    return project


def get_project(store: MemberStore, project_id: str) -> Project:
    """The project. Raises ProjectNotFound (404)."""
    return store.get_project(project_id)


def update_project(
    store: MemberStore, project_id: str, *, name: str | None = None, time_zone: str | None = None,
    clinical_data: ClinicalDataPatch | None | Literal["keep"] = "keep", clinical: ClinicalSourceDeps | None = None,
    identifiers: IdentifierPolicy | None = None, now: datetime,
) -> Project:
    """Change the name, the time zone (activity markers and job periods follow it from the next
    request on: every turn and job reads the project record), the clinical data source or the
    identifier policy (``redact`` / ``reject``: every ingress reads it from the project record on
    each request, so it applies from the next one). ``name`` / ``time_zone`` / ``identifiers``
    None and ``clinical_data`` ``"keep"`` stay as they are; ``clinical_data`` None removes the source.

    The clinical source goes through :func:`~agent_memory.projects.clinical_source.apply_clinical_patch`
    (``clinical``: its collaborators): the token is written to the project's own secret first, then
    the record; a record write that finds the project gone (removed meanwhile) schedules the new
    secret's deletion again, so no secret outlives its project. ``now``: UTC.

    Raises:
        ProjectNotFound: unknown project (404).
        InvalidInput / EgressRefused: the clinical source's rules (422, see ``apply_clinical_patch``).
        ExternalServiceError: Secrets Manager failed (nothing stored in the record).
    """
    project = store.get_project(project_id)
    updated = project.model_copy(update={k: v for k, v in {"name": name, "time_zone": time_zone,
                                                           "identifiers": identifiers}.items() if v is not None})
    written = False
    if clinical_data != "keep":
        if clinical is None:
            raise RuntimeError("the clinical source's collaborators are required to change it")
        change = apply_clinical_patch(updated, clinical_data, clinical, now=now)
        updated, written = change.project, change.secret_written
    if updated == project:
        return project
    try:
        store.update_project(updated)
    except ProjectNotFound:
        if written and clinical is not None:
            remove_clinical_source(updated, clinical)
        raise
    return updated


def list_members(store: MemberStore, project_id: str) -> MemberList:
    """Every member of the project. Raises ProjectNotFound (404)."""
    store.get_project(project_id)
    return MemberList(project_id=project_id, items=store.list_members(project_id))


def put_member(
    store: MemberStore, project_id: str, user_id: str, *, project_role: Literal["admin", "member"],
    study_role: StudyRole, display_name: str, actor: str, now: datetime, wecom_userid: str | None = None,
) -> MemberChange:
    """Add or replace a membership (a replaced one keeps when and by whom it was first added).

    ``wecom_userid``: the member's WeCom user id (None: none); the project's WeCom channel answers
    that WeCom user as this member and sends them their reminders (docs/architecture.md, "WeCom").

    Raises:
        ProjectNotFound: unknown project (404).
        LastAdmin: it would demote the project's last admin (409).
        AlreadyExists: another member of the project has that WeCom user id (409).
        VersionConflict: a concurrent change of the same membership (409).
    """
    store.get_project(project_id)
    current = store.get_member(project_id, user_id)
    member = Member(
        project_id=project_id, user_id=user_id, project_role=project_role, study_role=study_role,
        display_name=display_name, wecom_userid=wecom_userid,
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
