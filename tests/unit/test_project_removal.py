"""The project removal's rules (agent_memory.governance.removal) over a small in-memory store:
the confirmation, 409 only for an erasure running and younger than the job window, inline vs job
by size, the audit record's counts, idempotence, a lost job queued again."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_memory.domain.errors import InvalidInput, JobsRunning, ProjectNotFound
from agent_memory.domain.governance import JOB_RUNNING_WINDOW_S, ErasureRecord, RemovalRecord
from agent_memory.domain.jobs import JobRequest
from agent_memory.domain.models import Project
from agent_memory.governance.erasure import GovernanceDeps
from agent_memory.governance.removal import request_removal

NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)


class Store:
    """Just what the removal calls of the admin, erasure, patient references and removal stores; a
    project of ``memory`` partition items, sessions of ``per_session`` items each and ``patients``
    patient references items."""

    def __init__(self, memory: int = 5, sessions: int = 2, per_session: int = 3, patients: int = 3) -> None:
        self.project: Project | None = Project(project_id="p1", name="p1", created_at=NOW - timedelta(days=3))
        self.memory = memory
        self.sessions = {f"s{i}": per_session for i in range(sessions)}
        self.removal: RemovalRecord | None = None
        self.erasures: list[ErasureRecord] = []
        self.patient_refs = patients

    def get_project(self, project_id: str) -> Project:
        if self.project is None:
            raise ProjectNotFound(project_id)
        return self.project

    def get_removal(self, project_id: str) -> RemovalRecord | None:
        return self.removal

    def save_removal(self, record: RemovalRecord) -> None:
        self.removal = record

    def running_erasures(self, project_id: str) -> list[ErasureRecord]:
        return [e for e in self.erasures if e.status == "running"]

    def project_size(self, project_id: str, *, stop_after: int) -> int:
        return self.memory + (1 if self.project else 0) + sum(self.sessions.values()) + self.patient_refs

    def delete_project_item(self, project_id: str) -> int:
        existed, self.project = self.project is not None, None
        return int(existed)

    def project_reminders(self, project_id: str) -> list[Any]:
        return []

    def project_session_ids(self, project_id: str) -> list[str]:
        return sorted(self.sessions)

    def delete_session_item(self, project_id: str, session_id: str) -> int:
        return 1

    def delete_session_batch(self, project_id: str, session_id: str, *, limit: int) -> dict[str, int]:
        left = self.sessions.pop(session_id, 0) - 1
        return {"message": left} if left > 0 else {}

    def delete_patient_refs_items(self, project_id: str, *, limit: int) -> int:
        n = min(limit, self.patient_refs)
        self.patient_refs -= n
        return n

    def delete_flow_log_day(self, project_id: str, day: Any) -> int:
        return 0

    def delete_memory_batch(self, project_id: str, *, limit: int) -> int:
        n, self.memory = min(limit, self.memory), self.memory - min(limit, self.memory)
        return n


class Jobs:
    def __init__(self) -> None:
        self.sent: list[JobRequest] = []

    def send(self, requests: Sequence[JobRequest]) -> int:
        self.sent.extend(requests)
        return len(requests)


def _deps(store: Store, jobs: Jobs | None = None, inline_items: int = 400, now: datetime = NOW) -> GovernanceDeps:
    fake: Any = store  # it holds only what the removal calls of each port
    return GovernanceDeps(admin=fake, erasures=fake, patient_refs=fake, exports=fake, removals=fake, jobs=jobs,
                          clock=lambda: now, inline_items=inline_items, batch_items=2)


def test_a_small_project_is_removed_inline_with_counts_and_a_second_call_answers_the_record() -> None:
    store = Store()
    record = request_removal(_deps(store), project_id="p1", confirm="p1", actor="ops")
    assert record.status == "done" and record.mode == "inline" and record.actor == "ops"
    assert record.counts == {"memory": 6, "session": 2, "message": 4, "patient_refs": 3}
    assert store.memory == 0 and store.sessions == {} and store.patient_refs == 0
    assert request_removal(_deps(store), project_id="p1", confirm="p1", actor="ops") == record


@pytest.mark.parametrize("confirm", [None, "", "p2", "P1"])
def test_the_caller_must_name_the_project(confirm: str | None) -> None:
    store = Store()
    with pytest.raises(InvalidInput):
        request_removal(_deps(store), project_id="p1", confirm=confirm, actor="ops")
    assert store.project is not None and store.removal is None


def test_an_unknown_project_never_removed_is_not_found() -> None:
    store = Store()
    store.project = None
    with pytest.raises(ProjectNotFound):
        request_removal(_deps(store), project_id="p1", confirm="p1", actor="ops")


def test_a_running_erasure_younger_than_the_job_window_refuses_and_an_older_one_does_not() -> None:
    store = Store()
    erasure = ErasureRecord(project_id="p1", kind="patient", target_id="P1", actor="a", mode="job",
                            requested_at=NOW - timedelta(seconds=JOB_RUNNING_WINDOW_S - 1))
    store.erasures = [erasure]
    with pytest.raises(JobsRunning):
        request_removal(_deps(store), project_id="p1", confirm="p1", actor="ops")
    assert store.project is not None and store.removal is None
    store.erasures = [erasure.model_copy(update={"requested_at": NOW - timedelta(seconds=JOB_RUNNING_WINDOW_S)})]
    assert request_removal(_deps(store), project_id="p1", confirm="p1", actor="ops").status == "done"


def test_a_large_project_goes_to_the_job_queue_and_a_lost_job_is_queued_again() -> None:
    store, jobs = Store(), Jobs()
    record = request_removal(_deps(store, jobs, inline_items=5), project_id="p1", confirm="p1", actor="ops")
    assert record.status == "running" and record.mode == "job" and record.counts == {"memory": 1}
    assert store.project is None  # the project is unknown from the request on
    assert [(j.job, j.target_kind, j.target_id) for j in jobs.sent] == [("erase", "project", "p1")]
    # again while the job may still run: the same record, no second job
    assert request_removal(_deps(store, jobs, inline_items=5), project_id="p1", confirm="p1", actor="ops") == record
    assert len(jobs.sent) == 1
    # after the job window: it is queued again
    late = NOW + timedelta(seconds=JOB_RUNNING_WINDOW_S)
    request_removal(_deps(store, jobs, inline_items=5, now=late), project_id="p1", confirm="p1", actor="ops")
    assert len(jobs.sent) == 2
