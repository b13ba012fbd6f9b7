"""The job worker: an SQS batch of :class:`~agent_memory.domain.jobs.JobRequest` -> one job per
record, from ONE job table (:data:`JOB_TABLE`), erasure included.

Powertools batch processing with partial batch responses (the event source mapping has
``ReportBatchItemFailures``): each record is parsed as a ``JobRequest`` (a malformed record fails
alone, it is never run with a partial object), a record whose job raises fails alone, and only
failed records return to the queue (after 3 receives: the job DLQ, alarmed). The jobs are
idempotent, so a redelivered record changes nothing more. A job for a project (or a removal)
that no longer exists is not retried (a retry cannot create it): logged, counted, dropped.

Never logs message text: records carry ids and a date; failures are logged by exception type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.parser.types import Json
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.domain.errors import ProjectNotFound
from agent_memory.domain.jobs import JobReport, JobRequest
from agent_memory.governance.erasure import GovernanceDeps, run_erasure
from agent_memory.governance.removal import run_removal
from agent_memory.jobs.archive import run_archive
from agent_memory.jobs.deps import JobDeps
from agent_memory.jobs.distill import run_distill
from agent_memory.jobs.prune import run_prune
from agent_memory.jobs.runner import PeriodJob, run_job
from agent_memory.observability import logger, metrics
from agent_memory.tracing import tracer


@dataclass(frozen=True)
class WorkerDeps:
    """The job worker's collaborators (built by ``wiring.build_job_worker``): the jobs', and the
    governance use cases' for the erase jobs (made on the first one of the container)."""

    jobs: JobDeps
    governance: Callable[[], GovernanceDeps]


@dataclass(frozen=True)
class JobOutcome:
    """What one job did: the worker's answer for its record (ids and counts only) and the names of
    the business metrics it counts once each."""

    result: dict[str, Any]
    metrics: tuple[str, ...]


#: Runs one request's job with the worker's collaborators.
JobRunner = Callable[[WorkerDeps, JobRequest], JobOutcome]


@dataclass(frozen=True)
class Job:
    """One entry of the job table: how the worker runs it and, for a scheduled job (one that
    processes a period of one project: ``make job`` and ``make dispatch`` offer those), the job
    of ``agent_memory.jobs`` it runs (``period``; None for the others)."""

    run: JobRunner
    period: PeriodJob | None = None

    @property
    def scheduled(self) -> bool:
        """Whether it processes a period of one project on a schedule."""
        return self.period is not None


def _scheduled(period: PeriodJob) -> Job:
    """A scheduled job (``agent_memory.jobs``): ``run_job`` with its markers, its metrics."""

    def run(deps: WorkerDeps, request: JobRequest) -> JobOutcome:
        report = run_job(deps.jobs, request, period)
        name = request.job.capitalize()
        return JobOutcome(
            result={"project_id": report.project_id, "changed": report.changed, "counts": report.counts},
            metrics=(f"{name}JobsRun",) + ((f"{name}JobsChanged",) if report.changed else ()),
        )

    return Job(run=run, period=period)


def _erase(deps: WorkerDeps, request: JobRequest) -> JobOutcome:
    """A large erasure or a project removal (docs/architecture.md, "Data governance"): continued
    to the end; a raise retries the record (the erasure resumes where it stopped).

    Raises:
        ValueError: the request names no target.
    """
    if request.target_kind is None or request.target_id is None:
        raise ValueError("an erase request names its target")
    if request.target_kind == "project":  # a project removal (agent_memory.governance.removal)
        removed = run_removal(deps.governance(), project_id=request.project_id)
        return JobOutcome(
            result={"project_id": request.project_id, "status": removed.status, "counts": removed.counts},
            metrics=("ProjectRemovalJobsRun",),
        )
    erased = run_erasure(
        deps.governance(), project_id=request.project_id, kind=request.target_kind, target_id=request.target_id,
    )
    return JobOutcome(
        result={"project_id": request.project_id, "status": erased.status, "counts": erased.counts},
        metrics=("ErasureJobsRun",),
    )


#: THE job table: every job a ``JobRequest`` can name -> how the worker runs it. The worker,
#: ``make job`` / ``make dispatch`` (``infra/jobs.py``), ``make bench`` and ``make eval`` take their
#: jobs from here.
JOB_TABLE: Mapping[str, Job] = {
    "distill": _scheduled(run_distill),
    "archive": _scheduled(run_archive),
    "prune": _scheduled(run_prune),
    "erase": Job(run=_erase),
}


def scheduled_jobs() -> tuple[str, ...]:
    """The names of the scheduled jobs of :data:`JOB_TABLE` (the period jobs of one project)."""
    return tuple(name for name, job in JOB_TABLE.items() if job.scheduled)


def run_scheduled(deps: JobDeps, request: JobRequest) -> JobReport:
    """Run the scheduled job ``request.job`` of :data:`JOB_TABLE` with the jobs' collaborators
    alone, and return its report (``make bench``, ``make eval``, tests).

    Raises:
        ValueError: ``request.job`` is not a scheduled job.
        ProjectNotFound, and what the job raises (``agent_memory.jobs.runner.run_job``).
    """
    period = JOB_TABLE[request.job].period
    if period is None:
        raise ValueError(f"{request.job} is not a scheduled job")
    return run_job(deps, request, period)


class JobRecord(SqsRecordModel):
    """An SQS record whose body is a JSON :class:`JobRequest`."""

    body: Json[JobRequest]  # Powertools' model types it str


class JobWorker:
    """The job worker's event handler: ``resolve(event, context)`` takes an SQS event and returns
    ``{"batchItemFailures": [{"itemIdentifier": messageId}, ...]}``.

    ``jobs`` is the job table it runs (:data:`JOB_TABLE`; a test may give another).
    """

    def __init__(self, deps: WorkerDeps, jobs: Mapping[str, Job] = JOB_TABLE) -> None:
        self.deps = deps
        self.jobs = dict(jobs)
        self.processor = BatchProcessor(event_type=EventType.SQS, model=JobRecord)

    def resolve(self, event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        """Run every record's job; the failed records go back to the queue."""
        response = process_partial_response(
            event=event, record_handler=self.record, processor=self.processor, context=context
        )
        failed = len(response.get("batchItemFailures", []))
        if failed:
            metrics.add_metric(name="JobRecordsFailed", unit=MetricUnit.Count, value=failed)
        return dict(response)

    @tracer.capture_method(capture_response=False)
    def record(self, record: JobRecord) -> dict[str, Any]:
        """Run one record's job; raise to fail this record only."""
        request = record.body
        try:
            outcome = self.jobs[request.job].run(self.deps, request)
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
            metrics.add_metric(name=f"{request.job.capitalize()}JobsFailed", unit=MetricUnit.Count, value=1)
            raise
        for name in outcome.metrics:
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
        return outcome.result


__all__ = [
    "JOB_TABLE", "Job", "JobOutcome", "JobRecord", "JobWorker", "WorkerDeps", "run_scheduled", "scheduled_jobs",
]
