"""Reminder function: one firing of a reminder's EventBridge Scheduler schedule.

The schedule's Input is ``{"project_id", "reminder_id"}`` (ids only); the use case
(``agent_memory.reminders.service.deliver``) reads the reminder, publishes it to the reminder topic
(message attributes ``project_id`` and ``user_id``), POSTs it to the project's webhook when there is
one (HMAC-signed), and records the firing. A failure raises: the scheduler retries, then the DLQ.
No LLM, no HTTP route; the reminder text is never logged.
"""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field

from agent_memory.config import get_settings
from agent_memory.http.requests import ID_PATTERN
from agent_memory.observability import logger, metrics
from agent_memory.reminders.service import deliver
from agent_memory.wiring import build_reminder_channel, build_reminder_deps

settings = get_settings()
deps = build_reminder_deps(settings)
channel = build_reminder_channel(settings)


class ReminderFiring(BaseModel):
    """The schedule's Input."""

    model_config = ConfigDict(extra="ignore")

    project_id: str = Field(pattern=ID_PATTERN)
    reminder_id: str = Field(pattern=ID_PATTERN)


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Deliver one reminder; returns the outcome (status, ids, channels)."""
    if deps is None:
        raise RuntimeError("REMINDER_SCHEDULE_GROUP is not configured")
    firing = ReminderFiring.model_validate(event)
    result = deliver(deps, channel, firing.project_id, firing.reminder_id)
    metrics.add_metric(name="RemindersDelivered" if result["status"] == "delivered" else "RemindersSkipped",
                       unit="Count", value=1)
    logger.info("reminder firing", extra={k: v for k, v in result.items() if k != "text"})
    return result
