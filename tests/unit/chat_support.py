"""Builders for chat-turn tests: a seeded project and ChatDeps with the in-memory fakes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from agent_memory.adapters.llm.offline import OfflineLLM
from agent_memory.chat.intents import RuleIntentClassifier
from agent_memory.chat.turn import ChatConfig, ChatDeps, ChatResult, handle_message
from agent_memory.conversation.cache import SessionCache
from agent_memory.domain.errors import LLMUnavailable
from agent_memory.domain.llm import LLMRequest
from agent_memory.domain.models import HotMemory, HotMemoryLine, Project, WeeklyReport
from tests.fakes import FakeClock, InMemoryClinicalData, Reply, ScriptedLLM, project_partition
from tests.support.auth import add_member

T0 = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)
#: The user the helpers send as (a member of every project :func:`seed_project` makes).
USER = "u1"
#: Clinical data of p1: P001 enrolled on 2026-02-05; P005 with open queries and missing V2 fields.
CLINICAL = {"p1": {"target_enrolment": 60, "subjects": {
    "P001": {"status": "enrolled", "enrolment_date": "2026-02-05", "visits": []},
    "P005": {"status": "enrolled", "enrolment_date": "2026-03-05", "open_queries": 2,
             "visits": [{"visit": "V2", "missing_fields": ["服药日记卡", "ECOG"]}]},
}}}


def ticking_clock(start: datetime = T0) -> FakeClock:
    """A clock that moves one second forward at every reading."""
    return FakeClock(start, tick=timedelta(seconds=1))


def chat_llm(*replies: Reply) -> ScriptedLLM:
    """The offline provider behind a recorder: ``replies`` (e.g. an error) answer first."""
    return ScriptedLLM(*replies, then=OfflineLLM())


def overloaded() -> LLMUnavailable:
    """What an overloaded provider raises."""
    return LLMUnavailable("overloaded (test)", retry_after_s=2.0)


def hot_line(line_id: str, section: str, text: str, source: str = "admin", tag: str | None = None) -> HotMemoryLine:
    return HotMemoryLine(
        line_id=line_id, section=section, text=text, source=source,
        role_tag=tag, created_at=T0 - timedelta(days=30), created_by="admin-1",
    )


def baseline_hot_lines(language: str) -> list[HotMemoryLine]:
    """The baseline System Rules in ``language`` ("zh" / "en") and one PI preference line."""
    from agent_memory.domain.baseline_rules import baseline_rule_lines

    return [*baseline_rule_lines("zh" if language == "zh" else "en", now=T0),
            hot_line("l2", "User Preferences", "汇报时只看数据，不要废话。", tag="PI")]


def baseline_rule_text(rule_id: str, language: str) -> str:
    """The wording of baseline rule ``rule_id`` in ``language`` ("zh" / "en")."""
    from agent_memory.domain.baseline_rules import BASELINE_RULES

    rule = next(r for r in BASELINE_RULES if r.rule_id == rule_id)
    return rule.zh if language == "zh" else rule.en


def seed_project(repo: Any, project_id: str = "p1", *, weeks: int = 3, hot_lines: list[HotMemoryLine] | None = None,
                 report_text: str | None = None) -> None:
    """A project with a hot memory, ``weeks`` weekly reports (2026-W01 ...) and :data:`USER` as its
    admin (a PI), through the seeding writes the in-memory store and the DynamoDB repository both have."""
    projects = project_partition(repo)
    projects.put_project(Project(project_id=project_id, name=project_id, created_at=T0 - timedelta(days=100)))
    add_member(repo, project_id, USER, "admin", "PI", "张主任")
    lines = hot_lines if hot_lines is not None else [
        hot_line("l1", "System Rules", "严禁在未授权情况下删除数据"),
        hot_line("l2", "User Preferences", "汇报时只看数据，不要废话。", tag="PI"),
    ]
    projects.save_hot_memory(HotMemory(project_id=project_id, lines=lines), expected_version=0, actor="seed",
                             reason="seed", now=T0 - timedelta(days=30), tokens=0)
    for w in range(1, weeks + 1):
        projects.put_weekly_report(WeeklyReport(
            project_id=project_id, iso_week=f"2026-W{w:02d}",
            summary=report_text or f"[进度]: 第{w}周入组 {w} 人。\n[决策]: 第{w}周决定事项 {w}。",
            created_at=T0 - timedelta(days=70 - 7 * w),
        ))


def make_deps(repo: Any, llm: Any = None, **config: Any) -> ChatDeps:
    return ChatDeps(
        store=repo,
        llm=llm or chat_llm(),
        classifier=RuleIntentClassifier(),
        clinical=InMemoryClinicalData({"p1": {"target_enrolment": 10, "subjects": {
            "P001": {"status": "enrolled", "enrolment_date": "2026-02-05", "visits": []}}}}),
        cache=SessionCache(max_messages=50),
        config=ChatConfig(**config),
        now=ticking_clock(),
    )


def deps_with(repo: Any, llm: Any = None, **config: Any) -> ChatDeps:
    """:func:`make_deps` reading the clinical data of :data:`CLINICAL`."""
    deps = make_deps(repo, llm or chat_llm(), **config)
    deps.clinical = InMemoryClinicalData(CLINICAL)
    return deps


def send(deps: ChatDeps, content: str, *, project_id: str = "p1", session_id: str = "s1",
         patient_id: str | None = None, idempotency_hash: str | None = None) -> ChatResult:
    """One chat turn of user ``u1``."""
    return handle_message(deps, project_id=project_id, session_id=session_id, user_id=USER, content=content,
                          patient_id=patient_id, deadline=None, idempotency_hash=idempotency_hash)


def llm_requests(deps: ChatDeps) -> list[LLMRequest]:
    """The requests the scripted LLM of ``deps`` (:func:`chat_llm`) has received so far."""
    assert isinstance(deps.llm, ScriptedLLM)
    return deps.llm.requests


def system_blocks(request: LLMRequest) -> dict[str, str]:
    return {b.name: b.text for b in request.system}


def session_block(request: LLMRequest) -> str:
    """The session block a chat request carries: the text of its last (user) message that opens
    ``<session``, sent after the last cache breakpoint (docs/architecture.md, "Prompt caching")."""
    last = request.messages[-1]
    assert last["role"] == "user", last
    texts = [b["text"] for b in last["content"] if b.get("type") == "text" and b["text"].startswith("<session")]
    assert len(texts) == 1, last["content"]
    return str(texts[0])


def session_memory(request: LLMRequest) -> str:
    """The session memory a chat request carries (asker, diagnosis records, summary): the first text
    of its first message, ahead of the recent turns, or of its only message ("" when there is none)."""
    first = request.messages[0]
    assert first["role"] == "user", first
    text = str(first["content"][0].get("text", ""))
    return text if text.startswith("<conversation_memory>") else ""


def question_text(request: LLMRequest) -> str:
    """The user's message as sent: the last text block of the first user message after the replay."""
    return str(request.messages[-1]["content"][-1]["text"])


