"""The weekly report's feedback section: how the week's answers were rated, and the reasons that
recur. Built from the week's feedback events of the flow log (the archiving job reads them)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from agent_memory.domain.feedback import FEEDBACK_SOURCE
from agent_memory.domain.jobs import FlowLogEntry
from agent_memory.domain.text import truncate_utf8, utf8_len

#: Section label of the feedback lines (``[反馈] ...``, like the report's other sections).
FEEDBACK_LABEL = "反馈"
#: At most this many reasons are listed; a reason is quoted at most this many bytes.
MAX_REASONS = 3
REASON_MAX_BYTES = 120


def split_feedback(entries: Sequence[FlowLogEntry]) -> tuple[list[FlowLogEntry], list[FlowLogEntry]]:
    """``(messages, feedback events)`` of a flow-log read, each in its original order."""
    messages = [m for m in entries if m.source != FEEDBACK_SOURCE]
    events = [m for m in entries if m.source == FEEDBACK_SOURCE]
    return messages, events


def _norm(reason: str) -> str:
    return "".join(ch for ch in reason.lower() if ch.isalnum())


def feedback_lines(events: Sequence[FlowLogEntry]) -> list[str]:
    """The section's lines: the counts per rating, then the down-votes' most frequent reasons
    (recurring ones first, ``×n`` when given more than once). ``[]`` without events.

    A rater who rated the same message twice counts once (their last rating).
    """
    last: dict[tuple[str, str | None], FlowLogEntry] = {}
    for e in sorted(events, key=lambda e: e.at):
        last[(e.message_id, e.user_id)] = e
    if not last:
        return []
    rated = list(last.values())
    up = sum(1 for e in rated if e.rating == "up")
    down = sum(1 for e in rated if e.rating == "down")
    ids = ",".join(dict.fromkeys(e.message_id for e in rated))
    lines = [f"[{FEEDBACK_LABEL}] 回答评价 up {up} / down {down} [{ids}]"]
    reasons: Counter[str] = Counter()
    first: dict[str, FlowLogEntry] = {}
    for e in rated:
        if e.rating != "down" or not e.content.strip():
            continue
        key = _norm(e.content)
        if not key:
            continue
        reasons[key] += 1
        first.setdefault(key, e)
    for key, n in sorted(reasons.items(), key=lambda kv: (-kv[1], first[kv[0]].at))[:MAX_REASONS]:
        text = " ".join(first[key].content.split())
        quoted = truncate_utf8(text, REASON_MAX_BYTES)
        if quoted != text:
            quoted = truncate_utf8(quoted, REASON_MAX_BYTES - 3) + "…"
        count = f" ×{n}" if n > 1 else ""
        lines.append(f"[{FEEDBACK_LABEL}] 差评理由 down-vote reason: {quoted}{count} [{first[key].message_id}]")
    return lines


def with_feedback_section(summary: str, events: Sequence[FlowLogEntry], max_bytes: int) -> str:
    """``summary`` followed by the feedback lines that fit within ``max_bytes`` UTF-8 bytes (a line
    that does not fit is left out whole; the summary itself is never cut)."""
    out = summary
    for line in feedback_lines(events):
        candidate = f"{out}\n{line}" if out else line
        if utf8_len(candidate) > max_bytes:
            break
        out = candidate
    return out


__all__ = ["FEEDBACK_LABEL", "feedback_lines", "split_feedback", "with_feedback_section"]
