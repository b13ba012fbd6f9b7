"""Fan-out of the scheduled jobs: for a scheduled (or backfill) run, which projects get one
:class:`~agent_memory.jobs.JobRequest` each, and for which run date.

Knows nothing of events, boto3 or SQS: the dispatcher handler parses EventBridge Scheduler's
``Input`` into :class:`~agent_memory.jobs.ScheduleInput` and passes the collaborators (the
activity index, the queue, the clock).

Periods are LOCAL dates in the schedule's time zone. ``D`` is the run's local date
(``ScheduleInput.date``, default: today in that zone when the dispatcher runs). The projects
enqueued are those with an activity marker (``ACTIVE#{local date}``, written by every chat turn)
on one of these dates:

- distill: ``D - 1``, the local day it distils;
- archive: the 7 days (Monday..Sunday) of the ISO week before ``D``'s week, the week it
  archives (correct across year boundaries and in week 53: run 2027-01-04 -> 2026-W53 =
  2026-12-28..2027-01-03);
- prune: ``D - PRUNE_LOOKBACK_DAYS .. D``. Hot memory grows only through distillation and the
  history book only through archiving, and both run only for active projects; so a project
  idle for longer than that has nothing new to prune (an earlier prune run already saw its
  last change). The 8 dates cover Monday's archive of the whole previous week.

Project zones behind the schedule's: the distill run also enqueues the projects due for the previous
run date (active on ``D - 2``). A project whose zone is behind the schedule's zone (the schedule in
Asia/Shanghai, a project in Europe/Berlin) was still in its day when that run came, so that run
merged the day so far without marking it done; only now is its day over. For every other project the
day is done already and the request changes nothing (its ``JOBRUN#`` marker).

Daylight saving time: EventBridge Scheduler SKIPS a cron time that does not exist locally (the
spring-forward hour: 02:00 on the last Sunday of March in Europe/Berlin). So when the previous
scheduled run date (``D - 1``; ``D - 7`` for the weekly archive) was a short local day, this run
also does that run's work: its projects are enqueued with that run date too (a DST change such as Berlin's
variant: no day is missed). Where the skipped hour did not hold the schedule, those requests find
the job already done (``JOBRUN#`` markers) and change nothing.

A backfill (``ScheduleInput.project_id``) enqueues that one project and reads no index.
Every request carries the run date ``D`` (the job logic derives its own day / week from it,
see :mod:`agent_memory.jobs.calendar`). The jobs are idempotent, so enqueueing a project twice
(a retried dispatch, a duplicate delivery) changes nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timedelta

from pydantic import BaseModel

from agent_memory.domain.jobs import JobName, JobRequest, ScheduleInput
from agent_memory.jobs.calendar import archive_week, distill_day, local_midnight_utc, zone
from agent_memory.ports import ActivityReader, JobSender

#: Days before the run date whose activity makes a project due for pruning (plus the run date).
PRUNE_LOOKBACK_DAYS = 7


class DispatchReport(BaseModel):
    """What one dispatch did (ids and counts only)."""

    job: JobName
    run_date: date
    time_zone: str
    run_dates: list[date]
    activity_dates: list[date]
    projects: int
    enqueued: int
    backfill: bool


def run_date_of(schedule: ScheduleInput, now: datetime) -> date:
    """The run's local date: ``schedule.date`` or the date of ``now`` (aware) in the schedule's zone.

    Raises:
        zoneinfo.ZoneInfoNotFoundError: unknown ``time_zone``.
    """
    if schedule.date is not None:
        return schedule.date
    return now.astimezone(zone(schedule.time_zone)).date()


def activity_dates(job: JobName, run_date: date) -> list[date]:
    """The local dates whose activity markers make a project due for ``job`` run on ``run_date``
    (oldest first; see the module docstring)."""
    if job == "distill":
        return [distill_day(run_date)]
    if job == "archive":
        _, monday = archive_week(run_date)
        return [monday + timedelta(days=i) for i in range(7)]
    return [run_date - timedelta(days=i) for i in range(PRUNE_LOOKBACK_DAYS, -1, -1)]


def is_short_day(day: date, tz: str) -> bool:
    """True when ``day`` has fewer than 24 hours in zone ``tz`` (clocks sprang forward)."""
    return local_midnight_utc(day + timedelta(days=1), tz) - local_midnight_utc(day, tz) < timedelta(hours=24)


def run_dates(job: JobName, run_date: date, tz: str) -> list[date]:
    """The run dates whose work this run does, oldest first: its own, preceded by the previous
    scheduled run date when that was a short local day (Scheduler may have skipped it); for
    distill, always preceded by the previous run date (a project whose zone is behind the
    schedule's was still in its day when that run came: only now is its day over, and a day
    already done finds its ``JOBRUN#`` marker and changes nothing)."""
    previous = run_date - timedelta(days=7 if job == "archive" else 1)
    return [previous, run_date] if job == "distill" or is_short_day(previous, tz) else [run_date]


def plan_requests(schedule: ScheduleInput, run_date: date, activity: ActivityReader) -> list[JobRequest]:
    """One request per project due and run date (by run date, then project id; no duplicates);
    a backfill names its project and its run date only."""
    if schedule.project_id is not None:
        return [JobRequest(job=schedule.job, project_id=schedule.project_id, date=run_date)]
    requests: list[JobRequest] = []
    for day in run_dates(schedule.job, run_date, schedule.time_zone):
        projects = sorted(set(activity.active_projects(activity_dates(schedule.job, day))))
        requests.extend(JobRequest(job=schedule.job, project_id=p, date=day) for p in projects)
    return requests


def dispatch(
    schedule: ScheduleInput,
    *,
    activity: ActivityReader,
    sender: JobSender,
    clock: Callable[[], datetime],
) -> DispatchReport:
    """Enqueue one :class:`JobRequest` per project due for ``schedule`` (see the module docstring).

    Raises:
        EnqueueFailed: some requests were not enqueued (the others were; a re-run is harmless).
        zoneinfo.ZoneInfoNotFoundError: unknown time zone in the schedule's input.
    """
    run_date = run_date_of(schedule, clock())
    requests = plan_requests(schedule, run_date, activity)
    enqueued = sender.send(requests) if requests else 0
    backfill = schedule.project_id is not None
    dates = [] if backfill else run_dates(schedule.job, run_date, schedule.time_zone)
    return DispatchReport(
        job=schedule.job,
        run_date=run_date,
        time_zone=schedule.time_zone,
        run_dates=dates or [run_date],
        activity_dates=sorted({d for r in dates for d in activity_dates(schedule.job, r)}),
        projects=len({r.project_id for r in requests}),
        enqueued=enqueued,
        backfill=backfill,
    )


__all__ = [
    "PRUNE_LOOKBACK_DAYS",
    "DispatchReport",
    "activity_dates",
    "dispatch",
    "is_short_day",
    "plan_requests",
    "run_date_of",
    "run_dates",
]
