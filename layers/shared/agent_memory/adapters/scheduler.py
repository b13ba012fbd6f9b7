"""EventBridge Scheduler adapter of the :class:`~agent_memory.ports.ReminderScheduler` port.

One schedule per reminder, in the stack's schedule group: ``at(...)`` (deleted by the scheduler
after it ran: ``ActionAfterCompletion=DELETE``) or ``cron(...)``, read in the project's time zone
(``ScheduleExpressionTimezone``), no flexible window, targeting the ReminderFunction with the
Input ``{"project_id", "reminder_id"}`` (ids only: the function reads the text from the table), a
retry policy, and the dead-letter queue for deliveries that failed every retry. Failed calls raise
:class:`~agent_memory.domain.errors.ExternalServiceError`.

The expressions are EventBridge Scheduler's: a one-time ``at(yyyy-mm-ddThh:mm:ss)`` and a recurring
``cron(minutes hours day-of-month month day-of-week year)``, both read in the schedule's
``ScheduleExpressionTimezone`` (:func:`schedule_expression`, :func:`recurrence_from_cron`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agent_memory.adapters.errors import service_error
from agent_memory.domain.reminders import Reminder
from agent_memory.domain.when import Recurrence, When

#: Scheduler retries of a failed invocation, and how old an event may get (seconds) before the DLQ.
RETRY_ATTEMPTS = 3
MAX_EVENT_AGE_S = 3600


#: Day-of-week names of a cron expression, Monday first (``Recurrence.weekdays`` counts from 0 = Monday).
CRON_DAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
_CRON = re.compile(r"cron\((?P<mi>\d{1,2}) (?P<h>\d{1,2}) (?P<dom>\d{1,2}|\*|\?) \* (?P<dow>[A-Z,]+|\*|\?) \*\)")


def cron_expression(recurrence: Recurrence) -> str:
    """``cron(M H dom * dow *)`` of ``recurrence`` (one of day-of-month and day-of-week is ``?``)."""
    r = recurrence
    if r.day_of_month is not None:
        return f"cron({r.minute} {r.hour} {r.day_of_month} * ? *)"
    if r.weekdays:
        return f"cron({r.minute} {r.hour} ? * {','.join(CRON_DAYS[d] for d in r.weekdays)} *)"
    return f"cron({r.minute} {r.hour} * * ? *)"


def schedule_expression(when: When) -> str:
    """``at(yyyy-mm-ddThh:mm:ss)`` of a one-time ``when``, :func:`cron_expression` of a recurring one."""
    if when.recurrence is not None:
        return cron_expression(when.recurrence)
    assert when.at is not None
    return f"at({when.at.strftime('%Y-%m-%dT%H:%M:%S')})"


def recurrence_from_cron(expression: str) -> Recurrence:
    """The :class:`Recurrence` of an expression written by :func:`cron_expression`.

    Raises:
        ValueError: not such an expression.
    """
    m = _CRON.fullmatch(expression)
    if m is None:
        raise ValueError("not a reminder cron expression")
    dom, dow = m.group("dom"), m.group("dow")
    weekdays = tuple(CRON_DAYS.index(d) for d in dow.split(",")) if dow not in ("*", "?") else ()
    return Recurrence(int(m.group("h")), int(m.group("mi")), weekdays=weekdays,
                      day_of_month=int(dom) if dom.isdigit() else None)


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

    def expression(self, when: When) -> str:
        """The schedule expression of ``when`` (:func:`schedule_expression`)."""
        return schedule_expression(when)

    def recurrence(self, expression: str) -> Recurrence:
        """The recurrence of a recurring reminder's expression (:func:`recurrence_from_cron`)."""
        return recurrence_from_cron(expression)

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


__all__ = [
    "CRON_DAYS", "EventBridgeReminderScheduler", "SchedulerTarget", "cron_expression", "recurrence_from_cron",
    "schedule_expression", "schedule_request",
]
