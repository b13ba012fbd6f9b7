"""Job dispatcher: EventBridge Scheduler -> one SQS message per project due.

The event is the schedule's ``Input`` payload as EventBridge Scheduler sends it (e.g.
``{"job": "distill", "time_zone": "Asia/Shanghai"}``), parsed with the Powertools parser into
:class:`~agent_memory.domain.jobs.ScheduleInput` (the time zone defaults to ``PROJECT_TIME_ZONE``). A
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

from agent_memory.config import get_settings
from agent_memory.domain.jobs import ScheduleInput
from agent_memory.jobs.deps import utc_now
from agent_memory.jobs.fanout import dispatch
from agent_memory.observability import logger, metrics
from agent_memory.tracing import tracer
from agent_memory.wiring import build_dispatcher_deps

settings = get_settings()
deps = build_dispatcher_deps(settings)
#: The clock that dates a run without ``"date"`` (a test may replace it).
clock = utc_now


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Enqueue the job of ``event`` for every project due; returns the dispatch report (counts)."""
    schedule = parse(event={"time_zone": settings.project_time_zone, **event}, model=ScheduleInput)
    report = dispatch(schedule, activity=deps.activity, sender=deps.sender, clock=clock)
    metrics.add_metric(name=f"{schedule.job.capitalize()}JobsEnqueued", unit=MetricUnit.Count, value=report.enqueued)
    logger.info("jobs dispatched", extra={"dispatch": report.model_dump(mode="json")})
    return report.model_dump(mode="json")
