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
stop reason; :mod:`agent_memory.chat.answer`), and as the ``chat`` task's metrics
(docs/architecture.md, "Prompt caching").

:func:`handle_message` reads as its steps: validate, read (one BatchGetItem), replay an answered
retry, start the turn (the user message, session memory), classify, read history, answer (one LLM
context per plan), record the answer (one TransactWriteItems).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from agent_memory.chat.agent import TOOL_CHOICE_NONE, ClinicalTools, ModelCall, run_agent
from agent_memory.chat.answer import CallOutcome, CallReport, ChatResult, TokenUsage, combine_replies, turn_manifest
from agent_memory.chat.clinical_tools import ClinicalToolSet
from agent_memory.chat.history_tool import HistoryTools
from agent_memory.chat.intents import CallPlan, IntentClassifier, history_part, plan_calls
from agent_memory.chat.intents.directives import TASK_INTENTS, rules_relaxed_by_directives, rules_relaxed_once
from agent_memory.chat.prompt import PromptBudget, assemble_prompt
from agent_memory.chat.read import TurnRead, context_for_turn
from agent_memory.chat.toolsets import ToolSet, ToolSets
from agent_memory.config import DEFAULT_CHAT_MODEL_ID, min_cacheable_tokens
from agent_memory.conversation.append import Append, append_messages
from agent_memory.conversation.cache import SessionCache
from agent_memory.domain.errors import InvalidInput, LLMError, PayloadTooLarge
from agent_memory.domain.ids import new_message_id
from agent_memory.domain.llm import Effort, LLMRequest
from agent_memory.domain.models import HotMemory, Intent, Member, Project
from agent_memory.domain.text import content_problem, utf8_len
from agent_memory.domain.turns import MessageRecord, SessionState, TurnContext
from agent_memory.history.loading import HistoryLoad, anchor_of, load_history_for
from agent_memory.identifiers import IdentifierFirewall
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
        """Tokens a prefix needs before a cache breakpoint is placed at its end: the model's published
        minimum with a margin of :data:`CACHE_ESTIMATE_MARGIN` (our token counts are estimates; a
        breakpoint on a prefix the API counts below its minimum is never written)."""
        if self.min_cacheable_tokens is not None:
            return self.min_cacheable_tokens
        return math.ceil(min_cacheable_tokens(self.chat_model_id) * CACHE_ESTIMATE_MARGIN)


#: How far an estimated prefix must clear the model's minimum cacheable length (docs/architecture.md,
#: "Prompt caching").
CACHE_ESTIMATE_MARGIN = 1.05


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
    #: The identifier firewall (docs/architecture.md, "Identifiers"): the message at ingress, the
    #: tool results, the reminder texts and the replies. Default: the patterns alone (no index).
    firewall: IdentifierFirewall = field(default_factory=lambda: IdentifierFirewall(None))


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

    The message is screened by the identifier firewall right after the read, before anything is
    classified, sent or stored: under the project's ``redact`` policy every later step sees the
    scrubbed text (and ``calls[].redactions`` counts what was withheld); under ``reject`` a message
    holding identifiers ends the turn.

    Raises:
        InvalidInput, PayloadTooLarge, ProjectNotFound: nothing is written.
        IdentifiersRejected: the project's policy is ``reject`` and the message holds identifiers
            (422 with the kinds); nothing is written.
        LLMError (LLMUnavailable, LLMDeadlineExceeded, LLMBadRequest, LLMAuthError,
            LLMModelNotFound, LLMBadResponse, LLMEmptyReply): the user message was recorded as
            failed (exactly once), nothing else.
    """
    validate_message(content, deps.config.max_message_bytes)
    now = deps.now()
    ctx = context_for_turn(deps.store, deps.cache, project_id, session_id, user_id=user_id, patient_id=patient_id,
                           now=now, prefetched=prefetched)
    if patient_id and ctx.session.patient_id and ctx.session.patient_id != patient_id:
        raise InvalidInput("this session belongs to another patient")
    screened = deps.firewall.screen(ctx.project, content, deadline=source_deadline(deadline))
    content = screened.text
    answered = _answered_retry(ctx.session.window, idempotency_hash)
    if answered is not None:
        return _replay(deps, project_id, session_id, content, *answered)
    turn = _start_turn(deps, ctx, ctx.asker, user_id=user_id, content=content, patient_id=patient_id, now=now,
                       deadline=deadline, idempotency_hash=idempotency_hash)
    turn.withheld = screened.counts
    classification = deps.classifier.classify(content, deadline=pre_chat_deadline(deadline))
    plans = plan_calls(classification.intents)
    history = _read_history(deps, turn, plans)
    outcomes = _answer(deps, turn, plans, history, classification.directives)
    return _record_answer(deps, turn, outcomes, classification.intents)


@dataclass
class _Turn:
    """One turn under way: what its read returned, who asks, the user's message (new, or the failed
    one of an earlier try with the same Idempotency-Key: ``reused``), and the session the prompt
    sees with this message's facts (``session``) plus what session memory applies at write time."""

    ctx: TurnContext
    asker: Member | None
    user_id: str
    content: str
    patient_id: str | None
    now: datetime
    deadline: float | None
    user_msg: MessageRecord
    reused: MessageRecord | None
    session: SessionState
    memory: TurnMemory | None = None
    #: what the firewall withheld from the message at ingress, by kind
    withheld: dict[str, int] = field(default_factory=dict)

    @property
    def project(self) -> Project:
        return self.ctx.project

    def fill(self) -> dict[str, str]:
        """Session fields the turn sets when they are still empty."""
        return _fill(self.patient_id, self.user_id)


