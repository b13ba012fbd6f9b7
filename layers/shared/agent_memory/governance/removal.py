"""Removal of a whole project by a platform operator (docs/architecture.md, "Data governance").

The caller confirms by naming the project (``confirm``); an export (``GET .../export``) should be
taken first — the removal keeps no content. Refused with 409 while an erasure of the project is
still running (:data:`JOB_RUNNING_WINDOW_S`). Order of the work, so a crash or a retry never
leaves an item behind and nothing is written to the project meanwhile:

1. the audit record (:class:`RemovalRecord`, MemoryTable ``_platform`` / ``REMOVED#{project}#{time}``,
   outside the removed partition) and then the ``PROJECT`` item are written / deleted: from then
   on the project is unknown to every route (404) and to the jobs (dropped);
2. the reminder schedules (EventBridge Scheduler), read from the project's reminder items;
3. every session of the project (ProjectSessionsIndex): its partition in bounded batches, each
   message's flow-log item and cached reply with it (the erasure's own code path); then the
   patients' diagnosis references items (their own ProjectSessionsIndex partition);
4. the flow log's day partitions from the project's creation to today (feedback events and items
   whose message was gone);
5. the project's MemoryTable partition in bounded batches (hot memory, revisions, reports,
   review, audit, members, reminders, webhook, erasure records, job markers, activity markers);
6. the record is marked done with the counts per kind.

Small projects are removed inside the request (204); larger ones by the job worker
(``JobRequest(job="erase", target_kind="project")``, 202 + status URL). Running it again
continues where it stopped; once done, a repeated call answers the record again (204), after
sweeping again whatever a chat turn that read the project just before step 1 wrote after it.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from agent_memory.domain.errors import InvalidInput, JobsRunning, ProjectNotFound
from agent_memory.domain.governance import JOB_RUNNING_WINDOW_S, RemovalRecord, add_counts
from agent_memory.domain.jobs import JobRequest
from agent_memory.domain.models import Project
from agent_memory.governance.erasure import GovernanceDeps, erase_session_items
from agent_memory.ports import JobSender

#: One flow-log day partition counts as this fraction of an item when choosing inline or job
#: (an empty day is one cheap Query).
_DAYS_PER_ITEM = 10


def request_removal(deps: GovernanceDeps, *, project_id: str, confirm: str | None, actor: str) -> RemovalRecord:
    """Remove every item of the project and its schedules (platform operators), inline or as a job.

    Args:
        confirm: must equal ``project_id`` (the operator names what is removed).

    Returns:
        The record: ``status == "done"`` when removed (also for a repeated call); ``"running"``
        with ``mode == "job"`` when the job worker does it (poll ``record.status_path()``).

    Raises:
        InvalidInput: ``confirm`` does not name the project (422).
        ProjectNotFound: no such project and no removal of it (404).
        JobsRunning: an erasure of the project is still running (409).
    """
    if confirm != project_id:
        raise InvalidInput(f"confirm the removal with confirm={project_id} (take an export first)")
    store = deps.removals
    existing = store.get_removal(project_id)
    try:
        project = deps.admin.get_project(project_id)
    except ProjectNotFound:
        if existing is None:
            raise
        return _continue_removal(deps, existing)
    now = deps.clock()
    _refuse_while_erasing(deps, project_id, now)
    record = _new_removal(deps, project, existing, actor=actor, now=now)
    store.save_removal(record)
    removed = {"memory": store.delete_project_item(project_id)}
    record = record.model_copy(update={"counts": add_counts(record.counts, removed)})
    store.save_removal(record)
    if record.mode == "job" and deps.jobs is not None:
        _queue_removal(deps.jobs, project_id, now)
        return record
    return run_removal(deps, project_id=project_id)


def _continue_removal(deps: GovernanceDeps, existing: RemovalRecord) -> RemovalRecord:
    """A removal asked for again once its ``PROJECT`` item is gone: an inline one that stopped
    midway goes on; a job that outlived every delivery (it went to the DLQ) is queued again; a
    done one sweeps again what a chat turn that read the project just before its ``PROJECT``
    item went wrote after the sweep; else the record as it is."""
    project_id = existing.project_id
    if existing.status == "running" and existing.mode == "inline":
        return run_removal(deps, project_id=project_id)
    now = deps.clock()
    if (existing.status == "running" and deps.jobs is not None
            and (now - existing.requested_at).total_seconds() >= JOB_RUNNING_WINDOW_S):
        _queue_removal(deps.jobs, project_id, now)
        return existing
    if existing.status == "done" and deps.removals.project_size(project_id, stop_after=0):
        deps.removals.save_removal(existing.model_copy(update={"status": "running", "finished_at": None}))
        return run_removal(deps, project_id=project_id)
    return existing


def _refuse_while_erasing(deps: GovernanceDeps, project_id: str, now: datetime) -> None:
    """Raises JobsRunning while an erasure of the project is running and younger than the job
    queue's window (:data:`JOB_RUNNING_WINDOW_S`)."""
    running = [r for r in deps.erasures.running_erasures(project_id)
               if (now - r.requested_at).total_seconds() < JOB_RUNNING_WINDOW_S]
    if running:
        raise JobsRunning(f"{len(running)} erasure job(s) of project {project_id} still running; retry later")


