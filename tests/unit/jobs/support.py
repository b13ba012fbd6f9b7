"""Builders for the job tests: projects, hot memory, flow-log messages as chat writes them,
a scripted LLM, and raw snapshots of the MemoryTable."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import boto3

from agent_memory.adapters.dynamo.jobs import JobsRepository
from agent_memory.adapters.dynamo.repository import flow_log_keys
from agent_memory.adapters.dynamo.tables import ActivityItem, FlowLogItem, ProjectItem
from agent_memory.domain.jobs import JobReport, JobRequest
from agent_memory.domain.llm import LLMRequest, LLMResponse
from agent_memory.domain.models import HotMemory, HotMemoryLine, Project
from agent_memory.jobs.deps import JobCaps, JobDeps
from agent_memory.jobs.notifier import InMemoryNotifier
from agent_memory.jobs.runner import run_job

T0 = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)


def utc(text: str) -> datetime:
    """An ISO-8601 instant (with offset) as an aware UTC datetime."""
    return datetime.fromisoformat(text).astimezone(UTC)


class FixedClock:
    """A clock frozen at ``at`` (advance it by assigning ``at``)."""

    def __init__(self, at: datetime = T0) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def add_project(repo: JobsRepository, project_id: str = "p1", *, tz: str = "Asia/Shanghai",
                created_at: datetime | None = None) -> Project:
    project = Project(project_id=project_id, name=f"项目 {project_id}", time_zone=tz,
                      created_at=created_at or utc("2025-12-29T09:00:00+08:00"))
    repo.put_project(project)
    return project


def line(line_id: str, section: str, text: str, *, source: str = "admin", at: str = "2026-03-01T09:00:00+08:00",
         by: str = "u-pi-zhang", tag: str | None = None, evidence: tuple[str, ...] = ()) -> HotMemoryLine:
    return HotMemoryLine(
        line_id=line_id, section=section, text=text, source=source,  # type: ignore[arg-type]
        role_tag=tag, created_at=utc(at), created_by=by if source == "admin" else "distiller",
        evidence=list(evidence),
    )


def save_hot(repo: JobsRepository, project_id: str, lines: list[HotMemoryLine], *, version: int = 0,
             actor: str = "seed") -> HotMemory:
    """Save ``lines`` as the next hot-memory version after ``version``."""
    return repo.save_hot_memory(HotMemory(project_id=project_id, lines=lines), expected_version=version,
                                actor=actor, reason="test seed", now=T0 - timedelta(days=1), tokens=0)


def say(project_id: str, message_id: str, content: str, at: datetime, *, role: str = "user",
        user_id: str | None = "u-pi-zhang", session_id: str = "s-1", tz: str = "Asia/Shanghai") -> None:
    """Write one flow-log message and the activity marker of its local day, with the keys and
    attributes the chat turn writes (``flow_log_keys``, ``ACTIVE#{local date}``)."""
    from zoneinfo import ZoneInfo

    pk, sk = flow_log_keys(project_id, at, message_id)
    FlowLogItem(pk, sk, project_id=project_id, session_id=session_id, message_id=message_id, role=role,
                content=content, user_id=user_id if role == "user" else None, at=at, status="ok").save()
    local = at.astimezone(ZoneInfo(tz)).date().isoformat()
    ActivityItem(project_id, f"ACTIVE#{local}", activity_pk=f"ACTIVE#{local}", activity_sk=project_id,
                 last_at=at).save()


def tool_reply(name: str, payload: dict[str, Any], *, stop_reason: str = "tool_use") -> LLMResponse:
    return LLMResponse(
        content=[{"type": "tool_use", "id": "toolu_test_1", "name": name, "input": payload}],
        stop_reason=stop_reason, provider="anthropic", model="claude-test",
    )


@dataclass
class ScriptedLLM:
    """An Anthropic-like client answering from a script (one reply or a function of the request)
    and recording every request."""

    reply: LLMResponse | Callable[[LLMRequest], LLMResponse] | Exception
    requests: list[LLMRequest] = field(default_factory=list)
    provider: str = "anthropic"

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        if isinstance(self.reply, Exception):
            raise self.reply
        if callable(self.reply):
            return self.reply(request)
        return self.reply


def make_deps(repo: Any, *, llm: Any = None, notifier: InMemoryNotifier | None = None,
              clock: Callable[[], datetime] | None = None, **caps: Any) -> JobDeps:
    return JobDeps(store=repo, llm=llm, notifier=notifier or InMemoryNotifier(), clock=clock or FixedClock(),
                   caps=JobCaps(conflict_wait_max_s=0.01, **caps))


def run(deps: JobDeps, job: str, project_id: str, run_date: date | str) -> JobReport:
    day = date.fromisoformat(run_date) if isinstance(run_date, str) else run_date
    return run_job(deps, JobRequest(job=job, project_id=project_id, date=day))  # type: ignore[arg-type]


def memory_items(project_id: str | None = None) -> list[dict[str, Any]]:
    """Every raw MemoryTable item (test-only Scan), sorted by key, for before/after equality."""
    client = boto3.client("dynamodb")
    table = ProjectItem.Meta.table_name
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items.extend(page["Items"])
    if project_id is not None:
        items = [i for i in items if i["pk"]["S"] == project_id]
    return sorted(items, key=lambda i: (i["pk"]["S"], i["sk"]["S"]))


def snapshot(project_id: str | None = None) -> str:
    """The raw items as canonical JSON (byte comparison of the whole table)."""
    return json.dumps(memory_items(project_id), sort_keys=True, ensure_ascii=False)


def hot_lines(repo: JobsRepository, project_id: str = "p1") -> list[HotMemoryLine]:
    return repo.load_hot_memory(project_id).lines


def texts(lines: list[HotMemoryLine]) -> list[str]:
    return [ln.text for ln in lines]
