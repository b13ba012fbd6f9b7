"""The reminder tools of the chat loop: ``schedule_reminder(text, when)``, ``list_reminders()``,
``cancel_reminder(reminder_id)``.

A tool set like the clinical one (``specs`` and ``run(name, input) -> (text, is_error)``), bound to
one project, one asker and the hot memory the turn read, so the model can only manage the asker's
own reminders. Refusals (a past or unreadable time, too long a text, too many reminders, someone
else's reminder) come back as an error result whose text says why, so the reply can say it; nothing
is scheduled then.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from agent_memory.domain.errors import DomainError
from agent_memory.domain.llm import ToolSpec
from agent_memory.domain.models import HotMemoryLine
from agent_memory.reminders.service import ReminderDeps, cancel_reminder, list_reminders, schedule_reminder

SCHEDULE_REMINDER = ToolSpec(
    name="schedule_reminder",
    description=(
        "Schedule a reminder for the user who is asking. 'when' is a time in the project's time zone: one "
        "local date-time (ISO 'YYYY-MM-DDTHH:MM', or the user's own words such as '明天上午10点', "
        "'on Friday at 4pm', 'in 2 hours') or a recurrence ('every Monday 09:00', '每周一早上9点', "
        "'every weekday 08:30', '每月1号'). The result says when it will fire, and whether the user's "
        "preferences moved it; tell the user exactly that. Call it only when the user asks now to be "
        "reminded: never for what was said before ('你上次说会提醒我…', 'you said you'd remind me'), a question "
        "about an earlier reminder or a complaint that one did not come (list_reminders answers those)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to remind of (at most 500 characters)."},
            "when": {"type": "string", "description": "When, in the project's time zone (see above)."},
        },
        "required": ["text", "when"],
        "additionalProperties": False,
    },
)
LIST_REMINDERS = ToolSpec(
    name="list_reminders",
    description="List the asking user's active reminders (id, text, when, next firing).",
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
)
CANCEL_REMINDER = ToolSpec(
    name="cancel_reminder",
    description="Cancel one of the asking user's reminders by its id (from list_reminders).",
    input_schema={
        "type": "object",
        "properties": {"reminder_id": {"type": "string"}},
        "required": ["reminder_id"],
        "additionalProperties": False,
    },
)
REMINDER_TOOL_NAMES = frozenset({SCHEDULE_REMINDER.name, LIST_REMINDERS.name, CANCEL_REMINDER.name})


class ReminderTools:
    """The reminder tool set of one turn (see the module docstring).

    ``screen``: the identifier firewall under the project's policy, applied to a reminder's text
    before anything is scheduled or stored (it returns the scrubbed text, or raises
    ``IdentifiersRejected``, answered to the model as "not scheduled" with the kinds found).
    """

    specs: list[ToolSpec] = [SCHEDULE_REMINDER, LIST_REMINDERS, CANCEL_REMINDER]

    def __init__(
        self,
        deps: ReminderDeps,
        *,
        project_id: str,
        time_zone: str,
        user_id: str,
        study_role: str | None = None,
        hot_lines: Sequence[HotMemoryLine] = (),
        screen: Callable[[str], str] | None = None,
    ) -> None:
        self._deps = deps
        self._screen = screen
        self._project_id = project_id
        self._time_zone = time_zone
        self._user_id = user_id
        self._study_role = study_role
        self._hot_lines = list(hot_lines)

    def run(self, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
        """Run one tool call; returns (result text, is_error)."""
        args = tool_input if isinstance(tool_input, dict) else {}
        try:
            if name == SCHEDULE_REMINDER.name:
                text, when = args.get("text"), args.get("when")
                if not isinstance(text, str) or not isinstance(when, str):
                    return "schedule_reminder needs 'text' and 'when' as strings", True
                if self._screen is not None:  # the identifier firewall (raises IdentifiersRejected)
                    text = self._screen(text)
                done = schedule_reminder(
                    self._deps, project_id=self._project_id, time_zone=self._time_zone, owner=self._user_id,
                    text=text, when=when, study_role=self._study_role, hot_lines=self._hot_lines,
                )
                return _json(done.as_result()), False
            if name == LIST_REMINDERS.name:
                found = list_reminders(self._deps, self._project_id, user_id=self._user_id, admin=False)
                return _json({"reminders": [
                    {"reminder_id": r.reminder_id, "text": r.text, "when": r.description,
                     "next_fire_local": r.next_fire_local, "time_zone": r.time_zone} for r in found
                ]}), False
            if name == CANCEL_REMINDER.name:
                rid = args.get("reminder_id")
                if not isinstance(rid, str) or not rid:
                    return "cancel_reminder needs 'reminder_id'", True
                cancelled = cancel_reminder(self._deps, self._project_id, rid, user_id=self._user_id, admin=False)
                return _json({"ok": True, "reminder_id": cancelled.reminder_id, "text": cancelled.text,
                              "status": cancelled.status}), False
        except DomainError as exc:
            return f"not scheduled: {exc.reason}" if name == SCHEDULE_REMINDER.name else exc.reason, True
        return f"unknown tool {name}", True


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


__all__ = ["CANCEL_REMINDER", "LIST_REMINDERS", "REMINDER_TOOL_NAMES", "SCHEDULE_REMINDER", "ReminderTools"]
