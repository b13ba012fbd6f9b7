"""EventBridge Scheduler adapter of the :class:`~agent_memory.ports.ReminderScheduler` port.

One schedule per reminder, in the stack's schedule group: ``at(...)`` (deleted by the scheduler
after it ran: ``ActionAfterCompletion=DELETE``) or ``cron(...)``, read in the project's time zone
(``ScheduleExpressionTimezone``), no flexible window, targeting the ReminderFunction with the
Input ``{"project_id", "reminder_id"}`` (ids only: the function reads the text from the table), a
retry policy, and the dead-letter queue for deliveries that failed every retry. Failed calls raise
:class:`~agent_memory.domain.errors.ExternalServiceError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agent_memory.adapters.errors import service_error
from agent_memory.domain.reminders import Reminder

#: Scheduler retries of a failed invocation, and how old an event may get (seconds) before the DLQ.
RETRY_ATTEMPTS = 3
MAX_EVENT_AGE_S = 3600


@dataclass(frozen=True)
class SchedulerTarget:
    """Where the schedules go: the group, the function, the role the scheduler assumes, the DLQ."""

    group: str
    function_arn: str
    role_arn: str
    dlq_arn: str


def schedule_request(reminder: Reminder, target: SchedulerTarget) -> dict[str, Any]:
    """The ``CreateSchedule`` parameters of ``reminder``."""
    request: dict[str, Any] = {
        "Name": reminder.schedule_name,
        "GroupName": target.group,
        "ScheduleExpression": reminder.expression,
        "ScheduleExpressionTimezone": reminder.time_zone,
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "State": "ENABLED",
        "Description": f"reminder {reminder.reminder_id} of project {reminder.project_id}",
        "Target": {
            "Arn": target.function_arn,
            "RoleArn": target.role_arn,
            "Input": json.dumps({"project_id": reminder.project_id, "reminder_id": reminder.reminder_id}),
            "RetryPolicy": {"MaximumRetryAttempts": RETRY_ATTEMPTS, "MaximumEventAgeInSeconds": MAX_EVENT_AGE_S},
            "DeadLetterConfig": {"Arn": target.dlq_arn},
        },
    }
    if not reminder.recurring:
        request["ActionAfterCompletion"] = "DELETE"
    return request


class EventBridgeReminderScheduler:
    """Creates and deletes reminder schedules with a boto3 ``scheduler`` client (lazily created)."""

    def __init__(self, target: SchedulerTarget, client: Any | None = None) -> None:
        self._target = target
        self._client = client

    def _scheduler(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("scheduler")
        return self._client

    def create(self, reminder: Reminder) -> None:
        """``CreateSchedule`` (see :func:`schedule_request`)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._scheduler().create_schedule(**schedule_request(reminder, self._target))
        except (BotoCoreError, ClientError) as exc:
            raise service_error("scheduler", exc) from exc

    def delete(self, reminder: Reminder) -> None:
        """``DeleteSchedule``; a schedule already gone (a one-time one that ran) is no error."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._scheduler().delete_schedule(Name=reminder.schedule_name, GroupName=self._target.group)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return
            raise service_error("scheduler", exc) from exc
        except BotoCoreError as exc:
            raise service_error("scheduler", exc) from exc


__all__ = ["EventBridgeReminderScheduler", "SchedulerTarget", "schedule_request"]
