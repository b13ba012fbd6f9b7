"""The reminder function: one firing of a reminder's EventBridge Scheduler schedule.

The schedule's Input is ``{"project_id", "reminder_id"}`` (ids only); the use case
(``agent_memory.reminders.service.deliver``) reads the reminder, publishes it to the reminder topic
(message attributes ``project_id`` and ``user_id``), POSTs it to the project's webhook when there is
one (HMAC-signed), and records the firing. A failure raises: the scheduler retries, then the DLQ.
No LLM, no HTTP route; the reminder text is never logged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field

from agent_memory.domain.ids import ID_PATTERN
from agent_memory.observability import logger, metrics
from agent_memory.ports import ReminderChannel
from agent_memory.reminders.service import ReminderDeps, deliver


@dataclass(frozen=True)
class ReminderFunctionDeps:
    """The reminder function's collaborators (built by ``wiring.build_reminder_function``):
    the reminder use cases' (None without ``REMINDER_SCHEDULE_GROUP``) and the delivery channels."""

    reminders: ReminderDeps | None
    channel: ReminderChannel


class ReminderFiring(BaseModel):
    """The schedule's Input."""

    model_config = ConfigDict(extra="ignore")

    project_id: str = Field(pattern=ID_PATTERN)
    reminder_id: str = Field(pattern=ID_PATTERN)


class ReminderDelivery:
    """The reminder function's event handler: ``resolve(event, context)`` delivers one reminder
    and returns the outcome (status, ids, channels)."""

    def __init__(self, deps: ReminderFunctionDeps) -> None:
        self.deps = deps

    def resolve(self, event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        """Deliver the reminder the firing names.

        Raises:
            RuntimeError: no schedule group is configured.
            ValidationError: the event is not a firing.
        """
        if self.deps.reminders is None:
            raise RuntimeError("REMINDER_SCHEDULE_GROUP is not configured")
        firing = ReminderFiring.model_validate(event)
        result = deliver(self.deps.reminders, self.deps.channel, firing.project_id, firing.reminder_id)
        metrics.add_metric(name="RemindersDelivered" if result["status"] == "delivered" else "RemindersSkipped",
                           unit="Count", value=1)
        logger.info("reminder firing", extra={k: v for k, v in result.items() if k != "text"})
        return result


__all__ = ["ReminderDelivery", "ReminderFiring", "ReminderFunctionDeps"]
