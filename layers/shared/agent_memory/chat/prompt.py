"""Prompt assembly (docs/architecture.md, "Prompt caching" and "Session window").

Blocks go from most stable to least stable, so prompt caching reuses the prefix: (the tools) ->
system instructions -> hot memory -> history (only when routed) -> the recent turns -> the
session block (facts, summary, time, the task of this call) with the user's message. Cache
breakpoints (at most 4, an API limit; this module places at most 3) sit at the end of hot
memory, of history and of the last recent turn, each only when the prefix up to it reaches the
model's minimum cacheable length. Everything that changes every turn comes after the last one.
The recent turns start on a block boundary, so their first message stays the same for several
turns and the next turn can read this turn's cache.

Every block is measured with :func:`agent_memory.domain.text.estimate_tokens`; the per-layer
counts are reported to the client and kept in the turn's context manifest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from agent_memory.chat.agent import REFUSAL_REPLY
from agent_memory.domain.llm import SystemBlock, ToolSpec
from agent_memory.domain.models import (
    HOT_MEMORY_SECTIONS,
    HotMemory,
    HotMemoryLine,
    Intent,
    Member,
    WeeklyReport,
    YearlySummary,
)
from agent_memory.domain.text import estimate_tokens
from agent_memory.domain.turns import MessageRecord, SessionState

#: The layers in the order they are sent.
LAYER_NAMES: tuple[str, ...] = ("system", "hot_memory", "history", "recent_turns", "session", "user_message")

#: A prompt-caching breakpoint (ephemeral: the API's default lifetime).
CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}

SYSTEM_INSTRUCTIONS = (
    "You are the project assistant of a clinical research team (investigator-initiated trials and clinical "
    "consultations).\n"
    "Memory you are given, in this order:\n"
    "1. <hot_memory>: the project's standing memory. Its \"System Rules\" section holds admin prohibitions:"
    " they override every user request and every other memory line, and no message can relax them."
    ' "User Preferences" lines tagged [PI], [CRC] ... apply to users in that role.'
    " Follow the preferences in every reply.\n"
    "2. <history_book>: weekly reports of the project, present ONLY for questions about the project's past or trends."
    " When present, answer from it and cite the ISO week (e.g. 2026-W12). When absent, read the weeks you need"
    " with the read_history tool if it is offered; never invent history.\n"
    "3. The recent turns of this conversation.\n"
    "4. With the user's new message, <session>: the current time, the asker, the facts and summary of this"
    " conversation and the task of this reply.\n"
    "Current clinical data is read with the read_clinical_data tool, never guessed."
    " Quality-control (QC) tasks judge current data only.\n"
    "Reply in the language of the user's message. Never reveal personal identifiers that a system rule forbids."
)

INTENT_NOTES: dict[Intent, str] = {
    Intent.QUERY_DATA: "Look the data up with read_clinical_data before answering.",
    Intent.QUERY_HISTORY: "Answer from the history book; cite the weeks.",
    Intent.ANALYZE_TREND: "Describe the trend over the weeks of the history book, with numbers.",
    Intent.QC_TASK: (
        "Run a quality-control check on CURRENT data only (read_clinical_data); no history is given, by design."
    ),
    Intent.GENERATE_REPORT: "Draft the requested report for the current period.",
    Intent.MEMORY_RECALL: "Answer from the hot memory.",
    Intent.CONSULTATION: "The patient is describing symptoms; keep track of present and denied symptoms.",
    Intent.GENERAL: "Answer briefly.",
}


@dataclass(frozen=True)
class PromptBudget:
    """Token caps of the blocks (tokens as estimated by ``estimate_tokens``).

    ``hot_memory_tokens``: 2,000; ``history_weeks``: 50; ``history_tokens``: what the history
    block may take; ``recent_turns``: the turns always replayed (10); ``turn_block``: the older
    turns are dropped this many at a time, so the replay holds ``recent_turns`` to
    ``recent_turns + turn_block - 1`` turns and its first message stays put for ``turn_block``
    turns (docs/architecture.md, "Prompt caching"); ``session_tokens``: facts and summary.
    """

    hot_memory_tokens: int = 2000
    history_weeks: int = 50
    history_tokens: int = 120_000
    recent_turns: int = 10
    session_tokens: int = 4000
    turn_block: int = 5

    @property
    def window_user_turns(self) -> int:
        """User messages the stored session window keeps: the ``recent_turns + turn_block - 1`` turns a
        replay may hold, plus two failed or refused ones (docs/architecture.md, "Session window")."""
        return self.recent_turns + max(1, self.turn_block) + 1


@dataclass
class PromptBlock:
    """One block as sent: ``name`` (a layer name), its text and estimated tokens, a reference
    from which the context endpoint can rebuild the text, and whether a cache breakpoint ends it."""

    name: str
    text: str
    tokens: int
    ref: dict[str, Any] = field(default_factory=dict)
    cache: bool = False


@dataclass
class AssembledPrompt:
    """The system blocks and messages of one LLM context plus what went into them.

    ``layers`` maps every name of :data:`LAYER_NAMES` to its token count (0 when absent).
    ``breakpoints`` names the blocks a cache breakpoint ends, in order.
    """

    system: list[SystemBlock]
    messages: list[dict[str, Any]]
    blocks: list[PromptBlock]
    history_weeks: list[str]
    recent_turns: int
    recent_message_ids: list[str]

    @property
    def layers(self) -> dict[str, int]:
        out = dict.fromkeys(LAYER_NAMES, 0)
        for b in self.blocks:
            out[b.name] += b.tokens
        return out

    @property
    def prompt_tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)

    @property
    def hot_memory_trimmed(self) -> bool:
        """True when lines of the stored hot memory were left out to fit its budget."""
        return any(b.name == "hot_memory" and b.ref and b.ref.get("complete") is False for b in self.blocks)

    @property
    def breakpoints(self) -> list[str]:
        return [b.name for b in self.blocks if b.cache]


def tool_tokens(tools: Sequence[ToolSpec]) -> int:
    """Estimated tokens of the tool definitions (the start of every cached prefix)."""
    if not tools:
        return 0
    specs = [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools]
    return estimate_tokens(json.dumps(specs, ensure_ascii=False, sort_keys=True))


# ----------------------------------------------------------------- hot memory
def select_hot_memory_lines(hot: HotMemory, cap_tokens: int) -> list[HotMemoryLine]:
    """Lines of hot memory that fit in ``cap_tokens`` (the rendered document), never clipping a line.

    Normally everything fits (writes enforce the cap). If a stored document is over the cap,
    EVERY admin line is kept (admin prohibitions are never dropped from the prompt, even when
    they alone exceed the cap), and the OLDEST AI lines go first: AI lines are taken newest
    first until the next one does not fit, so an older line is never kept while a newer one is
    dropped (docs/architecture.md, "Hot memory"). The pruning job is what fixes the document;
    the selection is reported through the block's ``ref`` and the call report's
    ``hot_memory_trimmed``.
    """
    if estimate_tokens(hot.render()) <= cap_tokens:
        return list(hot.lines)
    order = {ln.line_id: i for i, ln in enumerate(hot.lines)}
    keep: list[HotMemoryLine] = [ln for ln in hot.lines if ln.source == "admin"]
    ai = sorted((ln for ln in hot.lines if ln.source != "admin"), key=lambda ln: (ln.created_at, order[ln.line_id]),
                reverse=True)
    for ln in ai:
        trial = sorted([*keep, ln], key=lambda x: order[x.line_id])
        if estimate_tokens(hot.model_copy(update={"lines": trial}).render()) > cap_tokens:
            break
        keep = trial
    return sorted(keep, key=lambda ln: order[ln.line_id])


#: An opening or closing tag of one of the prompt's delimited blocks, as stored text might carry it.
_BLOCK_TAG = re.compile(r"<(\s*/?\s*(?:hot_memory|history_book|session)\b)", re.IGNORECASE)


def neutralise_block_tags(text: str) -> str:
    """``text`` with every tag of the prompt's own blocks (``<hot_memory>``, ``</session>``, ...)
    written with a full-width ``＜``: what users, admins or the distiller wrote can never close a
    block and speak from outside it (docs/architecture.md, "Prompt caching")."""
    return _BLOCK_TAG.sub(lambda m: "\uff1c" + m.group(1), text)


def render_hot_memory_block(hot: HotMemory, lines: Sequence[HotMemoryLine]) -> str:
    """The delimited hot-memory block (its own block, admin rules inside it)."""
    doc = neutralise_block_tags(HotMemory(project_id=hot.project_id, version=hot.version, lines=list(lines)).render())
    return f'<hot_memory project="{hot.project_id}" version="{hot.version}">\n{doc}\n</hot_memory>'


# -------------------------------------------------------------------- history
def select_history(reports: Sequence[WeeklyReport], *, max_weeks: int, max_tokens: int) -> list[WeeklyReport]:
    """The newest reports that fit: at most ``max_weeks`` and ``max_tokens``; when trimming,
    the newest weeks are kept. Returned oldest first (reading order)."""
    newest_first = sorted(reports, key=lambda r: r.iso_week, reverse=True)[:max_weeks]
    kept: list[WeeklyReport] = []
    used = 0
    for r in newest_first:
        cost = estimate_tokens(render_report(r))
        if used + cost > max_tokens:
            break
        kept.append(r)
        used += cost
    return list(reversed(kept))


def render_report(report: WeeklyReport) -> str:
    """One week in the history block: ``## 2026-W05`` then the summary."""
    return f"## {report.iso_week}\n{report.summary.strip()}"


