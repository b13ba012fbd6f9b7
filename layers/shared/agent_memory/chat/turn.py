"""The chat turn: read memory, route by intent, call the LLM, record the turn.

One turn, in round trips (docs/architecture.md, "Request path"):
1. ONE BatchGetItem (``agent_memory.chat.read``): project + hot memory + the asker's membership +
   session item (window, facts, summary), and, when the message names a patient and this
   container holds no messages of the session (a new session), the patient's earlier-diagnosis
   references; in the chat function the route guard makes it, decides the membership on it and
   hands it to the turn;
2. (history intents only) ONE Query of the newest weekly reports;
3. ONE TransactWriteItems: user + assistant messages, both flow-log items, the session
   item (version condition), the project's activity marker for the local day.
If the LLM fails (any ``LLMError``: unavailable, deadline, a rejected request, bad credentials,
an unknown model, a malformed or empty reply), the user message is still recorded exactly once
(status ``failed``), nothing else is written, and the error is re-raised for the one error map
(503/504 with Retry-After, or 502).

Every model call's token usage is reported: summed per LLM context in the response
(``calls[].usage``, null offline), call by call in the turn's context manifest (with each call's
stop reason), and as the ``chat`` task's metrics (docs/architecture.md, "Prompt caching").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field

from agent_memory.chat.agent import AgentResult, ClinicalTools, ModelCall, run_agent
from agent_memory.chat.clinical_tools import ClinicalToolSet
from agent_memory.chat.history_tool import HistoryTools
from agent_memory.chat.intents import CallPlan, IntentClassifier, plan_calls
from agent_memory.chat.prompt import AssembledPrompt, PromptBudget, assemble_prompt
from agent_memory.chat.read import TurnRead, context_for_turn
from agent_memory.chat.toolsets import ToolSet, ToolSets
from agent_memory.config import DEFAULT_CHAT_MODEL_ID, min_cacheable_tokens
from agent_memory.conversation.append import Append, append_messages
from agent_memory.conversation.cache import SessionCache
from agent_memory.domain.errors import InvalidInput, LLMError, PayloadTooLarge
from agent_memory.domain.ids import new_message_id
from agent_memory.domain.llm import Effort, LLMRequest, Usage
from agent_memory.domain.models import HotMemory, Intent, Member, Project, WeeklyReport, YearlySummary
from agent_memory.domain.text import content_problem, utf8_len
from agent_memory.domain.turns import MessageRecord, SessionState
from agent_memory.ports import ChatStore, ClinicalDataPort, ClinicalSourcesPort, HistoryReader, LLMClient
from agent_memory.reminders.service import ReminderDeps
from agent_memory.reminders.tools import ReminderTools
from agent_memory.structured import record_usage

if TYPE_CHECKING:
    from agent_memory.consultation.session_memory import SessionMemory, TurnMemory



@dataclass(frozen=True)
class ChatConfig:
    """Caps and model settings of a turn (from ``Settings``).

    ``min_cacheable_tokens``: the chat model's minimum cacheable prompt length; None = the
    published figure for ``chat_model_id`` (``agent_memory.config.min_cacheable_tokens``).
    ``effort``: ``output_config.effort`` of the chat calls; None = the model's default.
    """

    chat_model_id: str = DEFAULT_CHAT_MODEL_ID
    max_output_tokens: int = 1024
    max_message_bytes: int = 32_768
    react_max_steps: int = 4
    flow_log_retention_days: int = 0
    budget: PromptBudget = field(default_factory=PromptBudget)
    min_cacheable_tokens: int | None = None
    effort: Effort | None = None

    def cacheable_from(self) -> int:
        """Tokens a prefix needs before a cache breakpoint is placed at its end."""
        if self.min_cacheable_tokens is not None:
            return self.min_cacheable_tokens
        return min_cacheable_tokens(self.chat_model_id)


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
    #: Session memory : symptom facts, earlier diagnoses, rolling summary. None = off.
    memory: SessionMemory | None = None
    #: Weekly reports by week range for the ``read_history`` tool (a call without history that is
    #: not QC gets the tool). None = no such tool.
    history: HistoryReader | None = None
    #: Opens a project's own clinical source (``Project.clinical_data``, REDCap); projects without
    #: one use ``clinical`` (the demo file). None = ``clinical`` for every project.
    clinical_sources: ClinicalSourcesPort | None = None
    #: More tool sets of the loop: each factory gets (project id, the turn's deadline).
    tool_sets: list[Callable[[str, float | None], ToolSet]] = field(default_factory=list)
    #: The reminder tools' collaborators (schedules, reminder items). None = no reminder tools.
    reminders: ReminderDeps | None = None


class TokenUsage(BaseModel):
    """Tokens of the model calls of one LLM context, as the provider reported them (summed).

    ``input_tokens`` excludes the cached parts: the prompts were ``input_tokens +
    cache_creation_input_tokens + cache_read_input_tokens`` tokens.
    """

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int

    @classmethod
    def of(cls, usage: Usage | None) -> TokenUsage | None:
        return None if usage is None else cls(**usage.as_dict())


class CallReport(BaseModel):
    """One LLM context of the turn as reported to the client. ``usage`` is null from the offline
    provider; ``model_calls`` counts the Messages-API calls the context took (tool steps, a retry);
    ``history_tool_weeks``: the weekly reports the model read through ``read_history``."""

    intents: list[str]
    history_weeks: int
    recent_turns: int
    prompt_tokens: int
    layers: dict[str, int]
    model_calls: int = 0
    usage: TokenUsage | None = None
    history_tool_weeks: int = 0
    #: lines of an over-budget hot memory were left out of this context (oldest AI lines first)
    hot_memory_trimmed: bool = False
    #: Values the tools withheld from the model in this context, by kind (``identifier_fields``:
    #: identifier-flagged fields left out per subject read; ``resident_id``, ``phone``, ``email``:
    #: values scrubbed from free text). Empty when nothing was withheld.
    redactions: dict[str, int] = Field(default_factory=dict)


class ChatResult(BaseModel):
    """The 200 response body of ``POST .../messages``.

    ``truncated``: a reply was cut (``max_tokens``, or the tool-step cap); ``refused``: the model
    declined the request and ``reply`` says so in a fixed sentence.
    """

    message_id: str
    user_message_id: str
    reply: str
    truncated: bool
    intents: list[str]
    provider: str
    calls: list[CallReport]
    refused: bool = False


@dataclass
class _CallOutcome:
    plan: CallPlan
    prompt: AssembledPrompt
    result: AgentResult
    history_weeks_read: list[str] = field(default_factory=list)
    redactions: dict[str, int] = field(default_factory=dict)


def validate_message(content: str, max_bytes: int) -> None:
    """Reject empty or over-size messages before anything is read or written.

    Raises:
        InvalidInput: nothing visible (only whitespace or invisible format characters) or control
            characters such as NUL (422; ``domain.text.content_problem``).
        PayloadTooLarge: more than ``max_bytes`` UTF-8 bytes (413).
    """
    problem = content_problem(content)
    if problem is not None:
        raise InvalidInput(f"content {problem}")
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
    prefetched: TurnRead | None = None,
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
        prefetched: the turn's one read, made before the turn (in the chat function by the route
            guard, which decided the asker's membership on it; ``agent_memory.chat.read``);
            None: the turn reads it itself.

    Returns:
        ChatResult (message_id is the assistant message; its context is inspectable).

    Who may send a turn is decided before it runs, by the route guard (``agent_memory.http.guard``).

    Raises:
        InvalidInput, PayloadTooLarge, ProjectNotFound: nothing is written.
        LLMError (LLMUnavailable, LLMDeadlineExceeded, LLMBadRequest, LLMAuthError,
            LLMModelNotFound, LLMBadResponse, LLMEmptyReply): the user message was recorded as
            failed (exactly once), nothing else.
    """
    cfg = deps.config
    validate_message(content, cfg.max_message_bytes)
    now = deps.now()
    ctx = context_for_turn(deps.store, deps.cache, project_id, session_id, user_id=user_id, patient_id=patient_id,
                           now=now, prefetched=prefetched)
    session = ctx.session
    if patient_id and session.patient_id and session.patient_id != patient_id:
        raise InvalidInput("this session belongs to another patient")

    answered = _answered_retry(session.window, idempotency_hash)
    if answered is not None:
        return _replay(deps, project_id, session_id, content, *answered)
    reused = _failed_retry(session.window, idempotency_hash)
    user_msg = reused or MessageRecord(
        message_id=new_message_id(now), role="user", content=content, at=now, user_id=user_id,
        study_role=ctx.asker.study_role if ctx.asker else None, idempotency_hash=idempotency_hash,
    )

    # Session memory : this message's facts BEFORE any LLM call, so the prompt's
    # session block already holds them; re-applied at write time to the session as re-read.
    turn_memory: TurnMemory | None = None
    memory_session = session
    if deps.memory is not None:
        memory_session, turn_memory = deps.memory.before_turn(
            session, user_msg, patient_id=patient_id, time_zone=ctx.project.time_zone,
            deadline=pre_chat_deadline(deadline), known_refs=ctx.patient_diagnoses,
        )

    classification = deps.classifier.classify(content, deadline=pre_chat_deadline(deadline))
    plans = plan_calls(classification.intents)
    reports: list[WeeklyReport] | None = None
    yearly: list[YearlySummary] = []
    if any(p.load_history for p in plans):
        reports = deps.store.load_history(project_id, limit_weeks=cfg.budget.history_weeks)
        if len(reports) >= cfg.budget.history_weeks:
            # More history than the week cap may exist: older periods come through the yearly
            # summaries, read with the turn's BatchGetItem (a Query only for a project older than
            # the years that read covers; docs/architecture.md, "Request path").
            read = ctx.yearly_summaries
            yearly = read if read is not None else deps.store.load_yearly_summaries(project_id)

    # A reused failed message stays in the window the prompt sees (its place numbers the window's
    # messages); being failed, it is never replayed as a recent turn.
    outcomes: list[_CallOutcome] = []
    tools = turn_tools(deps, ctx.project, deadline)  # one per turn: one export per subject per turn
    # The asker's own reminder tools, offered to the first LLM context only (one request, one schedule).
    reminder_tools = None if deps.reminders is None else ReminderTools(
        deps.reminders, project_id=project_id, time_zone=ctx.project.time_zone, user_id=user_id,
        study_role=ctx.asker.study_role if ctx.asker else None, hot_lines=ctx.hot_memory.lines,
    )
    try:
        for i, plan in enumerate(plans):
            outcomes.append(_run_call(
                deps, _CallInput(ctx.hot_memory, memory_session, plan, reports, yearly, content, project_id,
                                 ctx.project.time_zone, now, deadline, ctx.asker,
                                 reminder_tools if i == 0 else None), tools,
            ))
    except LLMError:
        if reused is None:
            failed = user_msg.model_copy(update={"status": "failed"})
            _append(deps, ctx.project.time_zone, session,
                    Append(new=[failed], flow=[failed], fill=_fill(patient_id, user_id)), turn_memory)
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
    manifest = _manifest(outcomes, classification.intents, user_msg.message_id, ctx.asker)
    result = ChatResult(
        message_id=assistant.message_id,
        user_message_id=user_msg.message_id,
        reply=assistant.content,
        truncated=assistant.truncated,
        refused=any(o.result.refused for o in outcomes),
        intents=[i.value for i in classification.intents],
        provider=outcomes[0].result.provider if outcomes else deps.llm.provider,
        calls=[
            CallReport(
                intents=[i.value for i in o.plan.intents],
                history_weeks=len(o.prompt.history_weeks),
                recent_turns=o.prompt.recent_turns,
                prompt_tokens=o.prompt.prompt_tokens,
                layers=o.prompt.layers,
                model_calls=o.result.model_calls,
                usage=TokenUsage.of(o.result.usage),
                history_tool_weeks=len(o.history_weeks_read),
                hot_memory_trimmed=o.prompt.hot_memory_trimmed,
                redactions=o.redactions,
            )
            for o in outcomes
        ],
    )
    # the answer's fields the messages do not hold, for the replay of a retry (_replay)
    manifest["answer"] = result.model_dump(mode="json", include={"provider", "refused", "calls"})
    if reused is None:
        new, flow, mark_ok = [user_msg, assistant], [user_msg, assistant], []
    else:
        new, flow, mark_ok = [assistant], [assistant], [reused.message_id]
    _append(deps, ctx.project.time_zone, session, Append(
        new=new, flow=flow, mark_ok=mark_ok,
        contexts={assistant.message_id: manifest}, reply_to={assistant.message_id: user_msg.message_id},
        fill=_fill(patient_id, user_id),
    ), turn_memory)
    return result


