"""Pruning: keep hot memory under its cap and the history book loadable (history older than
the weeks the chat loads reaches it through yearly summaries).

One run = one project as of the run date:
1. ``JOBRUN#prune#{date}`` exists -> nothing to do;
2. yearly summaries: every complete ISO year older than the 50 loaded weeks gets ONE
   ``YEAR#{yyyy}`` item built from that year's reports (conditional put: idempotent);
3. hot memory over the cap (2,000 tokens):
   - admin lines alone over the cap -> ONE alert to the project's admins (nothing the AI may
     remove would help);
   - else compact the AI lines (LLM compactor; offline compactor when no LLM is configured or
     its reply is unusable) and VALIDATE the result (nothing clipped): under the cap, every
     admin line byte-identical. A rejected result leaves the stored revision unchanged and is
     recorded (metric ``PruneRejected``, an alert, the marker's status). A truncated reply
     applies nothing;
   - a valid result is saved as ONE revision whose reason lists the merged / superseded /
     evicted / reworded lines, in the same transaction as the marker.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, timedelta
from typing import Final

from agent_memory.domain.errors import LLMError, LLMTruncated
from agent_memory.domain.jobs import Alert, JobReport, JobRun, YearlySummary
from agent_memory.domain.models import HotMemory, Project, WeeklyReport
from agent_memory.domain.text import truncate_utf8
from agent_memory.history.yearly import build_yearly_summary
from agent_memory.hot_memory.compaction import (
    PRUNER,
    Compaction,
    build_llm_compaction,
    compact_offline,
    validate_compaction,
)
from agent_memory.hot_memory.document import admin_only_tokens, document_tokens
from agent_memory.jobs.calendar import iso_week_monday, zone
from agent_memory.jobs.deps import JobDeps, JobProgress, conflict_retrying, count_metric, send_alert
from agent_memory.jobs.llm_tasks import COMPACT_TASK, CompactOutput, compact_request
from agent_memory.observability import logger
from agent_memory.structured import UsageTally, call_structured, failure_reason, failure_usage, record_fallback

JOB: Final = "prune"


# ------------------------------------------------------------- yearly summaries
def years_due(project: Project, run_date: date, after_weeks: int) -> list[int]:
    """Complete ISO years (before ``run_date``'s ISO year) of the project's life with at least
    one week older than the ``after_weeks`` most recent weeks (the weeks chat loads)."""
    horizon = iso_week_monday(run_date) - timedelta(weeks=after_weeks)
    created = iso_week_monday(project.created_at.astimezone(zone(project.time_zone)).date())
    current = run_date.isocalendar().year
    return [
        y
        for y in range(created.isocalendar().year, current)
        if max(date.fromisocalendar(y, 1, 1), created) < horizon
    ]


def summarise_years(deps: JobDeps, project: Project, run_date: date) -> list[int]:
    """Write the missing ``YEAR#`` summaries; returns the years written (idempotent).

    Calls: none when no year is due; else one Query of ``YEAR#`` and, when a due year lacks
    its summary, one Query of that range of reports. The reports' text is scrubbed of identifiers
    before the summary is built from it.
    """
    store, caps = deps.store, deps.caps
    due = years_due(project, run_date, caps.yearly_after_weeks)
    if not due:
        return []
    existing = {s.year for s in store.load_yearly_summaries(project.project_id)}
    missing = [y for y in due if y not in existing]
    if not missing:
        return []
    reports = store.list_reports_between(project.project_id, f"{min(missing)}-W01", f"{max(missing)}-W53")
    by_year: dict[int, list[WeeklyReport]] = defaultdict(list)
    for r in reports:
        by_year[int(r.iso_week[:4])].append(r)
    written = []
    now = deps.clock()
    for year in missing:
        # the summary's input passes the identifier firewall again (reports written before it)
        reps = [r.model_copy(update={"summary": deps.firewall.scrub(project, r.summary).text})
                for r in sorted(by_year.get(year, []), key=lambda r: r.iso_week)]
        summary = YearlySummary(
            project_id=project.project_id,
            year=year,
            summary=build_yearly_summary(year, reps, caps),
            weeks=[r.iso_week for r in reps],
            created_at=now,
        )
        if store.put_yearly_summary(summary):
            written.append(year)
    count_metric("YearlySummariesWritten", len(written))
    return written


# ----------------------------------------------------------------- compaction
def _compact(deps: JobDeps, hot: HotMemory, tally: UsageTally) -> tuple[Compaction | None, str]:
    """A proposed compaction and who made it; ``(None, "llm_truncated")`` when the LLM's
    reply was cut (nothing of a truncated reply may be used). An unusable LLM answer is counted
    (``LLMFallback``, task ``compact``); the call and its usage are added to ``tally``."""
    cap = deps.caps.hot_memory_token_cap
    llm = deps.structured_llm
    if llm is None:
        return compact_offline(hot, cap), "offline"
    caps = deps.caps
    request = compact_request(
        hot, cap_tokens=cap, model=caps.llm_model_id, max_tokens=caps.llm_max_output_tokens,
        timeout_s=caps.llm_timeout_s, effort=caps.compact_effort,
    )
    try:
        answer = call_structured(llm, request, CompactOutput)
    except LLMError as exc:
        tally.add(failure_usage(exc))
        record_fallback(COMPACT_TASK, failure_reason(exc))
        if isinstance(exc, LLMTruncated):
            return None, "llm_truncated"
        return compact_offline(hot, cap), "offline_fallback"
    tally.add(answer.usage)
    return build_llm_compaction(hot, [ln.model_dump() for ln in answer.value.lines], now=deps.clock()), "llm"


def run_prune(deps: JobDeps, project: Project, run_date: date) -> JobReport:
    """Prune ``project`` as of ``run_date`` (see module docstring): the marker first, then the
    yearly summaries due, then hot memory (re-read and done again on a version conflict).

    Returns:
        JobReport with counts ``tokens_before``, ``tokens_after``, ``admin_tokens``,
        ``merged``, ``superseded``, ``evicted``, ``reworded``, ``yearly_summaries``; details
        ``status`` (``under_cap`` / ``compacted`` / ``rejected`` / ``admin_over_cap`` /
        ``llm_truncated``), ``compactor``, ``problems`` of a rejected compaction, and ``llm_calls``
        and ``llm_usage`` (the four token counts summed, None when no call reported any) when the
        LLM was called.
    """
    progress = JobProgress(JOB, project.project_id, run_date)
    key = run_date.isoformat()
    if progress.already_done(deps.store, key):
        return progress.report(False)
    years = summarise_years(deps, project, run_date)
    progress.counts["yearly_summaries"] = len(years)
    if years:
        progress.details["years"] = years
    changed = bool(years)
    for attempt in conflict_retrying(deps.caps):
        with attempt:
            if attempt.retry_state.attempt_number > 1 and progress.already_done(deps.store, key):
                return progress.report(changed)
            changed = _prune_hot_memory(deps, progress, key) or changed
    logger.info("pruning done", extra={"project_id": project.project_id, "date": key, "counts": progress.counts})
    return progress.report(changed)


def _prune_hot_memory(deps: JobDeps, progress: JobProgress, key: str) -> bool:
    """Hot memory as read now: under the cap, nothing to do; admin lines alone over it, an alert;
    else compacted (:func:`_compact_and_commit`). Every outcome but a committed compaction is
    recorded in a marker of its own. Returns True when a compaction was committed.

    Raises:
        VersionConflict: hot memory changed since it was read (the caller re-reads it).
    """
    cap = deps.caps.hot_memory_token_cap
    hot = deps.store.load_hot_memory(progress.project_id)
    tokens, admin_tokens = document_tokens(hot.lines), admin_only_tokens(hot)
    progress.counts.update(tokens_before=tokens, tokens_after=tokens, admin_tokens=admin_tokens)
    now = deps.clock()
    if tokens <= cap:
        status = "under_cap"
    elif admin_tokens > cap:
        status = "admin_over_cap"
        count_metric("HotMemoryAdminOverCap")
        send_alert(deps, _admin_over_cap_alert(hot, tokens, admin_tokens, cap))
    else:
        status = _compact_and_commit(deps, progress, hot, key, now)
        if status == "compacted":
            return True
    progress.details["status"] = status
    deps.store.put_job_run(JobRun(project_id=hot.project_id, job=JOB, key=key, status=status, completed_at=now,
                                  counts=dict(progress.counts), hot_version=hot.version))
    return False


def _compact_and_commit(deps: JobDeps, progress: JobProgress, hot: HotMemory, key: str, now: datetime) -> str:
    """Compact the AI lines and validate the result (nothing clipped; under the cap; every admin
    line byte-identical): a valid one is committed as ONE revision with the marker (``compacted``);
    a rejected one (``rejected``) or a truncated LLM reply (``llm_truncated``) changes nothing and
    is counted and alerted."""
    cap, tokens = deps.caps.hot_memory_token_cap, progress.counts["tokens_before"]
    comp, compactor = _compact(deps, hot, progress.tally)
    progress.details["compactor"] = compactor
    if comp is None:
        problems: list[str] = ["llm_truncated"]
        after = tokens
    else:
        problems, after = validate_compaction(hot, comp.lines, cap)
        progress.counts.update(
            tokens_after=after if not problems else tokens, merged=sum(len(v) for v in comp.merged.values()),
            superseded=len(comp.superseded), evicted=len(comp.evicted), reworded=len(comp.reworded),
        )
        progress.counts["proposed_tokens"] = after
    if problems:
        progress.details["problems"] = problems
        count_metric("PruneRejected")
        send_alert(deps, _rejected_alert(hot, tokens, cap, compactor, after, problems))
        return "rejected" if comp is not None else "llm_truncated"
    assert comp is not None
    run = JobRun(project_id=hot.project_id, job=JOB, key=key, status="compacted", completed_at=now,
                 counts=dict(progress.counts), hot_version=hot.version)
    reason = truncate_utf8(f"prune {key}: {tokens}->{after} tokens ({compactor}); {comp.describe()}",
                           deps.caps.revision_reason_max_bytes)
    deps.store.commit_hot_memory(
        hot.model_copy(update={"lines": comp.lines}), expected_version=hot.version, actor=PRUNER,
        reason=reason, now=now, tokens=after, run=run,
    )
    count_metric("HotMemoryCompacted")
    count_metric("HotMemoryLinesEvicted", len(comp.evicted))
    progress.details["status"] = "compacted"
    return "compacted"


def _admin_over_cap_alert(hot: HotMemory, tokens: int, admin_tokens: int, cap: int) -> Alert:
    """The alert when the admin lines alone are over the cap (nothing the AI may remove would help)."""
    pid = hot.project_id
    return Alert(
        project_id=pid,
        kind="admin_over_cap",
        subject=f"Agent Memory: admin lines exceed the hot-memory cap ({pid})",
        message=(
            f"Project {pid}: the admin-written lines of hot memory alone are {admin_tokens} tokens, "
            f"over the {cap}-token cap (whole document {tokens} tokens, version {hot.version}). "
            "The AI never changes admin lines; please shorten them in the memory editor."
        ),
        dedupe_key=f"admin-over-cap#{hot.version}",
    )


def _rejected_alert(hot: HotMemory, tokens: int, cap: int, compactor: str, after: int, problems: list[str]) -> Alert:
    """The alert when a compaction was rejected (the stored revision is unchanged)."""
    pid = hot.project_id
    return Alert(
        project_id=pid,
        kind="prune_rejected",
        subject=f"Agent Memory: hot-memory compaction rejected ({pid})",
        message=(
            f"Project {pid}: hot memory is {tokens} tokens (cap {cap}, version {hot.version}). "
            f"The {compactor} compaction ({after} tokens) was rejected: {', '.join(problems)}. "
            "The stored revision is unchanged."
        ),
        dedupe_key=f"prune-rejected#{hot.version}#{compactor}",
    )


__all__ = ["run_prune", "summarise_years", "years_due"]