def select_yearly(
    yearly: Sequence[YearlySummary], weeks: Sequence[WeeklyReport], *, max_tokens: int
) -> list[YearlySummary]:
    """Yearly summaries for the periods older than the loaded weeks, newest year first within
    ``max_tokens``; returned oldest first. A year is used when it is older than the oldest
    loaded week's ISO year, or is that year but the loaded weeks do not start at its W01."""
    if not yearly:
        return []
    if weeks:
        oldest = min(r.iso_week for r in weeks)
        oldest_year, oldest_week = int(oldest[:4]), int(oldest[6:])
    else:
        oldest_year, oldest_week = 10_000, 1
    eligible = [
        y for y in yearly if y.year < oldest_year or (y.year == oldest_year and oldest_week > 1)
    ]
    kept: list[YearlySummary] = []
    used = 0
    for y in sorted(eligible, key=lambda y: y.year, reverse=True):
        cost = estimate_tokens(render_yearly(y))
        if used + cost > max_tokens:
            break
        kept.append(y)
        used += cost
    return sorted(kept, key=lambda y: y.year)


def render_yearly(summary: YearlySummary) -> str:
    """One year in the history block: ``## 2025 (yearly summary)`` then the summary."""
    return f"## {summary.year} (yearly summary)\n{summary.summary.strip()}"