def _answered_retry(
    window: Sequence[MessageRecord], idempotency_hash: str | None
) -> tuple[MessageRecord, MessageRecord] | None:
    """The user message of this Idempotency-Key that was answered (status ``ok``) and its reply
    (the assistant message after it in the window), or None.

    The HTTP layer's idempotency record normally answers such a retry; this covers the record that
    never completed (the process died after the turn's transaction and before the record was
    updated, so the record expired and the retry reached the turn): the turn is not run again.
    """
    if not idempotency_hash:
        return None
    for i, m in enumerate(window):
        if m.role == "user" and m.idempotency_hash == idempotency_hash and m.status == "ok":
            reply = next((r for r in window[i + 1:] if r.role == "assistant"), None)
            return (m, reply) if reply is not None else None
    return None


def _replay(
    deps: ChatDeps, project_id: str, session_id: str, content: str, user_msg: MessageRecord, reply: MessageRecord
) -> ChatResult:
    """The answer of an answered turn, as first given, from its stored messages and manifest.

    Raises:
        InvalidInput: the retry's message is not the one the key was first used with (as the
            HTTP layer's idempotency record answers a changed body: 422).
    """
    if user_msg.content != content:
        raise InvalidInput("this Idempotency-Key was used with another message")
    _, manifest = deps.store.get_message(project_id, session_id, reply.message_id)
    answer = (manifest or {}).get("answer") or {}
    return ChatResult(
        message_id=reply.message_id,
        user_message_id=user_msg.message_id,
        reply=reply.content,
        truncated=reply.truncated,
        refused=bool(answer.get("refused", False)),
        intents=list((manifest or {}).get("intents", [])),
        provider=str(answer.get("provider", deps.llm.provider)),
        calls=[CallReport.model_validate(c) for c in answer.get("calls", [])],
    )


