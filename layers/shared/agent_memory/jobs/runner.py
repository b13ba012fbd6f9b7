"""Entry point of the job logic for the fan-out workers and the backfill command.

Contract (``agent_memory.jobs``): ``run_job(deps, request) -> JobReport`` runs one job for one
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

from typing import TYPE_CHECKING, Any

from agent_memory.jobs import JobReport, JobRequest
from agent_memory.jobs.archive import run_archive
from agent_memory.jobs.deps import JobCaps, JobDeps, utc_now
from agent_memory.jobs.distill import run_distill
from agent_memory.jobs.notifier import LoggingNotifier, Notifier
from agent_memory.jobs.prune import run_prune
from agent_memory.observability import logger

if TYPE_CHECKING:
    from agent_memory.config import Settings

_JOBS = {"distill": run_distill, "archive": run_archive, "prune": run_prune}


def run_job(deps: JobDeps, request: JobRequest) -> JobReport:
    """Run ``request.job`` for ``request.project_id`` as of ``request.date``.

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
    report = _JOBS[request.job](deps, project, request.date)
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


def build_job_deps(
    settings: Settings,
    *,
    notifier: Notifier | None = None,
    alert_topic_arn: str | None = None,
    sns_client: Any | None = None,
) -> JobDeps:
    """Everything the jobs need, from the settings (called once at cold start).

    - store: ``JobsRepository`` on the tables named in the settings (``bind_tables``);
    - llm: the Anthropic client when ``LLM_PROVIDER=anthropic``, else None (the rule-based
      extractor, offline compactor and extractive summary are used);
    - notifier: ``notifier`` if given; else the SNS adapter on ``alert_topic_arn`` (or the
      settings' ``alert_topic_arn`` attribute when it has one, e.g. from ``ALERT_TOPIC_ARN``);
      else a notifier that only logs (local runs);
    - caps: the hot-memory cap and the fast model id from the settings.
    """
    from agent_memory.adapters.dynamo.jobs import JobsRepository
    from agent_memory.adapters.dynamo.tables import bind_tables

    bind_tables(
        memory_table=settings.memory_table,
        sessions_table=settings.sessions_table,
        flow_log_table=settings.flow_log_table,
    )
    llm = None
    if settings.llm_provider == "anthropic":
        from agent_memory.adapters.llm.factory import build_llm

        llm = build_llm(settings)
    topic = alert_topic_arn if alert_topic_arn is not None else str(getattr(settings, "alert_topic_arn", "") or "")
    if notifier is None:
        if topic:
            from agent_memory.adapters.sns import SnsNotifier

            notifier = SnsNotifier(topic, client=sns_client)
        else:
            notifier = LoggingNotifier()
    return JobDeps(
        store=JobsRepository(),
        llm=llm,
        notifier=notifier,
        clock=utc_now,
        caps=JobCaps(hot_memory_token_cap=settings.hot_memory_token_cap, llm_model_id=settings.fast_model_id),
    )


__all__ = ["JobCaps", "JobDeps", "build_job_deps", "run_job"]
