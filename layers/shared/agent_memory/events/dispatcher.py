"""The job dispatcher: EventBridge Scheduler -> one SQS message per project due.

The event is the schedule's ``Input`` payload as EventBridge Scheduler sends it (e.g.
``{"job": "distill", "time_zone": "Asia/Shanghai"}``), parsed with the Powertools parser into
:class:`~agent_memory.domain.jobs.ScheduleInput` (the time zone defaults to ``PROJECT_TIME_ZONE``).
A backfill adds ``"date": "YYYY-MM-DD"`` (the run's local date) and/or ``"project_id"``.

The projects come from the activity index (Queries, never a Scan); see
:mod:`agent_memory.jobs.fanout` for the periods. An invalid payload or a failed enqueue fails the
invocation: Lambda's asynchronous retries run it again (the jobs are idempotent), then the
on-failure destination (the schedule DLQ, alarmed) keeps the event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.domain.jobs import ScheduleInput
from agent_memory.jobs.deps import utc_now
from agent_memory.jobs.fanout import dispatch
from agent_memory.observability import logger, metrics
from agent_memory.ports import ActivityReader, JobSender


@dataclass(frozen=True)
class DispatcherDeps:
    """The dispatcher's collaborators (built by ``wiring.build_job_dispatcher``): who was active,
    the queue to fan out to, the time zone of a payload without one, and the clock that dates a
    run without ``"date"`` (UTC)."""

    activity: ActivityReader
    sender: JobSender
    default_time_zone: str
    clock: Callable[[], datetime] = field(default=utc_now)


class JobDispatcher:
    """The dispatcher's event handler: ``resolve(event, context)`` enqueues the job of the
    schedule's payload for every project due and returns the dispatch report (counts)."""

    def __init__(self, deps: DispatcherDeps) -> None:
        self.deps = deps

    def resolve(self, event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        """Parse the payload, fan out, count and log the report.

        Raises:
            ValidationError: the payload is not a schedule input (the invocation fails).
            EnqueueFailed: some requests were not enqueued.
        """
        deps = self.deps
        schedule = parse(event={"time_zone": deps.default_time_zone, **event}, model=ScheduleInput)
        report = dispatch(schedule, activity=deps.activity, sender=deps.sender, clock=deps.clock)
        metrics.add_metric(name=f"{schedule.job.capitalize()}JobsEnqueued", unit=MetricUnit.Count,
                           value=report.enqueued)
        logger.info("jobs dispatched", extra={"dispatch": report.model_dump(mode="json")})
        return report.model_dump(mode="json")


__all__ = ["DispatcherDeps", "JobDispatcher"]