def _failed_retry(window: Sequence[MessageRecord], idempotency_hash: str | None) -> MessageRecord | None:
    if not idempotency_hash:
        return None
    for m in reversed(window):
        if m.role == "user" and m.idempotency_hash == idempotency_hash and m.status == "failed":
            return m
    return None


@dataclass(frozen=True)
class _CallInput:
    """What one LLM context of the turn is built from."""

    hot: HotMemory
    session: SessionState
    plan: CallPlan
    reports: list[WeeklyReport] | None
    yearly: list[YearlySummary]
    content: str
    project_id: str
    time_zone: str
    now: datetime
    deadline: float | None
    asker: Member | None = None
    extra_tools: ToolSet | None = None


def turn_tools(deps: ChatDeps, project: Project, deadline: float | None) -> list[ToolSet]:
    """The tool sets every call of one turn shares: the project's own clinical source when it has
    one (REDCap, opened on first use), else the demo clinical data; then ``deps.tool_sets``."""
    clinical: ToolSet
    source, sources = project.clinical_data, deps.clinical_sources
    if source is not None and sources is not None:
        # The source may use a share of the time left when it is first asked, so that the model
        # still has time to answer (with "the data source is unavailable" if it came to that).
        clinical = ClinicalToolSet(lambda: sources.open(source, deadline=source_deadline(deadline)))
    else:
        clinical = ClinicalTools(deps.clinical, project.project_id)
    return [clinical, *(factory(project.project_id, deadline) for factory in deps.tool_sets)]