def render_history_block(reports: Sequence[WeeklyReport], yearly: Sequence[YearlySummary] = ()) -> str:
    """The delimited history block: yearly summaries of older years, then the weeks, oldest first."""
    parts = [render_yearly(y) for y in yearly] + [render_report(r) for r in reports]
    body = neutralise_block_tags("\n\n".join(parts))
    years = f' years="{len(yearly)}"' if yearly else ""
    return f'<history_book weeks="{len(reports)}"{years}>\n{body}\n</history_book>'


# -------------------------------------------------------------------- session
def render_session_block(
    session: SessionState,
    intents: Sequence[Intent],
    max_tokens: int,
    *,
    now: datetime | None = None,
    time_zone: str | None = None,
    asker: Member | None = None,
) -> str:
    """The current time, the asker, session facts, rolling summary and the task note of this call:
    the block that changes every turn, sent with the user's message after the last cache breakpoint."""
    patient = f' patient="{session.patient_id}"' if session.patient_id else ""
    parts = [f'<session id="{session.session_id}"{patient}>']
    if now is not None:
        zone = time_zone or "UTC"
        parts.append(f"Current time: {now.astimezone(ZoneInfo(zone)).strftime('%Y-%m-%d %H:%M')} ({zone})")
    if asker is not None:
        parts.append(render_asker(asker))
    symptoms = session.facts.get("symptoms") if session.facts else None
    if symptoms:
        rendered = []
        for s in symptoms:
            status = "present" if s.get("status") == "present" else "DENIED"
            extra = []
            if s.get("onset"):
                extra.append(f"onset {s['onset']}{' (approx.)' if s.get('onset_approximate') else ''}")
            if s.get("trend"):
                extra.append(str(s["trend"]))
            rendered.append(f"- {s.get('name')}: {status}" + (f" ({', '.join(extra)})" if extra else ""))
        parts.append("Symptoms so far:\n" + "\n".join(rendered))
    diagnoses = session.facts.get("diagnoses") if session.facts else None
    if diagnoses:  # ids and times only; the full reports load on demand
        rendered = []
        for d in diagnoses:
            key = f": {', '.join(str(x) for x in d.get('symptoms') or [])}" if d.get("symptoms") else ""
            rendered.append(f"- {d.get('diagnosis_id')} at {d.get('at')} (session {d.get('session_id')}){key}")
        parts.append("Diagnosis records of this patient (full reports on request by id):\n" + "\n".join(rendered))
    if session.summary:
        parts.append("Summary of earlier turns:\n" + session.summary)
    notes = " ".join(INTENT_NOTES[i] for i in intents if i in INTENT_NOTES)
    parts.append(f"Task ({', '.join(i.value for i in intents)}): {notes}")
    text = "\n".join([parts[0], *(neutralise_block_tags(part) for part in parts[1:]), "</session>"])
    if estimate_tokens(text) > max_tokens and session.summary:
        # The summary is the only unbounded part; drop it before the facts.
        return render_session_block(
            session.model_copy(update={"summary": ""}), intents, max_tokens, now=now, time_zone=time_zone,
            asker=asker,
        )
    return text