def _start_turn(
    deps: ChatDeps, ctx: TurnContext, asker: Member | None, *, user_id: str, content: str, patient_id: str | None,
    now: datetime, deadline: float | None, idempotency_hash: str | None,
) -> _Turn:
    """The turn's user message, and session memory's facts of it BEFORE any LLM call, so the
    prompt's session block already holds them (re-applied at write time to the session as re-read).
    A reused failed message stays in the window the prompt sees (its place numbers the window's
    messages); being failed, it is never replayed as a recent turn."""
    reused = _failed_retry(ctx.session.window, idempotency_hash)
    user_msg = reused or MessageRecord(
        message_id=new_message_id(now), role="user", content=content, at=now, user_id=user_id,
        study_role=asker.study_role if asker else None, idempotency_hash=idempotency_hash,
    )
    turn = _Turn(ctx=ctx, asker=asker, user_id=user_id, content=content, patient_id=patient_id, now=now,
                 deadline=deadline, user_msg=user_msg, reused=reused, session=ctx.session)
    if deps.memory is not None:
        turn.session, turn.memory = deps.memory.before_turn(
            ctx.session, user_msg, patient_id=patient_id, time_zone=ctx.project.time_zone,
            deadline=pre_chat_deadline(deadline), known_refs=ctx.patient_diagnoses,
        )
    return turn


def _read_history(deps: ChatDeps, turn: _Turn, plans: Sequence[CallPlan]) -> HistoryLoad | None:
    """The history of the turn's history context (None: no plan loads history): the reports of the
    period the question names, in the project's zone (a milestone dated by a hot-memory line
    counts), else the newest weeks, with the yearly summaries that stand for older periods: those
    the turn's BatchGetItem read, or (a project older than the years that read covers) one Query
    (docs/architecture.md, "Request path" and "History")."""
    if not any(p.load_history for p in plans):
        return None
    ctx = turn.ctx
    project_id = ctx.project.project_id
    # a message split into a QC context and a history context: the period is the history part's
    asked = history_part(turn.content) if any(Intent.QC_TASK in p.intents for p in plans) else turn.content
    anchor = anchor_of(asked, turn.now, ctx.project.time_zone, [ln.text for ln in ctx.hot_memory.lines])
    read = ctx.yearly_summaries
    return load_history_for(
        deps.store, project_id, anchor, cap=deps.config.budget.history_weeks,
        yearly_read=lambda: read if read is not None else deps.store.load_yearly_summaries(project_id),
    )


