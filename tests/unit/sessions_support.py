"""Builders for session-memory tests: a clinic project, ChatDeps and SessionsDeps with session
memory on (over the in-memory store, or the DynamoDB repository in integration tests), and a
scripted symptom extractor."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agent_memory.chat.turn import ChatDeps, ChatResult, handle_message
from agent_memory.consultation.session_memory import SessionMemory
from agent_memory.consultation.sessions import SessionsConfig, SessionsDeps
from agent_memory.consultation.summary import ExtractiveSummariser, Summariser
from agent_memory.consultation.symptoms import RuleSymptomExtractor, SymptomFact
from agent_memory.domain.models import Project
from agent_memory.domain.turns import SessionState
from tests.fakes import FakeClock, project_partition
from tests.support.auth import add_member
from tests.unit.chat_support import T0, make_deps, ticking_clock

CLINIC = "clinic-1"


def seed_clinic(repo: Any, project_id: str = CLINIC, time_zone: str = "Asia/Shanghai") -> None:
    project_partition(repo).put_project(Project(project_id=project_id, name=project_id, time_zone=time_zone,
                                                kind="clinic", created_at=T0 - timedelta(days=10)))
    add_member(repo, project_id, "u1", "admin", "Sub-I")


def memory(repo: Any, extractor: Any = None, summariser: Summariser | None = None,
           recent_turns: int = 10) -> SessionMemory:
    return SessionMemory(
        extractor=extractor or RuleSymptomExtractor(), summariser=summariser or ExtractiveSummariser(),
        patients=repo, reader=repo, recent_turns=recent_turns,
    )


def chat_deps(repo: Any, *, clock: FakeClock | None = None, llm: Any = None, extractor: Any = None,
              summariser: Summariser | None = None, **config: Any) -> ChatDeps:
    deps = make_deps(repo, llm=llm, **config)
    if clock is not None:
        deps.now = clock
    deps.memory = memory(repo, extractor, summariser, recent_turns=deps.config.budget.recent_turns)
    return deps


def sessions_deps(repo: Any, *, clock: FakeClock | None = None, extractor: Any = None,
                  **config: Any) -> SessionsDeps:
    return SessionsDeps(store=repo, memory=memory(repo, extractor), config=SessionsConfig(**config),
                        now=clock or ticking_clock())


def say(deps: ChatDeps, content: str, *, session_id: str = "s1", patient_id: str | None = None,
        project_id: str = CLINIC) -> ChatResult:
    return handle_message(deps, project_id=project_id, session_id=session_id, user_id="u1", content=content,
                          patient_id=patient_id, deadline=None)


def symptoms_of(repo: Any, session_id: str, project_id: str = CLINIC) -> dict[str, dict[str, Any]]:
    session = repo.get_session(project_id, session_id)
    assert session is not None
    return {s["name"]: s for s in session.facts.get("symptoms", [])}


@dataclass
class ScriptedExtractor:
    """Returns ``per_message`` distinct symptoms for every message (names never repeat)."""

    per_message: int = 1
    calls: list[tuple[str, str | None]] = field(default_factory=list)

    def extract(self, text: str, *, message_id: str, at_local: datetime, question: str | None) -> list[SymptomFact]:
        self.calls.append((text, question))
        n = len(self.calls)
        return [
            SymptomFact(name=f"症状{n:04d}-{i:02d}", status="present", evidence=[message_id])
            for i in range(self.per_message)
        ]


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def write_sessions(repo: Any, patient_id: str, n: int, project_id: str = CLINIC) -> list[str]:
    """``n`` consultation sessions of a patient, one a minute from 2026-01-01 00:00Z; their ids, oldest first."""
    ids = []
    for i in range(n):
        at = utc(2026, 1, 1, i // 60, i % 60)
        sid = f"v-{patient_id}-{i:03d}"
        repo.create_session(SessionState(project_id=project_id, session_id=sid, patient_id=patient_id,
                                         type="consultation", created_at=at, updated_at=at))
        ids.append(sid)
    return ids


def nested(depth: int) -> dict[str, Any]:
    """A report whose objects nest ``depth`` levels (the report itself is level 1)."""
    report: dict[str, Any] = {"证型": "风寒表实证"}
    for _ in range(depth - 1):
        report = {"下一层": report}
    return report