def _run_call(deps: ChatDeps, call: _CallInput, shared: list[ToolSet]) -> _CallOutcome:
    cfg = deps.config
    history_tools: HistoryTools | None = None
    sets = list(shared)
    if deps.history is not None and not call.plan.load_history and Intent.QC_TASK not in call.plan.intents:
        # A question the router did not send to history can still read it; a QC call never can.
        history_tools = HistoryTools(deps.history, call.project_id)
        sets.append(history_tools)
    if call.extra_tools is not None:  # the asker's reminder tools (first LLM context only)
        sets.append(call.extra_tools)
    tools = ToolSets(sets)
    withheld_before = tools.redactions()
    prompt = assemble_prompt(
        hot_memory=call.hot,
        reports=call.reports if call.plan.load_history else None,  # a QC call never sees history
        yearly=call.yearly if call.plan.load_history else [],
        session=call.session,
        user_text=call.content,
        intents=call.plan.intents,
        budget=cfg.budget,
        tools=tools.specs,
        min_cacheable_tokens=cfg.cacheable_from(),
        now=call.now,
        time_zone=call.time_zone,
        asker=call.asker,
    )
    request = LLMRequest(
        model=cfg.chat_model_id,
        system=prompt.system,
        messages=prompt.messages,
        max_tokens=cfg.max_output_tokens,
        deadline=call.deadline,
        purpose="chat",
        effort=cfg.effort,
        metadata={"intents": [i.value for i in call.plan.intents]},
    )
    result = run_agent(deps.llm, request, tools, max_steps=cfg.react_max_steps, on_call=_record_usage)
    weeks = list(history_tools.weeks_read) if history_tools is not None else []
    withheld = tools.redactions() - withheld_before
    return _CallOutcome(plan=call.plan, prompt=prompt, result=result, history_weeks_read=weeks,
                        redactions=dict(sorted(withheld.items())))


