"""Job dispatcher: EventBridge Scheduler -> one SQS message per project due (issue 4 items 1, 2, 6).

The event is the schedule's ``Input`` payload as EventBridge Scheduler sends it (e.g.
``{"job": "distill", "time_zone": "Asia/Shanghai"}``), parsed with the Powertools parser into
:class:`~agent_memory.jobs.ScheduleInput` (the time zone defaults to ``PROJECT_TIME_ZONE``). A
backfill adds ``"date": "YYYY-MM-DD"`` (the run's local date) and/or ``"project_id"``.

The projects come from the activity index (Queries, never a Scan); see
:mod:`agent_memory.jobs.fanout` for the periods. An invalid payload or a failed enqueue fails the
invocation: Lambda's asynchronous retries run it again (the jobs are idempotent), then the
on-failure destination (the schedule DLQ, alarmed) keeps the event.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.adapters.dynamo.activity import ActivityRepository
from agent_memory.adapters.sqs import SqsJobQueue
from agent_memory.config import get_settings
from agent_memory.domain.jobs import ScheduleInput
from agent_memory.jobs.deps import utc_now
from agent_memory.jobs.fanout import dispatch
from agent_memory.observability import logger, metrics
from agent_memory.ports import ActivityReader, JobSender
from agent_memory.tracing import tracer
from agent_memory.wiring import bind

settings = get_settings()
bind(settings)
# Module-level collaborators (a test may replace them).
activity: ActivityReader = ActivityRepository()
queue: JobSender = SqsJobQueue(settings.job_queue_url)
clock = utc_now


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Enqueue the job of ``event`` for every project due; returns the dispatch report (counts)."""
    schedule = parse(event={"time_zone": settings.project_time_zone, **event}, model=ScheduleInput)
    report = dispatch(schedule, activity=activity, sender=queue, clock=clock)
    metrics.add_metric(name=f"{schedule.job.capitalize()}JobsEnqueued", unit=MetricUnit.Count, value=report.enqueued)
    logger.info("jobs dispatched", extra={"dispatch": report.model_dump(mode="json")})
    return report.model_dump(mode="json")
