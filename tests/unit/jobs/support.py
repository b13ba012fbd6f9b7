"""Builders for the job tests on the in-memory store: projects, hot memory, flow-log messages as
chat writes them, and running a job."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from agent_memory.domain.jobs import FlowLogEntry, JobReport, JobRequest
from agent_memory.domain.models import HotMemory, HotMemoryLine, Project
from agent_memory.events.jobs import run_scheduled
from agent_memory.jobs.deps import JobCaps, JobDeps
from tests.fakes import FakeClock, InMemoryNotifier, InMemoryStore, project_partition

T0 = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)


def utc(text: str) -> datetime:
    """An ISO-8601 instant (with offset) as an aware UTC datetime."""
    return datetime.fromisoformat(text).astimezone(UTC)


def add_project(repo: Any, project_id: str = "p1", *, tz: str = "Asia/Shanghai",
                created_at: datetime | None = None) -> Project:
    project = Project(project_id=project_id, name=f"项目 {project_id}", time_zone=tz,
                      created_at=created_at or utc("2025-12-29T09:00:00+08:00"))
    project_partition(repo).put_project(project)
    return project


def line(line_id: str, section: str, text: str, *, source: str = "admin", at: str = "2026-03-01T09:00:00+08:00",
         by: str = "u-pi-zhang", tag: str | None = None, evidence: tuple[str, ...] = ()) -> HotMemoryLine:
    return HotMemoryLine(
        line_id=line_id, section=section, text=text, source=source,
        role_tag=tag, created_at=utc(at), created_by=by if source == "admin" else "distiller",
        evidence=list(evidence),
    )


def save_hot(repo: Any, project_id: str, lines: list[HotMemoryLine], *, version: int = 0,
             actor: str = "seed") -> HotMemory:
    """Save ``lines`` as the next hot-memory version after ``version``."""
    return project_partition(repo).save_hot_memory(
        HotMemory(project_id=project_id, lines=lines), expected_version=version, actor=actor, reason="test seed",
        now=T0 - timedelta(days=1), tokens=0)


def say(store: InMemoryStore, project_id: str, message_id: str, content: str, at: datetime, *, role: str = "user",
        user_id: str | None = "u-pi-zhang", session_id: str = "s-1", tz: str = "Asia/Shanghai",
        study_role: str | None = None) -> None:
    """One flow-log message and the activity marker of its local day, as the chat turn writes them
    (a user message carries the speaker's study role when given)."""
    store.append_flow_log(project_id, FlowLogEntry(
        message_id=message_id, session_id=session_id, role=role, content=content,
        user_id=user_id if role == "user" else None, at=at, status="ok",
        study_role=study_role if role == "user" else None,
    ))
    store.mark_active(project_id, at.astimezone(ZoneInfo(tz)).date(), at)


def make_deps(repo: Any, *, llm: Any = None, notifier: InMemoryNotifier | None = None,
              clock: Callable[[], datetime] | None = None, **caps: Any) -> JobDeps:
    return JobDeps(store=repo, llm=llm, notifier=notifier or InMemoryNotifier(), clock=clock or FakeClock(T0),
                   caps=JobCaps(conflict_wait_max_s=0.01, **caps))


def run(deps: JobDeps, job: str, project_id: str, run_date: date | str) -> JobReport:
    day = date.fromisoformat(run_date) if isinstance(run_date, str) else run_date
    return run_scheduled(deps, JobRequest(job=job, project_id=project_id, date=day))


def hot_lines(repo: Any, project_id: str = "p1") -> list[HotMemoryLine]:
    return project_partition(repo).load_hot_memory(project_id).lines


def texts(lines: list[HotMemoryLine]) -> list[str]:
    return [ln.text for ln in lines]
