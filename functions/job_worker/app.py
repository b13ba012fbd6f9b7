"""Job worker: SQS batch of :class:`~agent_memory.domain.jobs.JobRequest` -> ``run_job`` per record.

Powertools batch processing with partial batch responses (the event source mapping has
``ReportBatchItemFailures``): each record is parsed as a ``JobRequest`` (a malformed record
fails alone, it is never run with a partial object), a record whose job raises fails alone,
and only failed records return to the queue (after 3 receives: the job DLQ, alarmed). The
jobs are idempotent, so a redelivered record changes nothing more.

Never logs message text: records carry ids and a date; failures are logged by exception type.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.parser.types import Json
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.config import get_settings
from agent_memory.domain.errors import ProjectNotFound
from agent_memory.domain.jobs import JobReport, JobRequest
from agent_memory.governance.erasure import GovernanceDeps, run_erasure
from agent_memory.governance.removal import run_removal
from agent_memory.jobs.runner import run_job
from agent_memory.observability import logger, metrics
from agent_memory.tracing import tracer
from agent_memory.wiring import build_governance_deps, build_job_deps


class JobRecord(SqsRecordModel):
    """An SQS record whose body is a JSON :class:`JobRequest`."""

    body: Json[JobRequest]


settings = get_settings()
deps = build_job_deps(settings)
processor = BatchProcessor(event_type=EventType.SQS, model=JobRecord)


@tracer.capture_method(capture_response=False)
def record_handler(record: JobRecord) -> dict[str, Any]:
    """Run one job for one project; raise to fail this record only.

    An unknown project is not retried (a retry cannot create it): logged, counted, dropped.
    """
    request = record.body
    job = request.job.capitalize()
    if request.job == "erase":
        return erase(request)
    try:
        report: JobReport = run_job(deps, request)
    except ProjectNotFound:
        logger.warning(
            "job for an unknown project dropped", extra={"job": request.job, "project_id": request.project_id}
        )
        metrics.add_metric(name="JobsUnknownProject", unit=MetricUnit.Count, value=1)
        return {"project_id": request.project_id, "changed": False, "dropped": True}
    except Exception as exc:
        logger.warning(
            "job failed; the record returns to the queue",
            extra={"job": request.job, "project_id": request.project_id, "run_date": request.date.isoformat(),
                   "error": type(exc).__name__},
        )
        metrics.add_metric(name=f"{job}JobsFailed", unit=MetricUnit.Count, value=1)
        raise
    metrics.add_metric(name=f"{job}JobsRun", unit=MetricUnit.Count, value=1)
    if report.changed:
        metrics.add_metric(name=f"{job}JobsChanged", unit=MetricUnit.Count, value=1)
    return {"project_id": report.project_id, "changed": report.changed, "counts": report.counts}


def erase(request: JobRequest) -> dict[str, Any]:
    """A large erasure (docs/architecture.md, "Data governance"): continue it to the end; raise to retry the record
    (the erasure resumes where it stopped)."""
    if request.target_kind is None or request.target_id is None:
        raise ValueError("an erase request names its target")
    if request.target_kind == "project":  # a project removal (agent_memory.governance.removal)
        removal = run_removal(governance_deps(), project_id=request.project_id)
        metrics.add_metric(name="ProjectRemovalJobsRun", unit=MetricUnit.Count, value=1)
        return {"project_id": request.project_id, "status": removal.status, "counts": removal.counts}
    record = run_erasure(
        governance_deps(), project_id=request.project_id, kind=request.target_kind, target_id=request.target_id,
    )
    metrics.add_metric(name="ErasureJobsRun", unit=MetricUnit.Count, value=1)
    return {"project_id": request.project_id, "status": record.status, "counts": record.counts}


_governance: list[GovernanceDeps] = []


def governance_deps() -> GovernanceDeps:
    """The erasure's collaborators, built on the first erase job of this container."""
    if not _governance:
        _governance.append(build_governance_deps(settings))
    return _governance[0]


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS event -> ``{"batchItemFailures": [{"itemIdentifier": messageId}, ...]}``."""
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    failed = len(response.get("batchItemFailures", []))
    if failed:
        metrics.add_metric(name="JobRecordsFailed", unit=MetricUnit.Count, value=failed)
    return dict(response)
