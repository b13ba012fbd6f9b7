"""Entry point of the job logic for the fan-out workers and the backfill command.

Contract (``agent_memory.jobs``): ``run_job(deps, request, job) -> JobReport`` runs one job for one
project and is safe to run again: a retry after a crash, a duplicate SQS delivery or a manual
re-run changes nothing more (``JOBRUN#`` markers written with each result, checked first; the
merge and the report put are idempotent by themselves too).

``request.date`` is the run's LOCAL date in the project's zone (the project record's
``time_zone``): distill processes the day before it, archive the ISO week before its week,
prune runs as of it. :func:`agent_memory.jobs.calendar.run_date_for` maps a target day/week to
the run date for backfills.

A period is complete only once it is over in the project's local time (its window's end is not
after ``deps.clock()``). A run for a period still in progress (a manual run for today or the
current week) never writes the ``JOBRUN#`` marker: distill merges what exists so far, archive
writes nothing at all; both report ``details["reason"] == "period_not_over"``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from agent_memory.domain.jobs import JobReport, JobRequest
from agent_memory.domain.models import Project
from agent_memory.jobs.deps import JobCaps, JobDeps
from agent_memory.observability import logger

#: One scheduled job of one project as of a run date (``run_distill``, ``run_archive``, ``run_prune``).
PeriodJob = Callable[[JobDeps, Project, date], JobReport]


def run_job(deps: JobDeps, request: JobRequest, job: PeriodJob) -> JobReport:
    """Run ``job`` (the job ``request.job`` names, from the worker's job table,
    ``agent_memory.events.jobs.JOB_TABLE``) for ``request.project_id`` as of ``request.date``.

    Returns:
        JobReport (counts and ids only, never message text); ``changed`` is False when the run
        wrote nothing new (already done, no activity, nothing to change, or a rejected result).

    Raises:
        ProjectNotFound: no project record (the worker should not retry it).
        VersionConflict: still conflicting after ``caps.conflict_attempts`` re-applies.
        Other exceptions (DynamoDB, SNS) propagate so the SQS retry / DLQ handles them; a
            partially done job is completed or left unchanged by the retry.
    """
    project = deps.store.get_project(request.project_id)
    report = job(deps, project, request.date)
    logger.info(
        "job finished",
        extra={
            "job": request.job,
            "project_id": request.project_id,
            "run_date": request.date.isoformat(),
            "changed": report.changed,
            "counts": report.counts,
        },
    )
    return report


__all__ = ["JobCaps", "JobDeps", "PeriodJob", "run_job"]