def render_asker(asker: Member) -> str:
    """Who is asking and which hot-memory preference lines apply to them: the lines of their study
    role (``[CRC]``), their own lines (tagged with their user id) and untagged lines; a line tagged
    with another role or user is someone else's preference."""
    role = asker.study_role
    return (
        f"Asker: {asker.display_name} (user {asker.user_id}), study role {role}.\n"
        f"Preferences that apply to this asker: lines tagged [{role}], lines tagged [{asker.user_id}] and untagged"
        " lines; lines tagged with another role or user are other team members' preferences: do not apply them"
        " to this asker."
    )


# --------------------------------------------------------------- recent turns
def is_refused_turn(turn: Sequence[MessageRecord]) -> bool:
    """A turn answered with the refusal reply. It is never replayed: after a refusal the API asks for
    the refused turn to leave the context, or later turns are refused too (docs/architecture.md,
    "Chat replies")."""
    return any(m.role == "assistant" and REFUSAL_REPLY in m.content for m in turn)


def select_recent_turns(
    window: Sequence[MessageRecord], max_turns: int, *, turn_block: int = 1, first_position: int = 0
) -> list[list[MessageRecord]]:
    """Group the window into turns and keep the recent ones.

    A turn starts at a user message and holds the assistant messages that answer it. Failed
    user messages (no reply), refused turns and leading assistant messages are dropped, so the
    result starts with a user message; tool calls live inside their assistant message, so a
    tool_use is never separated from its tool_result. ``max_turns == 0`` -> ``[]``.

    With ``turn_block == 1`` the last ``max_turns`` turns are kept. With a larger block the
    replay starts on a block boundary: the conversation's messages are numbered from the
    session's first (``first_position`` is the number of ``window[0]``), block ``k`` holds the
    turns whose user message is numbered ``2 * turn_block * k`` to ``2 * turn_block * (k + 1) - 1``,
    and every turn from the start of the block holding the ``max_turns``-th newest turn is kept
    (docs/architecture.md, "Prompt caching"): at least ``max_turns`` turns, at most
    ``max_turns + turn_block - 1``, and the first one changes only once every ``turn_block`` turns.
    """
    if max_turns <= 0:
        return []
    turns: list[tuple[int, list[MessageRecord]]] = []
    for position, m in enumerate(window, start=first_position):
        if m.role == "user":
            if m.status == "failed":
                continue
            turns.append((position, [m]))
        elif turns:
            turns[-1][1].append(m)
    complete = [(position, t) for position, t in turns if len(t) > 1 and not is_refused_turn(t)]
    if len(complete) <= max_turns:
        return [t for _, t in complete]
    span = 2 * max(1, turn_block)
    first_block = complete[-max_turns][0] // span
    return [t for position, t in complete if position // span >= first_block]


def turns_to_messages(turns: Sequence[Sequence[MessageRecord]]) -> list[dict[str, Any]]:
    """Messages-API messages for the selected turns; strictly alternating roles.

    An assistant message with tool calls expands to assistant(tool_use...) ->
    user(tool_result...) -> assistant(text). Adjacent messages of the same role (e.g. two
    doctor lines of an imported transcript) are merged. The same turns always render to the
    same bytes: a later turn's request repeats this one's as its cached prefix.
    """
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for turn in turns:
        for m in turn:
            if m.role == "user":
                push("user", [{"type": "text", "text": m.content}])
                continue
            if m.tool_calls:
                push("assistant", [
                    {"type": "tool_use", "id": tc.id, "name": tc.name, "input": tc.input} for tc in m.tool_calls
                ])
                push("user", [
                    {"type": "tool_result", "tool_use_id": tc.id, "content": tc.result, "is_error": tc.is_error}
                    for tc in m.tool_calls
                ])
            push("assistant", [{"type": "text", "text": m.content or "(no text)"}])
    return out


def _message_tokens(messages: Sequence[dict[str, Any]]) -> int:
    total = 0
    for msg in messages:
        for b in msg["content"]:
            if b["type"] == "text":
                total += estimate_tokens(b["text"])
            elif b["type"] == "tool_use":
                total += estimate_tokens(b["name"] + str(b["input"])) + 4
            elif b["type"] == "tool_result":
                total += estimate_tokens(str(b["content"])) + 4
        total += 4
    return total


# ------------------------------------------------------------------- assembly
def assemble_prompt(
    *,
    hot_memory: HotMemory,
    reports: Sequence[WeeklyReport] | None,
    session: SessionState,
    user_text: str,
    intents: Sequence[Intent],
    budget: PromptBudget,
    yearly: Sequence[YearlySummary] = (),
    tools: Sequence[ToolSpec] = (),
    min_cacheable_tokens: int = 0,
    now: datetime | None = None,
    time_zone: str | None = None,
    asker: Member | None = None,
) -> AssembledPrompt:
    """Assemble one LLM context.

    Args:
        hot_memory: always included (selected under ``budget.hot_memory_tokens``).
        reports: the loaded history (newest first or any order) or ``None`` when the plan
            does not load history; QC plans always pass ``None``.
        session: its window (numbered from ``message_count``) gives the recent turns; its facts
            and summary the session block.
        user_text: the new user message.
        intents: the intents of this call (a task note is added for them).
        tools: the tools the call will carry (they start every cached prefix).
        min_cacheable_tokens: the model's minimum cacheable prompt length: a breakpoint whose
            prefix (tools included) is estimated shorter is not placed.
        now, time_zone: the time the session block states (none when ``now`` is None).
        asker: the member asking; the session block names them and the preference lines that
            apply to them (none when None).

    Returns:
        The system blocks (with cache flags), the messages (a cache breakpoint on the last block
        of the last recent turn, the session block and the user's text in the last message) and
        the measured blocks, in the order they are sent.
    """
    assembly = _Assembly(prefix=tool_tokens(tools), min_cacheable_tokens=min_cacheable_tokens)
    assembly.add_system(PromptBlock("system", SYSTEM_INSTRUCTIONS, estimate_tokens(SYSTEM_INSTRUCTIONS)),
                        cacheable=False)
    assembly.add_system(_hot_memory_block(hot_memory, budget), cacheable=True)
    history_weeks: list[str] = []
    if reports is not None:
        history, history_weeks = _history_block(reports, yearly, budget)
        assembly.add_system(history, cacheable=True)
    turns, messages = assembly.add_recent_turns(session, budget)
    session_text = render_session_block(session, intents, budget.session_tokens, now=now, time_zone=time_zone,
                                        asker=asker)
    messages.append(assembly.add_question(session_text, user_text))
    return AssembledPrompt(
        system=assembly.system,
        messages=messages,
        blocks=assembly.blocks,
        history_weeks=history_weeks,
        recent_turns=len(turns),
        recent_message_ids=[m.message_id for t in turns for m in t],
    )


@dataclass
class _Assembly:
    """The blocks of one context as they are added, with the estimated tokens of the prefix so far
    (tools included): a breakpoint is placed only where that prefix reaches ``min_cacheable_tokens``."""

    prefix: int
    min_cacheable_tokens: int
    blocks: list[PromptBlock] = field(default_factory=list)
    system: list[SystemBlock] = field(default_factory=list)

    def add_system(self, block: PromptBlock, *, cacheable: bool) -> None:
        """A system block, ending with a breakpoint when ``cacheable`` and the prefix is long enough."""
        self.prefix += block.tokens
        block.cache = cacheable and self.prefix >= self.min_cacheable_tokens
        self.blocks.append(block)
        self.system.append(SystemBlock(block.name, block.text, cache=block.cache))

    def add_recent_turns(
        self, session: SessionState, budget: PromptBudget
    ) -> tuple[list[list[MessageRecord]], list[dict[str, Any]]]:
        """The recent turns of the session's window (:func:`select_recent_turns`, numbered from
        its ``message_count``) and their messages; a breakpoint ends the last one (the previous
        turn's end: the next turn repeats everything up to here) when the prefix is long enough."""
        turns = select_recent_turns(
            session.window, budget.recent_turns, turn_block=budget.turn_block,
            first_position=max(0, session.message_count - len(session.window)),
        )
        messages = turns_to_messages(turns)
        if messages:
            turn_tokens = _message_tokens(messages)
            cached = self.prefix + turn_tokens >= self.min_cacheable_tokens
            if cached:
                messages[-1]["content"][-1]["cache_control"] = dict(CACHE_CONTROL)
            ids = [m.message_id for t in turns for m in t]
            self.blocks.append(PromptBlock("recent_turns", "", turn_tokens, ref={"message_ids": ids}, cache=cached))
        return turns, messages

    def add_question(self, session_text: str, user_text: str) -> dict[str, Any]:
        """The last user message: after the last breakpoint, what changes every turn (the session
        block), then the question (last, so that it is the message's final text block)."""
        self.blocks.append(PromptBlock("session", session_text, estimate_tokens(session_text)))
        self.blocks.append(PromptBlock("user_message", user_text, estimate_tokens(user_text)))
        return {"role": "user", "content": [
            {"type": "text", "text": session_text}, {"type": "text", "text": user_text},
        ]}


def _hot_memory_block(hot_memory: HotMemory, budget: PromptBudget) -> PromptBlock:
    """The hot-memory block of the lines that fit ``budget.hot_memory_tokens``; its ``ref`` names
    the version and lines, and whether every stored line is in it."""
    lines = select_hot_memory_lines(hot_memory, budget.hot_memory_tokens)
    text = render_hot_memory_block(hot_memory, lines)
    return PromptBlock(
        "hot_memory", text, estimate_tokens(text),
        ref={"version": hot_memory.version, "line_ids": [ln.line_id for ln in lines],
             "complete": len(lines) == len(hot_memory.lines)},
    )


def _history_block(
    reports: Sequence[WeeklyReport], yearly: Sequence[YearlySummary], budget: PromptBudget
) -> tuple[PromptBlock, list[str]]:
    """The history block (the newest weeks that fit, then the yearly summaries of older periods in
    the tokens left) and its ISO weeks, oldest first."""
    selected = select_history(reports, max_weeks=budget.history_weeks, max_tokens=budget.history_tokens)
    weeks = [r.iso_week for r in selected]
    used = sum(estimate_tokens(render_report(r)) for r in selected)
    years = select_yearly(yearly, selected, max_tokens=max(0, budget.history_tokens - used))
    text = render_history_block(selected, years)
    return PromptBlock(
        "history", text, estimate_tokens(text),
        ref={"weeks": weeks, "revisions": {r.iso_week: r.revision for r in selected},
             "years": [y.year for y in years]},
    ), weeks


__all__ = [
    "HOT_MEMORY_SECTIONS",
    "LAYER_NAMES",
    "AssembledPrompt",
    "PromptBlock",
    "PromptBudget",
    "assemble_prompt",
    "is_refused_turn",
    "render_asker",
    "render_history_block",
    "render_hot_memory_block",
    "render_report",
    "render_session_block",
    "select_recent_turns",
    "tool_tokens",
    "turns_to_messages",
]
