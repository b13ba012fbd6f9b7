"""What the jobs need from storage (implemented by ``agent_memory.adapters.dynamo.jobs.JobsRepository``)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from agent_memory.domain.jobs import FlowLogEntry, JobRun, ReviewItem, YearlySummary
from agent_memory.domain.models import HotMemory, Project, WeeklyReport


class JobStore(Protocol):
    """Storage port of the jobs. Errors are domain exceptions (``VersionConflict``,
    ``ProjectNotFound``, ``ItemTooLarge``); see ``JobsRepository`` for the round trips."""

    def get_project(self, project_id: str) -> Project: ...

    def load_hot_memory(self, project_id: str) -> HotMemory: ...

    def commit_hot_memory(
        self,
        hot: HotMemory,
        *,
        expected_version: int,
        actor: str,
        reason: str | None,
        now: datetime,
        tokens: int,
        run: JobRun | None,
    ) -> HotMemory: ...

    def read_flow_log(
        self, project_id: str, start: datetime, end: datetime, *, page_size: int | None = None
    ) -> list[FlowLogEntry]: ...

    def get_job_run(self, project_id: str, job: str, key: str) -> JobRun | None: ...

    def put_job_run(self, run: JobRun) -> bool: ...

    def put_review_items(self, items: list[ReviewItem]) -> int: ...

    def get_weekly_report(self, project_id: str, iso_week: str) -> WeeklyReport | None: ...

    def commit_weekly_report(self, report: WeeklyReport, run: JobRun) -> bool: ...

    def list_reports_between(
        self, project_id: str, first_week: str, last_week: str, *, page_size: int | None = None
    ) -> list[WeeklyReport]: ...

    def load_yearly_summaries(self, project_id: str) -> list[YearlySummary]: ...

    def put_yearly_summary(self, summary: YearlySummary) -> bool: ...

    def claim_alert(self, project_id: str, dedupe_key: str, *, kind: str, now: datetime) -> bool: ...

    def release_alert(self, project_id: str, dedupe_key: str) -> None: ...


__all__ = ["JobStore"]
