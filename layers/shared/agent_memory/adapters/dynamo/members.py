"""Projects and their members: the ``PROJECT`` item and the ``MEMBER#{user_id}`` items of the
project's partition of the MemoryTable.

Round trips:
- :meth:`MemberRepository.get_member` (the route guard, once per request): ONE strongly consistent
  GetItem;
- :meth:`MemberRepository.list_members`: ONE Query (``MEMBER#``), read to its end;
- :meth:`MemberRepository.put_member` / :meth:`MemberRepository.remove_member`: one GetItem of the
  membership, one Query of the members only when an admin would lose the role, one GetItem of the
  ``WECOMUSER#`` item only when the member gets a new WeCom user id, and ONE write (a conditional
  PutItem / DeleteItem, or a TransactWriteItems: with a ConditionCheck that keeps another admin in
  place, so two admins removing each other at once can never leave the project without one, and
  with the ``WECOMUSER#`` items of the WeCom user id the member gains or loses, so at most one
  member of a project has a WeCom id);
- :meth:`MemberRepository.wecom_member`: ONE strongly consistent GetItem of ``WECOMUSER#``.
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
    hot_memory_to_items,
    member_from_item,
    member_to_item,
    new_project_item,
    project_from_item,
    project_update_actions,
)
from agent_memory.adapters.dynamo.tables import MemberItem, ProjectItem, WeComUserItem
from agent_memory.domain.errors import AlreadyExists, LastAdmin, ProjectNotFound, VersionConflict
from agent_memory.domain.models import HotMemory, Member, Project

_CONDITION_FAILED = "ConditionalCheckFailedException"
#: One write of a membership change, added to a transaction.
_Write = Callable[[TransactWrite], object]


def study_role_of(project_id: str, user_id: str) -> str | None:
    """The member's study role (``study_role`` of the project's ``MEMBER#{user_id}`` item in the
    MemoryTable), or None when there is no such item or role (one GetItem of that attribute's item)."""
    response = connection().get_item(ProjectItem.Meta.table_name, project_id, range_key=keys.member_sk(user_id))
    value = (response.get("Item") or {}).get("study_role") or {}
    return value.get("S") if isinstance(value, dict) else None


def _in_transaction(write: _Write) -> None:
    """ONE TransactWriteItems of the writes ``write`` adds.

    Raises:
        VersionConflict: a condition failed (the membership or a WeCom user id changed since it
            was read; nothing written).
    """
    try:
        with transaction() as tx:
            write(tx)
    except TransactWriteError as exc:
        if is_conflict(exc):
            raise VersionConflict("the membership or its WeCom user id changed concurrently") from None
        raise


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

    def create_project(self, project: Project, *, rules: HotMemory | None = None, actor: str = "",
                       tokens: int = 0) -> None:
        """A conditional PutItem (the record of a new project, :func:`new_project_item`); with
        ``rules`` (its first hot memory: the baseline System Rules) ONE TransactWriteItems of the
        record, the ``HOT`` item (version 1) and ``HOTREV#1`` (by ``actor``, ``tokens`` of the
        rendered document), each on condition that it does not exist: all or nothing.

        Raises:
            AlreadyExists: the id is taken (nothing written).
        """
        if rules is None:
            if not put_if_absent(new_project_item(project)):
                raise AlreadyExists(f"project {project.project_id} already exists")
            return
        hot, revision = hot_memory_to_items(rules, expected_version=0, actor=actor, now=project.created_at,
                                            tokens=tokens, reason="baseline System Rules of a new project")
        try:
            with transaction() as tx:
                tx.save(new_project_item(project), condition=ProjectItem.sk.does_not_exist())
                tx.save(hot)
                tx.save(revision, condition=type(revision).sk.does_not_exist())
        except TransactWriteError as exc:
            if is_conflict(exc):
                raise AlreadyExists(f"project {project.project_id} already exists") from None
            raise

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
        """Create or replace a membership (see ``MemberStore.put_member``); True when new.

        Raises:
            AlreadyExists: another member of the project has the member's WeCom user id.
            LastAdmin, VersionConflict: see the port.
        """
        current = self.get_member(member.project_id, member.user_id)
        item = member_to_item(member)
        condition = (MemberItem.sk.does_not_exist() if current is None
                     else MemberItem.project_role == current.project_role)
        links = self._wecom_links(member.project_id, member.user_id, current, member.wecom_userid)

        def write(tx: TransactWrite) -> None:
            tx.save(item, condition=condition)
            for link in links:
                link(tx)

        if current is not None and current.project_role == "admin" and member.project_role != "admin":
            self._with_other_admin(member.project_id, member.user_id, write)
        elif links:
            _in_transaction(write)
        elif current is None:
            if not put_if_absent(item):
                raise VersionConflict("the membership was created concurrently")
        else:
            _unless_changed(lambda: item.save(condition=condition))
        return current is None

    def remove_member(self, project_id: str, user_id: str) -> bool:
        """Remove a membership (see ``MemberStore.remove_member``); False when there was none. Its
        WeCom user id (``WECOMUSER#`` item) goes with it."""
        current = self.get_member(project_id, user_id)
        if current is None:
            return False
        key = MemberItem(project_id, keys.member_sk(user_id))
        condition = MemberItem.project_role == current.project_role
        links = self._wecom_links(project_id, user_id, current, None)

        def write(tx: TransactWrite) -> None:
            tx.delete(key, condition=condition)
            for link in links:
                link(tx)

        if current.project_role == "admin":
            self._with_other_admin(project_id, user_id, write)
        elif links:
            _in_transaction(write)
        else:
            _unless_changed(lambda: key.delete(condition=condition))
        return True

    def wecom_member(self, project_id: str, wecom_userid: str) -> str | None:
        """The user id of the member whose WeCom user id is ``wecom_userid`` (ignoring case), or
        None (one strongly consistent GetItem)."""
        try:
            item = WeComUserItem.get(project_id, keys.wecom_user_sk(wecom_userid), consistent_read=True)
        except DoesNotExist:
            return None
        return str(item.user_id)

    def _wecom_links(self, project_id: str, user_id: str, current: Member | None, wanted: str | None) -> list[_Write]:
        """The writes of the ``WECOMUSER#`` items when the member's WeCom id changes from the current
        one to ``wanted`` (None: none): the old item deleted (if it is still theirs), the new one
        created (if no one has it). Nothing when the id stays (case aside).

        Raises:
            AlreadyExists: another member has ``wanted`` (read now; a race is the transaction's
                condition, a VersionConflict).
        """
        old = current.wecom_userid if current is not None else None
        if (old or "").lower() == (wanted or "").lower():
            return []
        writes: list[_Write] = []
        mine = (WeComUserItem.user_id == user_id) | WeComUserItem.sk.does_not_exist()
        if old:
            writes.append(lambda tx: tx.delete(WeComUserItem(project_id, keys.wecom_user_sk(old)), condition=mine))
        if wanted:
            holder = self.wecom_member(project_id, wanted)
            if holder is not None and holder != user_id:
                raise AlreadyExists("this WeCom user id belongs to another member of the project")
            link = WeComUserItem(project_id, keys.wecom_user_sk(wanted), user_id=user_id, wecom_userid=wanted)
            writes.append(lambda tx: tx.save(link, condition=mine))
        return writes

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
