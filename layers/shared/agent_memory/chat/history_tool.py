"""The ``read_history`` tool: weekly reports of an ISO-week range, for a chat call whose routing did
not load the history book (docs/architecture.md, "History").

A question about the project's past that the router missed can still be answered: the model asks
for the weeks it needs (at most :data:`MAX_TOOL_WEEKS` per call) and gets the reports, compact. The
tool is offered only when the call did not load history AND is not a QC call: a QC task never sees
history, through the prompt or through a tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from agent_memory.domain.errors import InvalidInput
from agent_memory.domain.llm import ToolSpec
from agent_memory.domain.models import WeeklyReport
from agent_memory.domain.text import truncate_utf8, utf8_len
from agent_memory.history.reports import check_iso_week
from agent_memory.ports import HistoryReader

#: Most weeks one ``read_history`` call may ask for (the chat's history cap).
MAX_TOOL_WEEKS = 50
#: Cap of the whole tool result (UTF-8 bytes), like every tool result of the loop.
RESULT_MAX_BYTES = 8_000
#: Cap of one week's text in the result (UTF-8 bytes): many weeks fit, none is cut mid-character.
WEEK_MAX_BYTES = 1_200

READ_HISTORY = ToolSpec(
    name="read_history",
    description=(
        "Read the project's history book: the weekly reports (progress, decisions, problems) of an ISO-week "
        "range, oldest first. Use it for questions about the project's past (what happened, was decided or "
        "learned in a past week or period, trends over weeks). At most 50 weeks per call; weeks look like "
        "2024-W09. Never use it for quality-control tasks."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "from_week": {"type": "string", "description": "First ISO week, YYYY-Www (e.g. 2024-W01)."},
            "to_week": {"type": "string", "description": "Last ISO week, YYYY-Www, not before from_week."},
        },
        "required": ["from_week", "to_week"],
        "additionalProperties": False,
    },
)


def week_span(from_week: str, to_week: str) -> int:
    """Number of ISO weeks in ``from_week..to_week`` inclusive (both valid ``YYYY-Www``)."""
    first = date.fromisocalendar(int(from_week[:4]), int(from_week[6:]), 1)
    last = date.fromisocalendar(int(to_week[:4]), int(to_week[6:]), 1)
    return (last - first).days // 7 + 1


def render_reports(reports: Sequence[WeeklyReport], *, max_bytes: int = RESULT_MAX_BYTES) -> str:
    """Compact text of ``reports`` (oldest first): ``[YYYY-Www] summary`` per week, each week at most
    :data:`WEEK_MAX_BYTES`, the whole at most ``max_bytes`` (weeks that no longer fit are named)."""
    parts: list[str] = []
    used = 0
    for n, report in enumerate(reports):
        part = f"[{report.iso_week}] " + truncate_utf8(report.summary.strip(), WEEK_MAX_BYTES)
        if used + utf8_len(part) + 1 > max_bytes:
            rest = [r.iso_week for r in reports[n:]]
            parts.append(f"(not shown, over the size limit: {rest[0]}..{rest[-1]}; ask for fewer weeks)")
            break
        parts.append(part)
        used += utf8_len(part) + 1
    return "\n".join(parts)


class HistoryTools:
    """The ``read_history`` tool set of one chat call (the project id is fixed here, so the model can
    never read another tenant's history).

    Members as every tool set of the loop: ``specs`` (the tool definitions) and
    ``run(name, input) -> (text, is_error)``. ``weeks_read`` lists the weeks returned so far (for the
    call report and the turn's context manifest).
    """

    specs: list[ToolSpec] = [READ_HISTORY]

    def __init__(self, reader: HistoryReader, project_id: str) -> None:
        self._reader = reader
        self._project_id = project_id
        self.weeks_read: list[str] = []

    def run(self, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
        """Run one ``read_history`` call.

        Returns:
            ``(text, False)`` with the reports of the range (or a sentence saying there are none);
            ``(reason, True)`` for an unknown tool or invalid input: not an object, unknown keys,
            a week that is not a real ISO week ``YYYY-Www``, ``from_week`` after ``to_week``, or
            more than :data:`MAX_TOOL_WEEKS` weeks.
        """
        if name != READ_HISTORY.name:
            return f"unknown tool {name}", True
        try:
            first, last = self._range(tool_input)
        except InvalidInput as exc:
            return str(exc), True
        reports = self._reader.list_reports_between(self._project_id, first, last)
        if not reports:
            return f"no weekly reports between {first} and {last}", False
        self.weeks_read.extend(r.iso_week for r in reports if r.iso_week not in self.weeks_read)
        return render_reports(reports), False

    @staticmethod
    def _range(tool_input: Any) -> tuple[str, str]:
        if not isinstance(tool_input, dict):
            raise InvalidInput("input must be an object with from_week and to_week")
        extra = sorted(set(tool_input) - {"from_week", "to_week"})
        if extra:
            raise InvalidInput(f"unknown input keys: {', '.join(extra)}")
        weeks = []
        for key in ("from_week", "to_week"):
            value = tool_input.get(key)
            if not isinstance(value, str):
                raise InvalidInput(f"{key} is required: an ISO week YYYY-Www")
            weeks.append(check_iso_week(value.strip().upper(), key))
        first, last = weeks
        if first > last:
            raise InvalidInput("from_week must not be after to_week")
        span = week_span(first, last)
        if span > MAX_TOOL_WEEKS:
            raise InvalidInput(f"{span} weeks asked for; at most {MAX_TOOL_WEEKS} per call")
        return first, last


__all__ = ["MAX_TOOL_WEEKS", "READ_HISTORY", "HistoryReader", "HistoryTools", "render_reports", "week_span"]
