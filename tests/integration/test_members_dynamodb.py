"""The member store on the template's MemoryTable (moto in-process): the guard that keeps a
project's last admin is in the write itself, so two admins removing each other at the same time
cannot both succeed (the contract of both stores is in ``tests/support/store_contract.py``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agent_memory.domain.errors import VersionConflict
from agent_memory.domain.models import Member, Project

T0 = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)


def admin(user_id: str) -> Member:
    return Member(project_id="p1", user_id=user_id, project_role="admin", study_role="PI", display_name=user_id,
                  added_at=T0, added_by="ops")


def test_two_admins_removing_each_other_at_once_leave_one_admin(aws: dict[str, str], monkeypatch: Any) -> None:
    from agent_memory.adapters.dynamo.members import MemberRepository

    # Given a project with two admins, A and B
    store = MemberRepository()
    store.create_project(Project(project_id="p1", name="p1", created_at=T0))
    store.put_member(admin("u-a"))
    store.put_member(admin("u-b"))
    # and B's removal of A read the admins before A's removal of B was written (a stale listing)
    stale = store.list_members("p1")
    assert store.remove_member("p1", "u-b") is True
    monkeypatch.setattr(store, "list_members", lambda project_id: stale)

    # When B's removal of A is written, Then its condition on B (no longer an admin) refuses it whole
    with pytest.raises(VersionConflict):
        store.remove_member("p1", "u-a")
    assert [m.user_id for m in MemberRepository().list_members("p1")] == ["u-a"]
