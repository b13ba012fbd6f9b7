"""Rolling summary of the turns that left the prompt's recent-turns window.

Two summarisers behind one port:
- :class:`ExtractiveSummariser` (offline, deterministic): one line per dropped turn with the
  patient's words, the symptom facts that turn produced and the question asked after it;
  bounded in UTF-8 bytes (the first lines, usually the chief complaint, and the newest lines
  are kept; the middle is condensed into a counted marker).
- :class:`LLMSummariser`: the fast model rewrites the summary with the new turns (free text, not
  a structured call); any LLM failure, a cut, refused or empty answer or too little time left
  before the deadline falls back to the extractive one (counted as ``LLMFallback``, task
  ``summary``).

Symptoms themselves never depend on the summary: they live in the session's facts.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from agent_memory.domain.errors import LLMError
from agent_memory.domain.llm import Effort, LLMRequest, SystemBlock, Usage
from agent_memory.domain.text import truncate_utf8, utf8_len
from agent_memory.domain.turns import MessageRecord
from agent_memory.ports import LLMClient
from agent_memory.structured import TRUNCATED_STOP_REASONS, failure_reason, record_fallback, record_usage

#: The task label of the LLM call (request ``purpose``, metric dimension ``task``).
TASK = "summary"

#: Bytes of the stored summary (UTF-8). About 1,500 tokens of Chinese: with the facts it stays
#: inside the session block's token budget (``PromptBudget.session_tokens``).
SUMMARY_BUDGET_BYTES = 4_500
_PATIENT_BYTES = 180
_REPLY_BYTES = 120
_LINE_BYTES = 420
_KEEP_FIRST_LINES = 2
_OMITTED = re.compile(r"^- \(\u2026 (\d+) earlier turns condensed; symptoms are in the facts \u2026\)$")
_SENTENCE = re.compile(r"[^。！？!?\n；;]*[。！？!?；;]?")


class Summariser(Protocol):
    """Folds dropped turns into the running summary (``budget_bytes`` UTF-8 bytes at most)."""

    def summarise(
        self,
        previous: str,
        turns: Sequence[Sequence[MessageRecord]],
        facts: Sequence[dict[str, Any]],
        *,
        time_zone: str,
        budget_bytes: int,
        deadline: float | None,
    ) -> str: ...


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    match = _SENTENCE.match(flat)
    return (match.group(0) if match and match.group(0) else flat).strip()


def _questions(text: str) -> str:
    flat = " ".join(text.split())
    found = [s.strip() for s in _SENTENCE.findall(flat) if s.strip().endswith(("？", "?"))]
    return " ".join(found)


def _turn_line(turn: Sequence[MessageRecord], facts: Sequence[dict[str, Any]], zone: ZoneInfo) -> str:
    users = [m for m in turn if m.role == "user"]
    replies = [m for m in turn if m.role == "assistant"]
    first = turn[0]
    parts = [first.at.astimezone(zone).strftime("%m-%d %H:%M")]
    if users:
        said = truncate_utf8(" ".join(" ".join(m.content.split()) for m in users), _PATIENT_BYTES)
        parts.append(f"patient: {said}")
        ids = {m.message_id for m in users}
        found = []
        for f in facts:
            if ids & set(f.get("evidence") or []):
                label = f"{f.get('name')} {f.get('status')}"
                if f.get("trend"):
                    label += f" ({f['trend']})"
                found.append(label)
        if found:
            parts.append("symptoms: " + "; ".join(found))
    for m in replies[-1:]:
        asked = _questions(m.content)
        if asked:
            parts.append("asked: " + truncate_utf8(asked, _REPLY_BYTES))
        else:
            parts.append("replied: " + truncate_utf8(_first_sentence(m.content), _REPLY_BYTES))
    return truncate_utf8("- " + " | ".join(parts), _LINE_BYTES)


def _fit(lines: list[str], omitted: int, budget_bytes: int) -> str:
    """Keep the first lines and the newest lines that fit; count the rest in a marker."""
    def render(kept: list[str], n: int) -> str:
        if n <= 0:
            return "\n".join(kept)
        head, tail = kept[:_KEEP_FIRST_LINES], kept[_KEEP_FIRST_LINES:]
        marker = f"- (\u2026 {n} earlier turns condensed; symptoms are in the facts \u2026)"
        return "\n".join([*head, marker, *tail])

    kept = list(lines)
    text = render(kept, omitted)
    while utf8_len(text) > budget_bytes and len(kept) > _KEEP_FIRST_LINES:
        del kept[_KEEP_FIRST_LINES]
        omitted += 1
        text = render(kept, omitted)
    return truncate_utf8(text, budget_bytes)


@dataclass(frozen=True)
class ExtractiveSummariser:
    """Offline, deterministic: one bounded line per turn (see module docstring)."""

    def summarise(
        self,
        previous: str,
        turns: Sequence[Sequence[MessageRecord]],
        facts: Sequence[dict[str, Any]],
        *,
        time_zone: str,
        budget_bytes: int = SUMMARY_BUDGET_BYTES,
        deadline: float | None = None,
    ) -> str:
        zone = ZoneInfo(time_zone)
        lines: list[str] = []
        omitted = 0
        for line in previous.splitlines():
            match = _OMITTED.match(line.strip())
            if match:
                omitted += int(match.group(1))
            elif line.strip():
                lines.append(line.rstrip())
        lines.extend(_turn_line(t, facts, zone) for t in turns if t)
        return _fit(lines, omitted, budget_bytes)


SUMMARY_INSTRUCTIONS = (
    "You keep the running summary of one clinical conversation (a consultation or a research-team chat).\n"
    "You get the summary so far and turns that just left the visible conversation window.\n"
    "Return ONLY the updated summary as short bullet lines (\"- ...\"), in the conversation's language:\n"
    "- keep every symptom with its status (present / denied), onset (dates as given) and trend;\n"
    "- keep medications, test results, the patient's answers to the doctor's questions, decisions,"
    " and open questions;\n"
    "- never invent anything; drop greetings and small talk.\n"
    "Stay under {chars} characters."
)


@dataclass
class LLMSummariser:
    """The fast model through the LLM port, with the extractive fallback.

    ``max_tokens`` leaves room for thinking; ``effort`` is the call's ``output_config.effort``
    (None: the model's default). ``last_usage`` holds the tokens of the latest call (None when
    none answered). A reply cut by ``max_tokens`` (a summary missing its end), a refusal or an
    empty text is never stored: the extractive summary is.
    """

    llm: LLMClient
    model: str
    fallback: Summariser = field(default_factory=ExtractiveSummariser)
    max_tokens: int = 4096
    min_time_left_s: float = 3.0
    per_message_bytes: int = 1_500
    monotonic: Any = time.monotonic
    effort: Effort | None = None
    last_usage: Usage | None = field(default=None, init=False)

    def summarise(
        self,
        previous: str,
        turns: Sequence[Sequence[MessageRecord]],
        facts: Sequence[dict[str, Any]],
        *,
        time_zone: str,
        budget_bytes: int = SUMMARY_BUDGET_BYTES,
        deadline: float | None = None,
    ) -> str:
        def fallback(reason: str | None = None) -> str:
            if reason is not None:
                record_fallback(TASK, reason)
            return self.fallback.summarise(
                previous, turns, facts, time_zone=time_zone, budget_bytes=budget_bytes, deadline=deadline
            )

        self.last_usage = None
        if deadline is not None and deadline - self.monotonic() < self.min_time_left_s:
            return fallback("deadline_passed")
        rendered = "\n".join(
            f"{'patient/user' if m.role == 'user' else 'doctor/assistant'}: "
            f"{truncate_utf8(' '.join(m.content.split()), self.per_message_bytes)}"
            for t in turns for m in t
        )
        request = LLMRequest(
            model=self.model,
            system=[SystemBlock("system", SUMMARY_INSTRUCTIONS.format(chars=budget_bytes // 3))],
            messages=[{"role": "user", "content": [{"type": "text", "text": (
                f"<summary_so_far>\n{previous}\n</summary_so_far>\n<new_turns>\n{rendered}\n</new_turns>"
            )}]}],
            max_tokens=self.max_tokens,
            effort=self.effort,
            deadline=deadline,
            purpose=TASK,
        )
        try:
            response = self.llm.complete(request)
        except LLMError as exc:
            return fallback(failure_reason(exc))
        self.last_usage = response.usage
        record_usage(TASK, response.usage)
        text = response.text.strip()
        if response.stop_reason in TRUNCATED_STOP_REASONS:
            return fallback("truncated")
        if response.refused:
            return fallback("refused")
        if not text:
            return fallback("no_text")
        return truncate_utf8(text, budget_bytes)


__all__ = ["SUMMARY_BUDGET_BYTES", "ExtractiveSummariser", "LLMSummariser", "Summariser"]
