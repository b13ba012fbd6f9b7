"""The ``read_history`` tool: weekly reports of an ISO-week range, for a chat call whose routing did
not load the history book (docs/architecture.md, "History").

A question about the project's past that the router missed can still be answered: the model asks
for the weeks it needs (at most :data:`MAX_TOOL_WEEKS` per call) and gets the reports, compact. The
tool is offered only when the call did not load history AND is not a QC call: a QC task never sees
history, through the prompt or through a tool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from agent_memory.domain.errors import InvalidInput
from agent_memory.domain.llm import ToolSpec
from agent_memory.domain.models import WeeklyReport
from agent_memory.domain.text import truncate_utf8, utf8_len
from agent_memory.history.reports import check_iso_week
from agent_memory.ports import HistoryReader

if TYPE_CHECKING:
    from agent_memory.history.anchors import WeekRange

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
        "learned in a past week or period, trends over weeks). Give either the period as the user named it "
        "(period: e.g. 上个月, last quarter, 国庆节前后, week 46, since the first subject was enrolled), which is "
        "resolved to ISO weeks in the project's time zone as the history book itself resolves it, or from_week "
        "and to_week. At most 50 weeks per call; weeks look like 2024-W09. Never use it for quality-control tasks."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "period": {"type": "string", "description": "The period in the user's words (any language)."},
            "from_week": {"type": "string", "description": "First ISO week, YYYY-Www (e.g. 2024-W01)."},
            "to_week": {"type": "string", "description": "Last ISO week, YYYY-Www, not before from_week."},
        },
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

    def __init__(self, reader: HistoryReader, project_id: str,
                 resolve: Callable[[str], WeekRange | None] | None = None) -> None:
        """``resolve``: the period phrase -> its ISO-week range (the turn's clock, the project's zone
        and hot memory, as :func:`agent_memory.history.loading.anchor_of` resolves a question);
        None: only ``from_week`` / ``to_week`` are accepted."""
        self._reader = reader
        self._project_id = project_id
        self._resolve = resolve
        self.weeks_read: list[str] = []

    def run(self, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
        """Run one ``read_history`` call.

        Returns:
            ``(text, False)`` with the reports of the range (the weeks of it without a report named,
            or a sentence saying there are none); ``(reason, True)`` for an unknown tool or invalid
            input: not an object, unknown keys, a period naming no past period, a week that is not a
            real ISO week ``YYYY-Www``, ``from_week`` after ``to_week``, or more than
            :data:`MAX_TOOL_WEEKS` weeks from ``from_week`` to ``to_week``. A period longer than
            that gives its newest :data:`MAX_TOOL_WEEKS` weeks and says so.
        """
        if name != READ_HISTORY.name:
            return f"unknown tool {name}", True
        try:
            first, last, note = self._range(tool_input)
        except InvalidInput as exc:
            return str(exc), True
        reports = self._reader.list_reports_between(self._project_id, first, last)
        have = {r.iso_week for r in reports}
        missing = [w for w in _weeks(first, last) if w not in have]
        if not reports:
            return f"{note}no weekly reports between {first} and {last}", False
        self.weeks_read.extend(r.iso_week for r in reports if r.iso_week not in self.weeks_read)
        more = " ..." if len(missing) > 12 else ""
        gap = f"\nNo weekly report for: {', '.join(missing[:12])}{more}" if missing else ""
        return note + render_reports(reports) + gap, False

    def _range(self, tool_input: Any) -> tuple[str, str, str]:
        if not isinstance(tool_input, dict):
            raise InvalidInput("input must be an object with period, or from_week and to_week")
        extra = sorted(set(tool_input) - {"from_week", "to_week", "period"})
        if extra:
            raise InvalidInput(f"unknown input keys: {', '.join(extra)}")
        period = tool_input.get("period")
        if isinstance(period, str) and period.strip() and self._resolve is not None:
            found = self._resolve(period)
            if found is None:
                raise InvalidInput("the period names no past weeks; give from_week and to_week")
            weeks = found.weeks()
            note = f"Period {found.label}; its newest {MAX_TOOL_WEEKS} weeks:\n" if len(weeks) > MAX_TOOL_WEEKS else ""
            return weeks[-MAX_TOOL_WEEKS:][0], weeks[-1], note
        weeks = []
        for key in ("from_week", "to_week"):
            value = tool_input.get(key)
            if not isinstance(value, str):
                raise InvalidInput(f"{key} is required (or period): an ISO week YYYY-Www")
            weeks.append(check_iso_week(value.strip().upper(), key))
        first, last = weeks
        if first > last:
            raise InvalidInput("from_week must not be after to_week")
        span = week_span(first, last)
        if span > MAX_TOOL_WEEKS:
            raise InvalidInput(f"{span} weeks asked for; at most {MAX_TOOL_WEEKS} per call")
        return first, last, ""


def _weeks(first: str, last: str) -> list[str]:
    """Every ISO week from ``first`` to ``last`` (valid ``YYYY-Www``), oldest first."""
    start = date.fromisocalendar(int(first[:4]), int(first[6:]), 1)
    out = []
    for n in range(week_span(first, last)):
        year, week, _ = (start + timedelta(days=7 * n)).isocalendar()
        out.append(f"{year}-W{week:02d}")
    return out


__all__ = ["MAX_TOOL_WEEKS", "READ_HISTORY", "HistoryReader", "HistoryTools", "render_reports", "week_span"]
