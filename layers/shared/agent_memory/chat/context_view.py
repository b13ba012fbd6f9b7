"""Rebuild what the LLM was given for a turn, from the turn's context manifest (admins).

The manifest stores small blocks inline (system instructions, session block) and the
large ones by reference (hot-memory version and line ids, report weeks, message ids), so
message items stay small; the text is rebuilt here with the same renderers the prompt used.
Blocks come in the order they were sent; one a cache breakpoint ended says so, and each LLM
context shows what its model calls cost (docs/architecture.md, "Prompt caching").
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from agent_memory.domain.errors import MessageNotFound
from agent_memory.domain.text import estimate_tokens

if TYPE_CHECKING:
    from agent_memory.ports import ContextStore


def turn_context(store: ContextStore, project_id: str, session_id: str, message_id: str) -> dict[str, Any]:
    """The blocks sent for the turn answered by ``message_id`` (the assistant message id
    returned by the chat endpoint).

    Returns:
        ``{"message_id", "intents", "asker", "calls": [{"intents", "load_history", "blocks":
        [{"name", "tokens", "text"}], "usage", "model_calls"}]}``; a call whose question named a
        period has ``"history_period": {"text", "first", "last", "missing"}`` (the weeks loaded and
        those of them without a report; its history block names them too); a block whose source changed
        since the turn (a corrected report) carries ``"changed_since_turn": true``, one that a
        cache breakpoint ended ``"cache": true``. ``usage`` is the context's summed token usage
        (null offline, and for turns recorded before usage was kept), ``model_calls`` lists each
        Messages-API call's stop reason and usage. A call whose model used the ``read_history`` tool
        has ``"read_history": {"weeks": [...]}`` and a last block ``read_history`` with the reports read.
        Messages-API call's stop reason and usage. ``asker``: who asked (``user_id``,
        ``display_name``, ``study_role`` when the turn ran; null for turns recorded before).
        ``redactions``: what the identifier firewall withheld, by kind (never the values), per
        call (from the message, the tool results and the reply) and for the turn (their sum).

    Raises:
        ProjectNotFound, MessageNotFound.
    """
    store.get_project(project_id)
    message, manifest = store.get_message(project_id, session_id, message_id)
    if manifest is None:
        raise MessageNotFound(f"message {message_id} has no recorded context (not an assistant reply)")
    calls_out: list[dict[str, Any]] = []
    for i, call in enumerate(manifest.get("calls", [])):
        blocks_out = []
        for block in call.get("blocks", []):
            text, changed = _rebuild(store, project_id, session_id, block)
            entry: dict[str, Any] = {"name": block["name"], "tokens": block["tokens"], "text": text}
            if block.get("cache"):
                entry["cache"] = True
            if changed:
                entry["changed_since_turn"] = True
            blocks_out.append(entry)
        read = call.get("read_history")
        if read:
            # What the model read through the read_history tool (the same text it was given).
            from agent_memory.chat.history_tool import render_reports  # loads with the chat agent

            weeks = list(read.get("weeks", []))
            reports = sorted(store.get_reports(project_id, weeks), key=lambda r: r.iso_week)
            text = render_reports(reports)
            blocks_out.append({"name": "read_history", "tokens": estimate_tokens(text), "text": text})
        period = next((b.get("ref", {}).get("period") for b in call.get("blocks", []) if b.get("name") == "history"),
                      None)
        calls_out.append({
            "intents": call.get("intents", []), "load_history": call.get("load_history", False),
            **({"history_period": period} if period else {}),
            **({"read_history": {"weeks": list(read.get("weeks", []))}} if read else {}),
            "blocks": blocks_out, "usage": call.get("usage"), "model_calls": call.get("model_calls", []),
            "truncated": bool(call.get("truncated", False)), "refused": bool(call.get("refused", False)),
            "redactions": _redactions(manifest, i, call),
        })
    total: Counter[str] = Counter()
    for call in calls_out:
        total.update(call["redactions"])
    return {"message_id": message.message_id, "intents": manifest.get("intents", []),
            "asker": manifest.get("asker"), "calls": calls_out, "redactions": dict(sorted(total.items()))}


def _redactions(manifest: dict[str, Any], i: int, call: dict[str, Any]) -> dict[str, int]:
    """What the firewall withheld in call ``i``, by kind: the call's manifest entry, or for turns
    recorded before it kept them there, the answer's ``calls[i].redactions``."""
    found = call.get("redactions")
    if found is None:
        answered = ((manifest.get("answer") or {}).get("calls") or [])
        found = (answered[i] if i < len(answered) else {}).get("redactions")
    return {str(k): int(v) for k, v in (found or {}).items()}


def _rebuild(store: ContextStore, project_id: str, session_id: str, block: dict[str, Any]) -> tuple[str, bool]:
    if "text" in block:
        return str(block["text"]), False
    # The prompt's renderers (and the chat agent they import) load on the first inspection only:
    # the API function that serves this rarely used route keeps its cold start short.
    from agent_memory.chat.prompt import (
        render_history_block,
        render_hot_memory_block,
        select_recent_turns,
        turns_to_messages,
    )

    ref = block.get("ref") or {}
    name = block["name"]
    if name == "hot_memory":
        hot = store.get_hot_memory_revision(project_id, int(ref.get("version", 0)))
        if hot is None:
            return "", False
        wanted = set(ref.get("line_ids", []))
        lines = [ln for ln in hot.lines if ln.line_id in wanted] if wanted else hot.lines
        return render_hot_memory_block(hot, lines), False
    if name == "history":
        weeks = list(ref.get("weeks", []))
        reports = sorted(store.get_reports(project_id, weeks), key=lambda r: r.iso_week)
        revisions = ref.get("revisions", {})
        changed = (
            any(revisions.get(r.iso_week, r.revision) != r.revision for r in reports) or len(reports) != len(weeks)
        )
        wanted_years = set(ref.get("years", []))
        years = [y for y in store.load_yearly_summaries(project_id) if y.year in wanted_years] if wanted_years else []
        period = ref.get("period") or {}
        text = render_history_block(reports, years, period=period.get("text"), missing=period.get("missing", []))
        return text, changed
    if name == "recent_turns":
        ids = list(ref.get("message_ids", []))
        found = store.get_messages(project_id, session_id, ids)
        window = [found[i] for i in ids if i in found]
        messages = turns_to_messages(select_recent_turns(window, max_turns=len(ids) or 1))
        rendered: list[str] = []
        for m in messages:
            for b in m["content"]:
                if b["type"] == "text":
                    rendered.append(f"{m['role']}: {b['text']}")
                elif b["type"] == "tool_use":
                    rendered.append(f"{m['role']}: [tool_use {b['name']} {b['input']}]")
                else:
                    rendered.append(f"{m['role']}: [tool_result {b['content']}]")
        return "\n".join(rendered), False
    if name == "user_message":
        found = store.get_messages(project_id, session_id, [ref.get("message_id", "")])
        msg = next(iter(found.values()), None)
        return (msg.content if msg else ""), False
    return "", False
