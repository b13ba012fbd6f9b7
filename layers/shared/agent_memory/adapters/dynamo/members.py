"""Projects and their members: the ``PROJECT`` item and the ``MEMBER#{user_id}`` items of the
project's partition of the MemoryTable.

Round trips:
- :meth:`MemberRepository.get_member` (the route guard, once per request): ONE strongly consistent
  GetItem;
- :meth:`MemberRepository.list_members`: ONE Query (``MEMBER#``), read to its end;
- :meth:`MemberRepository.put_member` / :meth:`MemberRepository.remove_member`: one GetItem of the
  membership, one Query of the members only when an admin would lose the role, and ONE write (a
  conditional PutItem / DeleteItem, or a TransactWriteItems whose ConditionCheck keeps another admin
  in place, so two admins removing each other at once can never leave the project without one).
"""

from __future__ import annotations

from collections.abc import Callable

from pynamodb.exceptions import DeleteError, DoesNotExist, PutError, TransactWriteError, UpdateError
from pynamodb.transactions import TransactWrite

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import (
    connection,
    is_conflict,
    put_if_absent,
    sdk_errors_as_domain,
    transaction,
)
from agent_memory.adapters.dynamo.mappers import (
    member_from_item,
    member_to_item,
    new_project_item,
    project_from_item,
    project_update_actions,
)
from agent_memory.adapters.dynamo.tables import MemberItem, ProjectItem
from agent_memory.domain.errors import AlreadyExists, LastAdmin, ProjectNotFound, VersionConflict
from agent_memory.domain.models import Member, Project

_CONDITION_FAILED = "ConditionalCheckFailedException"


def study_role_of(project_id: str, user_id: str) -> str | None:
    """The member's study role (``study_role`` of the project's ``MEMBER#{user_id}`` item in the
    MemoryTable), or None when there is no such item or role (one GetItem of that attribute's item)."""
    response = connection().get_item(ProjectItem.Meta.table_name, project_id, range_key=keys.member_sk(user_id))
    value = (response.get("Item") or {}).get("study_role") or {}
    return value.get("S") if isinstance(value, dict) else None


def _unless_changed(write: Callable[[], object]) -> None:
    """Run a write conditional on the role read; its failed condition is a concurrent change.

    Raises:
        VersionConflict: the membership changed since it was read.
    """
    try:
        write()
    except (PutError, DeleteError) as exc:
        if exc.cause_response_code == _CONDITION_FAILED:
            raise VersionConflict("the membership changed concurrently") from None
        raise


@sdk_errors_as_domain
class MemberRepository:
    """Implements ``agent_memory.ports.MemberStore`` (and ``MemberReader``) on the MemoryTable."""

    # -------------------------------------------------------------------------- projects
    def get_project(self, project_id: str) -> Project:
        """The project record (strongly consistent). Raises ProjectNotFound."""
        try:
            return project_from_item(ProjectItem.get(project_id, keys.PROJECT_SK, consistent_read=True))
        except DoesNotExist:
            raise ProjectNotFound(f"unknown project {project_id}") from None

    def create_project(self, project: Project) -> None:
        """A conditional PutItem (the record of a new project, :func:`new_project_item`).
        Raises AlreadyExists when the id is taken."""
        if not put_if_absent(new_project_item(project)):
            raise AlreadyExists(f"project {project.project_id} already exists")

    def update_project(self, project: Project) -> None:
        """An UpdateItem of the record's fields on condition that the project exists (what only
        the store keeps, ``patient_refs_since``, stays). Raises ProjectNotFound."""
        try:
            ProjectItem(project.project_id, keys.PROJECT_SK).update(
                actions=project_update_actions(project), condition=ProjectItem.sk.exists())
        except UpdateError as exc:
            if exc.cause_response_code == _CONDITION_FAILED:
                raise ProjectNotFound(f"unknown project {project.project_id}") from None
            raise

    # --------------------------------------------------------------------------- members
    def get_member(self, project_id: str, user_id: str) -> Member | None:
        """One strongly consistent GetItem of ``MEMBER#{user_id}``; None when not a member."""
        try:
            return member_from_item(MemberItem.get(project_id, keys.member_sk(user_id), consistent_read=True))
        except DoesNotExist:
            return None

    def list_members(self, project_id: str) -> list[Member]:
        """Every member, ordered by user id (one strongly consistent Query, every page)."""
        items = MemberItem.query(
            project_id, MemberItem.sk.startswith(keys.MEMBER_PREFIX), consistent_read=True
        )
        return [member_from_item(i) for i in items]

    def memberships_of(self, user_id: str, *, limit: int) -> list[Member]:
        """The user's memberships, by project id, at most ``limit`` (one Query of the MemberIndex,
        eventually consistent: a membership added a moment ago may be missing)."""
        items = MemberItem.member_index.query(keys.user_memberships_pk(user_id), limit=limit)
        return [member_from_item(i) for i in items]

    def get_projects(self, project_ids: list[str]) -> list[Project]:
        """The records of ``project_ids`` that exist, by project id (one BatchGetItem per 100)."""
        items = ProjectItem.batch_get([(p, keys.PROJECT_SK) for p in dict.fromkeys(project_ids)])
        return sorted((project_from_item(i) for i in items), key=lambda p: p.project_id)

    def put_member(self, member: Member) -> bool:
        """Create or replace a membership (see ``MemberStore.put_member``); True when new."""
        current = self.get_member(member.project_id, member.user_id)
        item = member_to_item(member)
        if current is None:
            if not put_if_absent(item):
                raise VersionConflict("the membership was created concurrently")
            return True
        if current.project_role == "admin" and member.project_role != "admin":
            self._with_other_admin(member.project_id, member.user_id, lambda tx: tx.save(
                item, condition=MemberItem.project_role == "admin"))
            return False
        _unless_changed(lambda: item.save(condition=MemberItem.project_role == current.project_role))
        return False

    def remove_member(self, project_id: str, user_id: str) -> bool:
        """Remove a membership (see ``MemberStore.remove_member``); False when there was none."""
        current = self.get_member(project_id, user_id)
        if current is None:
            return False
        key = MemberItem(project_id, keys.member_sk(user_id))
        if current.project_role == "admin":
            self._with_other_admin(project_id, user_id, lambda tx: tx.delete(
                key, condition=MemberItem.project_role == "admin"))
            return True
        _unless_changed(lambda: key.delete(condition=MemberItem.project_role == current.project_role))
        return True

    def _with_other_admin(self, project_id: str, user_id: str, write: Callable[[TransactWrite], object]) -> None:
        """Apply ``write`` (a callable adding one item to a transaction) together with a
        ConditionCheck that another admin is still an admin.

        Raises:
            LastAdmin: ``user_id`` is the only admin.
            VersionConflict: the admins changed while this ran (nothing written).
        """
        others = [m for m in self.list_members(project_id) if m.project_role == "admin" and m.user_id != user_id]
        if not others:
            raise LastAdmin(f"{user_id} is the last admin of project {project_id}; add another admin first")
        try:
            with transaction() as tx:
                write(tx)
                tx.condition_check(
                    MemberItem, project_id, keys.member_sk(others[0].user_id),
                    condition=MemberItem.project_role == "admin",
                )
        except TransactWriteError as exc:
            if is_conflict(exc):
                raise VersionConflict("the project's admins changed concurrently") from None
            raise


__all__ = ["MemberRepository"]