def _new_removal(deps: GovernanceDeps, project: Project, existing: RemovalRecord | None, *, actor: str,
                 now: datetime) -> RemovalRecord:
    """The record of this removal: inline up to ``deps.inline_items`` items (a flow-log day
    counting :data:`_DAYS_PER_ITEM`-th of one), else a job when a queue is configured; a removal
    that stopped before its ``PROJECT`` item went is continued under its own record."""
    days = len(_days(project.created_at, now))
    size = deps.removals.project_size(project.project_id, stop_after=deps.inline_items) + days // _DAYS_PER_ITEM
    mode = "job" if deps.jobs is not None and size > deps.inline_items else "inline"
    if existing is not None and existing.status == "running":
        return existing.model_copy(update={"mode": mode})
    return RemovalRecord(project_id=project.project_id, actor=actor, requested_at=now, mode=mode,
                         since=project.created_at)


def _queue_removal(jobs: JobSender, project_id: str, now: datetime) -> None:
    """Send the removal to the job worker (``JobRequest(job="erase", target_kind="project")``)."""
    jobs.send([JobRequest(job="erase", project_id=project_id, date=now.date(), target_kind="project",
                          target_id=project_id)])


def run_removal(deps: GovernanceDeps, *, project_id: str) -> RemovalRecord:
    """Do (or continue) a requested removal; the job worker's entry point as well.

    Raises:
        ProjectNotFound: no removal of that project was requested.
    """
    store = deps.removals
    record = store.get_removal(project_id)
    if record is None:
        raise ProjectNotFound(f"no removal of project {project_id}")
    if record.status == "done":
        return record
    counts = add_counts(record.counts, {"memory": store.delete_project_item(project_id)})
    reminders = store.project_reminders(project_id)
    if deps.schedules is not None:
        for reminder in reminders:
            deps.schedules.delete(reminder)
        counts = add_counts(counts, {"schedules": len(reminders)})
    for session_id in store.project_session_ids(project_id):
        counts = add_counts(counts, erase_session_items(deps, project_id, session_id))
        record = record.model_copy(update={"counts": counts})
        store.save_removal(record)
    while deleted := deps.patient_refs.delete_patient_refs_items(project_id, limit=deps.batch_items):
        counts = add_counts(counts, {"patient_refs": deleted})
    for day in _days(record.since, deps.clock()):
        counts = add_counts(counts, {"flow_log": store.delete_flow_log_day(project_id, day)})
    while deleted := store.delete_memory_batch(project_id, limit=deps.batch_items):
        counts = add_counts(counts, {"memory": deleted})
    record = record.model_copy(update={
        "status": "done", "finished_at": deps.clock(), "counts": {k: v for k, v in counts.items() if v},
    })
    store.save_removal(record)
    return record


def get_removal(deps: GovernanceDeps, *, project_id: str) -> RemovalRecord:
    """The latest removal record of the project (platform operators).

    Raises:
        ProjectNotFound: the project was never removed (404).
    """
    record = deps.removals.get_removal(project_id)
    if record is None:
        raise ProjectNotFound(f"no removal of project {project_id}")
    return record


def _days(since: datetime, now: datetime) -> list[date]:
    """UTC days from the day before ``since`` to the day after ``now`` (flow-log partitions are
    UTC days; one day of margin on each side for clocks and zones)."""
    first = since.date() - timedelta(days=1)
    last = now.date() + timedelta(days=1)
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


__all__ = ["get_removal", "request_removal", "run_removal"]