def _answer(deps: ChatDeps, turn: _Turn, plans: Sequence[CallPlan], history: HistoryLoad | None,
            directives: Sequence[str] = ()) -> list[CallOutcome]:
    """One LLM context per plan, sharing the turn's tool sets (one export per subject per turn);
    the asker's reminder tools and the message's standing directives (to acknowledge) go to the
    first context only (one request, one schedule, one acknowledgement).

    Raises:
        LLMError: a context failed; the user message was recorded as failed (once: a reused one
            already is).
    """
    project = turn.project
    tools = turn_tools(deps, project, turn.deadline)
    reminder_tools = None if deps.reminders is None else ReminderTools(
        deps.reminders, project_id=project.project_id, time_zone=project.time_zone, user_id=turn.user_id,
        study_role=turn.asker.study_role if turn.asker else None, hot_lines=turn.ctx.hot_memory.lines,
        screen=lambda text: deps.firewall.screen(project, text).text,
    )
    # the System Rules relaxed (distiller's guard): by standing directives, else this once, after the previous message
    lines, window = turn.ctx.hot_memory.lines, turn.session.window
    earlier = next((m.content for m in reversed(window) if m.role == "user" and m.status == "ok"
                    and m.message_id != turn.user_msg.message_id), "")
    relaxes = (rules_relaxed_by_directives(directives, turn.content, lines) if directives
               else rules_relaxed_once(turn.content, lines, earlier))
    outcomes: list[CallOutcome] = []
    try:
        for i, plan in enumerate(plans):
            outcomes.append(_run_call(deps, _CallInput(
                turn.ctx.hot_memory, turn.session, plan, history, turn.content, project,
                turn.now, turn.deadline, turn.asker, reminder_tools if i == 0 else None, turn.withheld,
                tuple(directives) if i == 0 else (), relaxes if i == 0 else None,
            ), tools))
    except LLMError:
        if turn.reused is None:
            failed = turn.user_msg.model_copy(update={"status": "failed"})
            _append(deps, project.time_zone, turn.ctx.session,
                    Append(new=[failed], flow=[failed], fill=turn.fill()), turn.memory)
        raise
    return outcomes


def _record_answer(deps: ChatDeps, turn: _Turn, outcomes: list[CallOutcome], intents: Sequence[Intent]) -> ChatResult:
    """Write the reply (and the user message, unless a reused failed one is marked answered) with
    its context manifest through the one session append; returns the response body."""
    reply_at = deps.now()
    assistant = MessageRecord(
        message_id=new_message_id(reply_at), role="assistant", content=combine_replies(outcomes), at=reply_at,
        tool_calls=[tc for o in outcomes for tc in o.result.tool_calls],
        truncated=any(o.result.truncated for o in outcomes),
        history=any(o.prompt.history_weeks or o.prompt.history_period or o.history_weeks_read for o in outcomes),
    )
    user_msg = turn.user_msg
    result = ChatResult(
        message_id=assistant.message_id, user_message_id=user_msg.message_id, reply=assistant.content,
        truncated=assistant.truncated, refused=any(o.result.refused for o in outcomes),
        intents=[i.value for i in intents],
        provider=outcomes[0].result.provider if outcomes else deps.llm.provider,
        calls=[o.report() for o in outcomes],
    )
    manifest = turn_manifest(outcomes, intents, user_msg.message_id, turn.asker)
    # the answer's fields the messages do not hold, for the replay of a retry (_replay)
    manifest["answer"] = result.model_dump(mode="json", include={"provider", "refused", "calls"})
    if turn.reused is None:
        new, flow, mark_ok = [user_msg, assistant], [user_msg, assistant], []
    else:
        new, flow, mark_ok = [assistant], [assistant], [turn.reused.message_id]
    _append(deps, turn.project.time_zone, turn.ctx.session, Append(
        new=new, flow=flow, mark_ok=mark_ok,
        contexts={assistant.message_id: manifest}, reply_to={assistant.message_id: user_msg.message_id},
        fill=turn.fill(),
    ), turn.memory)
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
    """What one LLM context of the turn is built from (``withheld``: what the firewall took out of
    the user's message, by kind)."""

    hot: HotMemory
    session: SessionState
    plan: CallPlan
    history: HistoryLoad | None
    content: str
    project: Project
    now: datetime
    deadline: float | None
    asker: Member | None = None
    extra_tools: ToolSet | None = None
    withheld: dict[str, int] = field(default_factory=dict)
    #: the standing directives the message states (acknowledged; nothing is carried out for them)
    directives: tuple[str, ...] = ()
    #: the System Rules those directives would relax (None: none; they are refused, not acknowledged); without
    #: directives, those the message asks to relax this once (the reply says the rule stands)
    relaxes: tuple[str, ...] | None = None