def breakpoints(request: LLMRequest) -> list[str]:
    """Where cache breakpoints sit: ``system:<name>`` and ``messages[i][j]``, in order."""
    found = [f"system:{b.name}" for b in request.system if b.cache]
    for i, m in enumerate(request.messages):
        content = m["content"] if isinstance(m["content"], list) else []
        found += [f"messages[{i}][{j}]" for j, b in enumerate(content) if "cache_control" in b]
    return found


def strip_cache_control(value: Any) -> Any:
    """``value`` (messages, blocks) without ``cache_control`` keys: a breakpoint marks a prefix, it is
    not part of it."""
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    return value


def prefix_json(request: LLMRequest, n_messages: int) -> str:
    """The bytes of a request's prefix through its first ``n_messages`` messages: tools, system and
    those messages (JSON, ``cache_control`` left out: a breakpoint marks a prefix, it is not part of it)."""
    return json.dumps({
        "tools": [[t.name, t.description, t.input_schema] for t in request.tools],
        "system": [b.text for b in request.system],
        "messages": strip_cache_control(request.messages[:n_messages]),
    }, ensure_ascii=False, sort_keys=True)


def message_breakpoint(request: LLMRequest) -> int | None:
    """How many messages a request's message breakpoint covers (it ends the last block of the last of
    them); None without one."""
    marks = [(i, j) for i, m in enumerate(request.messages) if isinstance(m["content"], list)
             for j, b in enumerate(m["content"]) if "cache_control" in b]
    if not marks:
        return None
    i, j = marks[-1]
    assert j == len(request.messages[i]["content"]) - 1, "a message breakpoint ends its message"
    return i + 1


def seed_60_weeks_of_30kb(repo: Any) -> list[str]:
    """60 reports of ~30 KB (2025-W01 .. 2026-W08); returns the ISO weeks newest first."""
    seed_project(repo, "p1", weeks=0)
    weeks = [f"2025-W{w:02d}" for w in range(1, 53)] + [f"2026-W{w:02d}" for w in range(1, 9)]
    for n, week in enumerate(weeks):
        lines = [f"[进度] {week} 第{k}项：本周入组 {n % 4} 例，随访按计划进行，数据核查完成。" + "记录" * 100
                 for k in range(50)]
        summary = "\n".join(lines)[:10_000]
        project_partition(repo).put_weekly_report(WeeklyReport(
            project_id="p1", iso_week=week, summary=summary, created_at=T0 - timedelta(days=7 * (60 - n))))
    return list(reversed(weeks))


def seed_two_projects(repo: Any) -> None:
    """P1 (a dose rule, a chest-pain report) and P2 (a reporting preference), both seeded."""
    seed_project(repo, "P1", hot_lines=[hot_line("h1", "System Rules", "以后别提供剂量建议")],
                 report_text="[进度] P1专属周报：胸痛门诊入组 3 例。")
    seed_project(repo, "P2", hot_lines=[hot_line("h2", "User Preferences", "汇报时只看数据", tag="PI")],
                 report_text="[进度] P2 周报：本周入组 1 例。")
