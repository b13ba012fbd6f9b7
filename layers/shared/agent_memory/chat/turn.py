"""The chat turn: read memory, route by intent, call the LLM, record the turn (seed 001).

One turn, in round trips (DESIGN.md "DynamoDB access patterns"):
1. ONE BatchGetItem: project + hot memory + session item (window, facts, summary);
2. (history intents only) ONE Query of the newest weekly reports;
3. ONE TransactWriteItems: user + assistant messages, both flow-log items, the session
   item (version condition), the project's activity marker for the local day.
If the LLM fails, the user message is still recorded exactly once (status ``failed``) and
the LLM error is re-raised for the handler to answer 503/504 with Retry-After.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo

from pydantic import BaseModel
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

from agent_memory.adapters.clinical.demo import ClinicalDataPort
from agent_memory.chat.agent import AgentResult, ClinicalTools, run_agent
from agent_memory.chat.intents import CallPlan, IntentClassifier, plan_calls
from agent_memory.chat.prompt import AssembledPrompt, PromptBudget, assemble_prompt
from agent_memory.conversation.cache import SessionCache
from agent_memory.domain.errors import InvalidInput, LLMError, PayloadTooLarge, VersionConflict
from agent_memory.domain.ids import new_message_id
from agent_memory.domain.llm import LLMClient, LLMRequest
from agent_memory.domain.models import (
    HotMemory,
    Intent,
    MessageRecord,
    SessionState,
    ToolCall,
    TurnContext,
    WeeklyReport,
    YearlySummary,
)
from agent_memory.domain.text import utf8_len

if TYPE_CHECKING:
    from agent_memory.consultation.session_memory import SessionMemory, TurnMemory

#: Byte budget of the window inside the session item (JSON, UTF-8). Together with facts
#: and summary budgets it keeps the session item far under DynamoDB's 400 KB (case B14).
WINDOW_BUDGET_BYTES = 220_000


class ChatStore(Protocol):
    """What the chat turn needs from storage (implemented by ``DynamoRepository``)."""

    def load_turn_context(self, project_id: str, session_id: str, *, now: datetime) -> TurnContext: ...

    def load_history(self, project_id: str, *, limit_weeks: int, page_size: int | None = None) -> list[WeeklyReport]: ...

    def load_yearly_summaries(self, project_id: str) -> list[YearlySummary]: ...

    def record_turn(self, write: Any) -> None: ...


@dataclass(frozen=True)
class ChatConfig:
    """Caps and model settings of a turn (from ``Settings``)."""

    chat_model_id: str = "claude-sonnet-4-5"
    max_output_tokens: int = 1024
    max_message_bytes: int = 32_768
    react_max_steps: int = 4
    flow_log_retention_days: int = 0
    budget: PromptBudget = field(default_factory=PromptBudget)


@dataclass
class ChatDeps:
    """Collaborators of a turn; tests pass fakes."""

    store: ChatStore
    llm: LLMClient
    classifier: IntentClassifier
    clinical: ClinicalDataPort
    cache: SessionCache
    config: ChatConfig = field(default_factory=ChatConfig)
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    monotonic: Callable[[], float] = time.monotonic
    #: Session memory (issue 3): symptom facts, earlier diagnoses, rolling summary. None = off.
    memory: SessionMemory | None = None


class CallReport(BaseModel):
    """One LLM context of the turn as reported to the client."""

    intents: list[str]
    history_weeks: int
    recent_turns: int
    prompt_tokens: int
    layers: dict[str, int]


class ChatResult(BaseModel):
    """The 200 response body of ``POST .../messages``."""

    message_id: str
    user_message_id: str
    reply: str
    truncated: bool
    intents: list[str]
    provider: str
    calls: list[CallReport]


@dataclass
class _CallOutcome:
    plan: CallPlan
    prompt: AssembledPrompt
    result: AgentResult


def validate_message(content: str, max_bytes: int) -> None:
    """Reject empty or over-size messages before anything is read or written.

    Raises:
        InvalidInput: empty / whitespace-only content (422).
        PayloadTooLarge: more than ``max_bytes`` UTF-8 bytes (413; case B14c).
    """
    if not content.strip():
        raise InvalidInput("content must not be empty")
    size = utf8_len(content)
    if size > max_bytes:
        raise PayloadTooLarge(
            f"content is {size} UTF-8 bytes; the limit is {max_bytes}", limit_bytes=max_bytes, actual_bytes=size
        )


def handle_message(
    deps: ChatDeps,
    *,
    project_id: str,
    session_id: str,
    user_id: str,
    content: str,
    patient_id: str | None,
    deadline: float | None,
    idempotency_hash: str | None = None,
) -> ChatResult:
    """Run one chat turn (see module docstring).

    Args:
        project_id / session_id: the tenant and the conversation (created on first use).
        user_id: from the JWT claims.
        content: the user's message (<= ``config.max_message_bytes`` UTF-8 bytes).
        patient_id: binds a new session to a patient; must match an existing binding.
        deadline: ``time.monotonic()`` instant by which the LLM must have answered.
        idempotency_hash: hash of the client's Idempotency-Key; a retry of a failed turn
            with the same key reuses the recorded user message instead of writing it again.

    Returns:
        ChatResult (message_id is the assistant message; its context is inspectable).

    Raises:
        InvalidInput, PayloadTooLarge, ProjectNotFound: nothing is written.
        LLMUnavailable / LLMDeadlineExceeded / LLMBadRequest: the user message was recorded
            as failed (exactly once).
    """
    cfg = deps.config
    validate_message(content, cfg.max_message_bytes)
    now = deps.now()
    ctx = deps.store.load_turn_context(project_id, session_id, now=now)
    session = ctx.session
    if patient_id and session.patient_id and session.patient_id != patient_id:
        raise InvalidInput("this session belongs to another patient")

    reused = _failed_retry(session.window, idempotency_hash)
    user_msg = reused or MessageRecord(
        message_id=new_message_id(now), role="user", content=content, at=now, user_id=user_id,
        idempotency_hash=idempotency_hash,
    )

    # Session memory (issue 3): this message's facts BEFORE any LLM call, so the prompt's
    # session block already holds them; re-applied at write time to the session as re-read.
    turn_memory: TurnMemory | None = None
    memory_session = session
    if deps.memory is not None:
        memory_session, turn_memory = deps.memory.before_turn(
            session, user_msg, patient_id=patient_id, time_zone=ctx.project.time_zone, deadline=deadline
        )

    classification = deps.classifier.classify(content, deadline=deadline)
    plans = plan_calls(classification.intents)
    reports: list[WeeklyReport] | None = None
    yearly: list[YearlySummary] = []
    if any(p.load_history for p in plans):
        reports = deps.store.load_history(project_id, limit_weeks=cfg.budget.history_weeks)
        if len(reports) >= cfg.budget.history_weeks:
            # More history than the week cap may exist: older periods come through the
            # yearly summaries (seed 001 section 5.1). One more Query, only then.
            yearly = deps.store.load_yearly_summaries(project_id)

    # The prompt sees the window WITHOUT a reused failed message (it is the current message).
    prompt_session = memory_session.model_copy(
        update={"window": [m for m in session.window if m.message_id != user_msg.message_id]}
    )
    outcomes: list[_CallOutcome] = []
    try:
        for plan in plans:
            outcomes.append(_run_call(deps, ctx.hot_memory, prompt_session, plan, reports, content, project_id, deadline, yearly))
    except LLMError:
        if reused is None:
            failed = user_msg.model_copy(update={"status": "failed"})
            _write_with_retry(deps, ctx.project.time_zone, project_id, session_id, session, patient_id, user_id,
                              new=[failed], flow=[failed], mark_ok=[], contexts={}, reply_to={},
                              memory=turn_memory)
        raise

    reply_at = deps.now()
    assistant = MessageRecord(
        message_id=new_message_id(reply_at),
        role="assistant",
        content=_combine(outcomes),
        at=reply_at,
        tool_calls=[tc for o in outcomes for tc in o.result.tool_calls],
        truncated=any(o.result.truncated for o in outcomes),
    )
    manifest = _manifest(outcomes, classification.intents, user_msg.message_id)
    if reused is None:
        new, flow, mark_ok = [user_msg, assistant], [user_msg, assistant], []
    else:
        new, flow, mark_ok = [assistant], [assistant], [reused.message_id]
    _write_with_retry(
        deps, ctx.project.time_zone, project_id, session_id, session, patient_id, user_id,
        new=new, flow=flow, mark_ok=mark_ok,
        contexts={assistant.message_id: manifest}, reply_to={assistant.message_id: user_msg.message_id},
        memory=turn_memory,
    )
    return ChatResult(
        message_id=assistant.message_id,
        user_message_id=user_msg.message_id,
        reply=assistant.content,
        truncated=assistant.truncated,
        intents=[i.value for i in classification.intents],
        provider=outcomes[0].result.provider if outcomes else deps.llm.provider,
        calls=[
            CallReport(
                intents=[i.value for i in o.plan.intents],
                history_weeks=len(o.prompt.history_weeks),
                recent_turns=o.prompt.recent_turns,
                prompt_tokens=o.prompt.prompt_tokens,
                layers=o.prompt.layers,
            )
            for o in outcomes
        ],
    )


def _failed_retry(window: Sequence[MessageRecord], idempotency_hash: str | None) -> MessageRecord | None:
    if not idempotency_hash:
        return None
    for m in reversed(window):
        if m.role == "user" and m.idempotency_hash == idempotency_hash and m.status == "failed":
            return m
    return None


def _run_call(
    deps: ChatDeps,
    hot: HotMemory,
    session: SessionState,
    plan: CallPlan,
    reports: list[WeeklyReport] | None,
    content: str,
    project_id: str,
    deadline: float | None,
    yearly: list[YearlySummary] | None = None,
) -> _CallOutcome:
    cfg = deps.config
    prompt = assemble_prompt(
        hot_memory=hot,
        reports=reports if plan.load_history else None,  # a QC call never sees history
        yearly=(yearly or []) if plan.load_history else [],
        session=session,
        user_text=content,
        intents=plan.intents,
        budget=cfg.budget,
    )
    request = LLMRequest(
        model=cfg.chat_model_id,
        system=prompt.system,
        messages=prompt.messages,
        max_tokens=cfg.max_output_tokens,
        deadline=deadline,
        purpose="chat",
        metadata={"intents": [i.value for i in plan.intents]},
    )
    result = run_agent(deps.llm, request, ClinicalTools(deps.clinical, project_id), max_steps=cfg.react_max_steps)
    return _CallOutcome(plan=plan, prompt=prompt, result=result)


def _combine(outcomes: Sequence[_CallOutcome]) -> str:
    if len(outcomes) == 1:
        return outcomes[0].result.text
    parts = []
    for o in outcomes:
        title = "【质控 QC】" if Intent.QC_TASK in o.plan.intents else "【历史 History】"
        parts.append(f"{title}\n{o.result.text}")
    return "\n\n".join(parts)


def _manifest(outcomes: Sequence[_CallOutcome], intents: Sequence[Intent], user_message_id: str) -> dict[str, Any]:
    """What was sent, by reference, so the context endpoint can rebuild it (kept small)."""
    calls = []
    for o in outcomes:
        blocks = []
        for b in o.prompt.blocks:
            entry: dict[str, Any] = {"name": b.name, "tokens": b.tokens}
            if b.name in ("system", "session"):
                entry["text"] = b.text
            elif b.name == "user_message":
                entry["ref"] = {"message_id": user_message_id}
            else:
                entry["ref"] = b.ref
            blocks.append(entry)
        calls.append({
            "intents": [i.value for i in o.plan.intents],
            "load_history": o.plan.load_history,
            "blocks": blocks,
            "tool_calls": [tc.id for tc in o.result.tool_calls],
        })
    return {"intents": [i.value for i in intents], "calls": calls}


def trim_window(window: list[MessageRecord], *, keep_user_turns: int, budget_bytes: int) -> list[MessageRecord]:
    """Newest messages holding at most ``keep_user_turns`` user messages and at most
    ``budget_bytes`` of JSON (UTF-8). Older messages stay in DynamoDB (``MSG#`` items).

    When messages were cut, the kept part starts on a user message: assistant messages
    whose user message was cut are orphans no prompt can replay (case B13), so they are
    not kept either."""
    users = 0
    start = len(window)
    size = 0
    for i in range(len(window) - 1, -1, -1):
        m = window[i]
        size += utf8_len(m.model_dump_json())
        if size > budget_bytes:
            break
        if m.role == "user":
            users += 1
            if users > keep_user_turns:
                break
        start = i
    if start > 0:
        while start < len(window) and window[start].role != "user":
            start += 1
    return window[start:]


def _write_with_retry(
    deps: ChatDeps,
    time_zone: str,
    project_id: str,
    session_id: str,
    session: SessionState,
    patient_id: str | None,
    user_id: str,
    *,
    new: list[MessageRecord],
    flow: list[MessageRecord],
    mark_ok: list[str],
    contexts: dict[str, dict[str, Any]],
    reply_to: dict[str, str],
    memory: TurnMemory | None = None,
) -> None:
    """Apply the turn; if another turn changed the session meanwhile (optimistic lock),
    re-read the session and re-apply the window update (the LLM is not called again).
    ``memory``: the turn's facts, folded into the re-read session's facts (issue 3)."""
    from agent_memory.adapters.dynamo.repository import TurnWrite  # data access is bound by the handler

    current = session
    for attempt in Retrying(stop=stop_after_attempt(4), retry=retry_if_exception_type(VersionConflict), reraise=True):
        with attempt:
            if attempt.retry_state.attempt_number > 1:
                current = deps.store.load_turn_context(project_id, session_id, now=deps.now()).session
            now = deps.now()
            project_tz = _zone(time_zone)
            window = list(current.window)
            # The reply to a retried failed turn goes right after the user message it answers,
            # even if other turns came in between; appended at the end it would join the
            # latest turn and the retried question would drop out of the recent turns.
            answered = [i for i, m in enumerate(window) if m.message_id in mark_ok]
            at = answered[-1] + 1 if answered else len(window)
            window[at:at] = new
            if mark_ok:
                window = [m.model_copy(update={"status": "ok"}) if m.message_id in mark_ok else m for m in window]
            full_window = window
            window = trim_window(
                window, keep_user_turns=deps.config.budget.recent_turns + 2, budget_bytes=WINDOW_BUDGET_BYTES
            )
            updated = current.model_copy(update={
                "window": window,
                "updated_at": now,
                "message_count": current.message_count + len(new),
                "patient_id": current.patient_id or patient_id,
                "created_by": current.created_by or user_id,
            })
            if deps.memory is not None and memory is not None:  # facts + rolling summary (issue 3)
                updated = deps.memory.apply(current, updated, memory, full_window=full_window, cache=deps.cache)
            deps.store.record_turn(TurnWrite(
                session=updated,
                expected_version=current.version,
                new_messages=new,
                flow_log=flow,
                mark_ok=mark_ok,
                contexts=contexts,
                reply_to=reply_to,
                # The local day of EVERY message written: a user message at 23:59:59 whose
                # reply lands after midnight marks both days (the daily jobs look days up).
                activity_local_dates=sorted(
                    {m.at.astimezone(project_tz).date().isoformat() for m in flow}
                    or {now.astimezone(project_tz).date().isoformat()}
                ),
                now=now,
                flow_log_retention_days=deps.config.flow_log_retention_days,
            ))
            deps.cache.append(project_id, session_id, current.version, current.version + 1, new, window)


def _zone(name: str) -> ZoneInfo:
    """The project's IANA zone (ZoneInfo caches instances itself)."""
    return ZoneInfo(name)


def tool_call_from_json(data: dict[str, Any]) -> ToolCall:
    """Rebuild a ToolCall from its stored JSON form."""
    return ToolCall.model_validate(data)


__all__ = ["ChatConfig", "ChatDeps", "ChatResult", "ChatStore", "handle_message", "trim_window", "validate_message"]