def turn_tools(deps: ChatDeps, project: Project, deadline: float | None) -> list[ToolSet]:
    """The tool sets every call of one turn shares: the project's own clinical source when it has
    one (REDCap, opened on first use; every string value of a record scrubbed with its field's
    label, the project's subject identifier index included), else the demo clinical data; then
    ``deps.tool_sets``."""
    clinical: ToolSet
    source, sources = project.clinical_data, deps.clinical_sources
    if source is not None and sources is not None:
        firewall = deps.firewall
        # The source may use a share of the time left when it is first asked, so that the model
        # still has time to answer (with "the data source is unavailable" if it came to that).
        clinical = ClinicalToolSet(
            lambda: sources.open(source, project_id=project.project_id, deadline=source_deadline(deadline)),
            scrub=lambda value, label: firewall.scrub_value(project, value, label=label, lang="en"),
        )
    else:
        clinical = ClinicalTools(deps.clinical, project.project_id)
    return [clinical, *(factory(project.project_id, deadline) for factory in deps.tool_sets)]


def _run_call(deps: ChatDeps, call: _CallInput, shared: list[ToolSet]) -> CallOutcome:
    """One LLM context: its prompt, the ReAct loop, the reply with its identifiers withheld;
    ``redactions`` counts what was withheld from the message, the tool results and the reply."""
    cfg = deps.config
    tools, history_tools = _call_tools(deps, call, shared)
    withheld_before = tools.redactions()
    history = call.history if call.plan.load_history else None  # a QC call never sees history
    prompt = assemble_prompt(
        hot_memory=call.hot,
        reports=history.reports if history is not None else None,
        yearly=history.yearly if history is not None else [],
        history_span=history.span if history is not None else None,
        session=call.session,
        user_text=call.content,
        intents=call.plan.intents,
        budget=cfg.budget,
        tools=tools.specs,
        min_cacheable_tokens=cfg.cacheable_from(),
        now=call.now,
        time_zone=call.project.time_zone,
        asker=call.asker,
        directives=call.directives,
        relaxes=call.relaxes,
        others=call.plan.others,
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
    # a message that only states standing directives asks for no tool call (docs/architecture.md, "Intents")
    only_directives = bool(call.directives) and not TASK_INTENTS & set(call.plan.intents)
    result = run_agent(deps.llm, request, tools, max_steps=cfg.react_max_steps, on_call=_record_usage,
                       tool_choice=TOOL_CHOICE_NONE if only_directives else None)
    reply = deps.firewall.scrub(call.project, result.text)
    if reply.found:
        result = replace(result, text=reply.text)
    weeks = list(history_tools.weeks_read) if history_tools is not None else []
    withheld = tools.redactions() - withheld_before
    withheld.update(call.withheld)
    withheld.update(reply.counts)
    return CallOutcome(plan=call.plan, prompt=prompt, result=result, history_weeks_read=weeks,
                       redactions=dict(sorted(withheld.items())))


def _call_tools(deps: ChatDeps, call: _CallInput, shared: list[ToolSet]) -> tuple[ToolSets, HistoryTools | None]:
    """The call's tool sets: the turn's, ``read_history`` unless the plan loads history or is QC,
    the asker's reminder tools; every result passes the firewall before the model reads it, and the
    model's own text and tool inputs before they are run, kept or sent back."""
    history_tools: HistoryTools | None = None
    sets = list(shared)
    if deps.history is not None and Intent.QC_TASK not in call.plan.intents:
        # A question the router did not send to history can still read it, and a history call other weeks
        # than those loaded; a QC call never can. Every other call offers the same tools, so the cached
        # prefix (tools first) holds across history and non-history turns (docs/architecture.md,
        # "Prompt caching").
        lines = [ln.text for ln in call.hot.lines]
        history_tools = HistoryTools(deps.history, call.project.project_id,
                                     resolve=lambda phrase: anchor_of(phrase, call.now, call.project.time_zone, lines))
        sets.append(history_tools)
    if call.extra_tools is not None:  # the asker's reminder tools (first LLM context only)
        sets.append(call.extra_tools)
    project, firewall = call.project, deps.firewall
    return ToolSets(sets, scrub=lambda text: firewall.scrub_data(project, text, lang="en"),
                    scrub_written=lambda data: firewall.scrub_data(project, data),
                    reject_written=project.identifiers == "reject"), history_tools


def _record_usage(call: ModelCall) -> None:
    """The ``chat`` task's token metrics, per model call (nothing offline)."""
    record_usage("chat", call.usage)


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