def _record_usage(call: ModelCall) -> None:
    """The ``chat`` task's token metrics, per model call (nothing offline)."""
    record_usage("chat", call.usage)


def _combine(outcomes: Sequence[_CallOutcome]) -> str:
    if len(outcomes) == 1:
        return outcomes[0].result.text
    parts = []
    for o in outcomes:
        title = "【质控 QC】" if Intent.QC_TASK in o.plan.intents else "【历史 History】"
        parts.append(f"{title}\n{o.result.text}")
    return "\n\n".join(parts)


def _manifest(
    outcomes: Sequence[_CallOutcome], intents: Sequence[Intent], user_message_id: str, asker: Member | None = None
) -> dict[str, Any]:
    """What was sent, by reference, so the context endpoint can rebuild it (kept small), what each
    model call cost, and who asked (user id, display name and study role at that moment)."""
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
            if b.cache:
                entry["cache"] = True
            blocks.append(entry)
        usage = o.result.usage
        calls.append({
            "intents": [i.value for i in o.plan.intents],
            "load_history": o.plan.load_history,
            "blocks": blocks,
            "tool_calls": [tc.id for tc in o.result.tool_calls],
            "usage": usage.as_dict() if usage is not None else None,
            "model_calls": [
                {"stop_reason": c.stop_reason, "usage": c.usage.as_dict() if c.usage is not None else None}
                for c in o.result.calls
            ],
            "truncated": o.result.truncated,
            "refused": o.result.refused,
            **({"read_history": {"weeks": o.history_weeks_read}} if o.history_weeks_read else {}),
        })
    manifest: dict[str, Any] = {"intents": [i.value for i in intents], "calls": calls}
    if asker is not None:
        manifest["asker"] = {"user_id": asker.user_id, "display_name": asker.display_name,
                             "study_role": asker.study_role}
    return manifest


def _append(
    deps: ChatDeps,
    time_zone: str,
    session: SessionState,
    append: Append,
    memory: TurnMemory | None,
) -> None:
    """Write the turn through the one session append; then update the container's cache."""
    session_memory = deps.memory

    def update(current: SessionState, updated: SessionState, full_window: list[MessageRecord]) -> SessionState:
        if session_memory is None or memory is None:
            return updated
        return session_memory.apply(current, updated, memory, full_window=full_window, cache=deps.cache)

    done = append_messages(
        deps.store, session, append,
        time_zone=time_zone, now=deps.now,
        keep_user_turns=deps.config.budget.window_user_turns,
        flow_log_retention_days=deps.config.flow_log_retention_days,
        update=update,
    )
    deps.cache.append(
        session.project_id, session.session_id, done.base.version, done.written.version,
        list(append.new), done.written.window,
    )


#: Share of the time left that one call BEFORE the chat call (symptom extraction, intent
#: classification) may use: each falls back to its rules when it runs out, and two slow ones still
#: leave the chat call more than half of the turn's time.
PRE_CHAT_DEADLINE_SHARE = 0.25


def pre_chat_deadline(deadline: float | None, *, now: float | None = None) -> float | None:
    """The deadline (``time.monotonic()`` instant) of a call made before the chat call: a
    :data:`PRE_CHAT_DEADLINE_SHARE` of the time left until ``deadline`` (None: no deadline)."""
    if deadline is None:
        return None
    at = time.monotonic() if now is None else now
    return at + max(0.0, deadline - at) * PRE_CHAT_DEADLINE_SHARE


#: Share of the time left that the clinical data source may use (all its calls of the turn).
CLINICAL_SOURCE_DEADLINE_SHARE = 0.5


def source_deadline(deadline: float | None, *, now: float | None = None) -> float | None:
    """The deadline of the clinical source's calls: :data:`CLINICAL_SOURCE_DEADLINE_SHARE` of the
    time left until ``deadline`` (None: no deadline)."""
    if deadline is None:
        return None
    at = time.monotonic() if now is None else now
    return at + max(0.0, deadline - at) * CLINICAL_SOURCE_DEADLINE_SHARE


def _fill(patient_id: str | None, user_id: str) -> dict[str, str]:
    """Session fields a turn sets when they are still empty."""
    return {"created_by": user_id, **({"patient_id": patient_id} if patient_id else {})}


def _zone(name: str) -> ZoneInfo:
    """The project's IANA zone (ZoneInfo caches instances itself)."""
    return ZoneInfo(name)


__all__ = [
    "CallReport", "ChatConfig", "ChatDeps", "ChatResult", "ChatStore", "TokenUsage", "handle_message",
    "validate_message",
]
