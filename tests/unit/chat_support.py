"""Builders for chat-turn tests: a seeded project in moto and ChatDeps with fakes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agent_memory.adapters.clinical.demo import DemoClinicalData
from agent_memory.adapters.llm.offline import OfflineLLM
from agent_memory.chat.intents import RuleIntentClassifier
from agent_memory.chat.turn import ChatConfig, ChatDeps
from agent_memory.conversation.cache import SessionCache
from agent_memory.domain.errors import LLMUnavailable
from agent_memory.domain.llm import LLMRequest, LLMResponse
from agent_memory.domain.models import HotMemory, HotMemoryLine, Project, WeeklyReport

T0 = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)


class Clock:
    """A settable UTC clock that advances one second per reading."""

    def __init__(self, start: datetime = T0) -> None:
        self.at = start

    def __call__(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


@dataclass
class RecordingLLM:
    """Wraps a provider and records every request (for assertions on what was sent)."""

    inner: Any = field(default_factory=OfflineLLM)
    requests: list[LLMRequest] = field(default_factory=list)

    @property
    def provider(self) -> str:
        return str(self.inner.provider)

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        return self.inner.complete(request)


@dataclass
class FailingLLM:
    """Raises ``LLMUnavailable`` for the next ``failures`` calls, then delegates to ``inner``.

    Set ``failures`` between turns to make exactly one later turn fail."""

    inner: Any = field(default_factory=OfflineLLM)
    failures: int = 0
    raised: int = 0

    @property
    def provider(self) -> str:
        return str(self.inner.provider)

    def complete(self, request: LLMRequest) -> LLMResponse:
        if self.failures > 0:
            self.failures -= 1
            self.raised += 1
            raise LLMUnavailable("overloaded (test)", retry_after_s=2.0)
        return self.inner.complete(request)


def hot_line(line_id: str, section: str, text: str, source: str = "admin", tag: str | None = None) -> HotMemoryLine:
    return HotMemoryLine(
        line_id=line_id, section=section, text=text, source=source,  # type: ignore[arg-type]
        role_tag=tag, created_at=T0 - timedelta(days=30), created_by="admin-1",
    )


def seed_project(repo: Any, project_id: str = "p1", *, weeks: int = 3, hot_lines: list[HotMemoryLine] | None = None,
                 report_text: str | None = None) -> None:
    """A project with a hot memory and ``weeks`` weekly reports (2026-W01 ...)."""
    repo.put_project(Project(project_id=project_id, name=project_id, created_at=T0 - timedelta(days=100)))
    lines = hot_lines if hot_lines is not None else [
        hot_line("l1", "System Rules", "严禁在未授权情况下删除数据"),
        hot_line("l2", "User Preferences", "汇报时只看数据，不要废话。", tag="PI"),
    ]
    repo.save_hot_memory(HotMemory(project_id=project_id, lines=lines), expected_version=0, actor="seed",
                         reason="seed", now=T0 - timedelta(days=30), tokens=0)
    for w in range(1, weeks + 1):
        repo.put_weekly_report(WeeklyReport(
            project_id=project_id, iso_week=f"2026-W{w:02d}",
            summary=report_text or f"[进度]: 第{w}周入组 {w} 人。\n[决策]: 第{w}周决定事项 {w}。",
            created_at=T0 - timedelta(days=70 - 7 * w),
        ))


def make_deps(repo: Any, llm: Any = None, **config: Any) -> ChatDeps:
    return ChatDeps(
        store=repo,
        llm=llm or RecordingLLM(),
        classifier=RuleIntentClassifier(),
        clinical=DemoClinicalData({"p1": {"target_enrolment": 10, "subjects": {
            "P001": {"status": "enrolled", "enrolment_date": "2026-02-05", "visits": []}}}}),
        cache=SessionCache(max_messages=50),
        config=ChatConfig(**config),
        now=Clock(),
    )
