"""Daily distillation: yesterday's USER messages -> hot memory (only what users say becomes memory).

One run = one project, one LOCAL day (the day before the run date, in the project's zone):
1. ``JOBRUN#distill#{day}`` exists -> nothing to do (a re-run changes nothing);
2. read the day's flow log (one Query per UTC-date partition the local day overlaps);
3. extract candidates: the LLM extractor (structured operations) when an LLM is configured,
   with the rule extractor as fallback; a truncated structured reply applies NOTHING;
4. merge (:func:`~agent_memory.hot_memory.merge.merge_candidates`: grounded in the day's user
   messages, duplicates counted, the newer statement wins, admin lines guarded by the review queue);
5. enforce the 2,000-token cap on the result as a whole, never losing the newest statement: a
   result over the cap is compacted in the same write (duplicate AI lines merged, superseded
   ones dropped, then the oldest AI lines; admin lines untouched); only when the admin lines
   leave no room even for the newest statement is nothing applied and the admins alerted;
6. save ONE new revision together with the marker; on ``VersionConflict`` (an admin saved
   meanwhile) re-read and re-apply the same candidates (tenacity, bounded).

A day still in progress (its end, local midnight, after ``deps.clock()``: a manual run for
today) is merged as far as it goes, but WITHOUT the marker (details ``reason =
"period_not_over"``): the scheduled run after midnight then distils the whole day (the merge is
idempotent, so what was merged early is a duplicate then).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Final

from agent_memory.domain.errors import LLMError, LLMTruncated
from agent_memory.domain.feedback import FEEDBACK_SOURCE, is_distillable_feedback
from agent_memory.domain.jobs import Alert, Candidate, CandidateKind, FlowLogEntry, JobReport, JobRun
from agent_memory.domain.models import HotMemory, Project
from agent_memory.domain.text import truncate_utf8
from agent_memory.hot_memory.document import document_tokens
from agent_memory.hot_memory.merge import DISTILLER, MergeResult, compact_offline, merge_candidates
from agent_memory.hot_memory.scope import preference_scope
from agent_memory.hot_memory.statements import extract_rule_candidates
from agent_memory.hot_memory.team import Team
from agent_memory.jobs.calendar import distill_day, local_day_window, period_over
from agent_memory.jobs.deps import JobDeps, JobProgress, conflict_retrying, count_metric, send_alert
from agent_memory.jobs.llm_tasks import (
    DISTILL_TASK,
    ExtractOperation,
    ExtractOutput,
    extract_request,
    request_input_tokens,
)
from agent_memory.observability import logger
from agent_memory.structured import UsageTally, call_structured, failure_reason, failure_usage, record_fallback

JOB: Final = "distill"


class _Extraction:
    def __init__(self, candidates: list[Candidate], extractor: str, fallback_reason: str | None = None) -> None:
        self.candidates = candidates
        self.extractor = extractor
        self.fallback_reason = fallback_reason


def extract_candidates(
    deps: JobDeps, hot: HotMemory, messages: list[FlowLogEntry], day: str, tally: UsageTally | None = None
) -> _Extraction:
    """Candidates of the day: LLM operations, or the rules when no LLM is configured, the input
    is over budget, or the reply is unusable (an error of the call; a refused, empty, non-JSON or
    invalid reply). Each fallback of the LLM is counted (``LLMFallback``, task ``distill``); the
    call and its usage are added to ``tally``.

    Raises:
        LLMTruncated: the structured reply was cut by max_tokens: the caller must
            apply nothing, and must NOT fall back to the rules either.
    """
    llm = deps.structured_llm
    if llm is None:
        return _Extraction(extract_rule_candidates(messages), "rules")
    caps = deps.caps
    tally = UsageTally() if tally is None else tally
    request = extract_request(
        hot,
        messages,
        day=day,
        model=caps.llm_model_id,
        max_tokens=caps.llm_max_output_tokens,
        max_bytes_each=caps.llm_message_max_bytes,
        timeout_s=caps.llm_timeout_s,
        effort=caps.distill_effort,
    )
    if request_input_tokens(request) > caps.llm_input_token_budget:
        record_fallback(DISTILL_TASK, "input_over_budget")
        return _Extraction(extract_rule_candidates(messages), "rules_fallback", "input_over_budget")
    try:
        answer = call_structured(llm, request, ExtractOutput)
    except LLMError as exc:  # LLMTruncated included: re-raised below, nothing of it is applied
        tally.add(failure_usage(exc))
        reason = failure_reason(exc)
        record_fallback(DISTILL_TASK, reason)
        if isinstance(exc, LLMTruncated):
            raise
        return _Extraction(extract_rule_candidates(messages), "rules_fallback", reason)
    tally.add(answer.usage)
    return _Extraction(llm_candidates(answer.value, messages), "llm")


#: The candidate kind of each operation of the LLM's reply.
_OPERATION_KINDS: dict[str, CandidateKind] = {
    "add": "statement", "replace": "statement", "withdraw": "withdraw", "relaxes_rule": "relaxes_rule",
}


def llm_candidates(output: ExtractOutput, messages: list[FlowLogEntry]) -> list[Candidate]:
    """The candidates of the LLM's operations, ordered by their newest evidence (then as listed),
    with the statement's time and speaker from the flow-log records it cites and the scope its
    words name (the merge turns it into the role tag; none named: the speaker's study role from
    the flow log, whatever the reply proposed)."""
    at = {m.message_id: m.at.isoformat() for m in messages}
    by_id = {m.message_id: m for m in messages}
    return [
        Candidate(
            text=op.text, section=op.section, role_tag=None, evidence=op.evidence,
            replaces=op.line_id if op.op != "add" else None, origin="llm",
            order=(max((f"{at[e]}#{e}" for e in op.evidence if e in at), default="~"), i),
            kind=_OPERATION_KINDS[op.op],
            stated_at=max((by_id[e].at for e in op.evidence if e in by_id), default=None),
            speaker=next((by_id[e].user_id for e in op.evidence if e in by_id), None),
            scope=_scope(op, by_id),
        )
        for i, op in enumerate(output.operations)
    ]


def _scope(op: ExtractOperation, by_id: dict[str, FlowLogEntry]) -> str | None:
    """Whom the operation's preference is for, read from the words (never the reply's guess):
    the scope its text names (:func:`preference_scope`), else the one its evidence message names;
    None when neither names one (the merge tags the speaker's study role)."""
    for text in (op.text, *(by_id[e].content for e in op.evidence if e in by_id)):
        named = preference_scope(text)
        if named is not None:
            return named.role if named.kind == "role" else named.kind
    return None


def run_distill(deps: JobDeps, project: Project, run_date: date) -> JobReport:
    """Distil the local day before ``run_date`` for ``project`` (see module docstring).

    Returns:
        JobReport with counts ``messages``, ``user_messages``, ``candidates``, ``added``,
        ``replaced``, ``removed``, ``duplicates``, ``review_queued``, ``rejected`` (total,
        review included), ``rejected_ungrounded`` / ``_language`` / ``_invalid`` / ``_dismissed``
        (statements from messages behind a line an admin removed),
        ``tokens_before``, ``tokens_after``; details ``day``, ``window_utc``, ``extractor``,
        ``fallback_reason`` when the rules answered for the LLM, ``llm_calls`` and ``llm_usage``
        (the four token counts summed, None when no call reported any) when the LLM was called,
        ``reason = "period_not_over"`` when the day is still in progress (merged, no marker)
        and, when nothing could be applied, ``failure`` (``llm_truncated`` / ``over_cap``).
    """
    day = distill_day(run_date)
    key = day.isoformat()
    start, end = local_day_window(day, project.time_zone)
    progress = JobProgress(JOB, project.project_id, run_date,
                           details={"day": key, "window_utc": [start.isoformat(), end.isoformat()]})
    if progress.already_done(deps.store, key):
        return progress.report(False)
    final = period_over(end, deps.clock())  # False: the day is not over, so no marker
    if not final:
        progress.details["reason"] = "period_not_over"
    messages = progress.scrubbed(deps, project, deps.store.read_flow_log(project.project_id, start, end))
    users = day_statements(messages)
    progress.counts.update(messages=len(messages), user_messages=len(users))
    if not users:
        return progress.report(False)
    hot = deps.store.load_hot_memory(project.project_id)
    extraction = _extract(deps, progress, hot, users, key)
    if extraction is None:
        return progress.report(False)
    changed = False
    merged: MergeResult | None = None
    for attempt in conflict_retrying(deps.caps):
        with attempt:
            if attempt.retry_state.attempt_number > 1:
                count_metric("DistillVersionConflicts")
                if progress.already_done(deps.store, key):  # a concurrent delivery of the same job finished first
                    return progress.report(changed)
                hot = deps.store.load_hot_memory(project.project_id)
            merged = _merge_and_save(deps, progress, hot, extraction.candidates, users, key, final=final)
            if merged is None:
                return progress.report(False)
            changed = changed or merged.changed
    assert merged is not None
    _count_metrics(merged, progress.counts)
    logger.info("distillation done", extra={"project_id": project.project_id, "day": key, "counts": progress.counts})
    return progress.report(changed)


def day_statements(messages: list[FlowLogEntry]) -> list[FlowLogEntry]:
    """What is distilled of a day's flow log: the user messages, and the down-votes whose reason
    may state something (a feedback event is a statement of its rater only when it is a down-vote
    with a reason, and only the rater's last rating of an answer counts: a second rating replaces
    the first). The assistant's messages never are."""
    last = {(m.message_id, m.user_id): m for m in sorted(
        (m for m in messages if m.source == FEEDBACK_SOURCE), key=lambda m: m.at)}
    return [m for m in messages if m.role == "user" and (m.source != FEEDBACK_SOURCE or (
        last[(m.message_id, m.user_id)] is m and is_distillable_feedback(m.rating, m.content)))]


def _extract(deps: JobDeps, progress: JobProgress, hot: HotMemory, users: list[FlowLogEntry],
             key: str) -> _Extraction | None:
    """The day's candidates (:func:`extract_candidates`), described in the report; None when the
    LLM's structured reply was cut (nothing of it is applied, and the rules do not answer for it)."""
    try:
        extraction = extract_candidates(deps, hot, users, key, progress.tally)
    except LLMTruncated:
        count_metric("DistillLLMTruncated")
        logger.warning("distillation reply truncated; nothing applied",
                       extra={"project_id": progress.project_id, "day": key})
        progress.details.update(extractor="llm", failure="llm_truncated")
        progress.counts["llm_truncated"] = 1
        return None
    progress.details["extractor"] = extraction.extractor
    if extraction.fallback_reason:
        progress.details["fallback_reason"] = extraction.fallback_reason
    progress.counts["candidates"] = len(extraction.candidates)
    return extraction


def _merge_and_save(deps: JobDeps, progress: JobProgress, hot: HotMemory, candidates: list[Candidate],
                    users: list[FlowLogEntry], key: str, *, final: bool) -> MergeResult | None:
    """Merge the candidates into ``hot`` as read, queue what is held for review, bring a result over
    the cap under it, and save ONE new revision with the marker (only the marker when nothing
    changed; no marker for a day not over). None: over the cap even so (nothing applied).

    Raises:
        VersionConflict: hot memory changed since it was read (the caller re-reads it).
    """
    pid, caps, now = progress.project_id, deps.caps, deps.clock()
    team = Team(deps.store.list_members(pid)) if candidates else Team()
    merged = merge_candidates(
        hot, candidates, day_messages={m.message_id: m for m in users}, day=key, now=now,
        max_line_tokens=caps.max_line_tokens, feedback_events=[m for m in users if m.source == FEEDBACK_SOURCE],
        team=team,
    )
    tokens_after = document_tokens(merged.lines)
    _count(progress.counts, merged, document_tokens(hot.lines), tokens_after)
    if merged.reviews:
        deps.store.put_review_items(merged.reviews)
    if merged.changed and tokens_after > caps.hot_memory_token_cap:
        fitted = _fit_to_cap(deps, pid, key, hot.version, merged, tokens_after, now)
        if fitted is None:
            progress.details["failure"] = "over_cap"
            return None
        tokens_after = fitted
        progress.counts.update(compacted=len(merged.compacted), tokens_after=tokens_after)
    run = JobRun(project_id=pid, job=JOB, key=key, completed_at=now, counts=dict(progress.counts),
                 hot_version=hot.version) if final else None
    if merged.changed:
        deps.store.commit_hot_memory(
            hot.model_copy(update={"lines": merged.lines}), expected_version=hot.version, actor=DISTILLER,
            reason=_reason(key, merged, caps.revision_reason_max_bytes), now=now, tokens=tokens_after, run=run,
        )
    elif run is not None:
        deps.store.put_job_run(run)
    return merged


def _count_metrics(merged: MergeResult, counts: dict[str, int]) -> None:
    count_metric("DistilledLinesAdded", len(merged.added))
    count_metric("DistilledLinesReplaced", len(merged.replaced))
    count_metric("DistilledDuplicates", merged.duplicates)
    count_metric("DistilledReviewQueued", len(merged.reviews))
    count_metric("DistilledRejected", counts["rejected"])


def _fit_to_cap(deps: JobDeps, pid: str, day: str, version: int, merged: MergeResult, tokens: int,
                now: datetime) -> int | None:
    """Bring a merge result over the cap under it in the same write, keeping the newest statement:
    the offline compaction merges duplicate AI lines, drops superseded ones, then the oldest AI
    lines (admin lines untouched). Returns the new token count, or None (metric and alert sent)
    when even that drops the newest statement: the admin lines leave no room for it."""
    cap = deps.caps.hot_memory_token_cap
    compacted = compact_offline(HotMemory(project_id=pid, lines=merged.lines), cap)
    newest = max(merged.touched, key=lambda i: next(
        (ln.stated_at or ln.created_at for ln in merged.lines if ln.line_id == i), now), default=None)
    if newest not in {ln.line_id for ln in compacted.lines}:
        admin_tokens = document_tokens([ln for ln in merged.lines if ln.source == "admin"])
        count_metric("DistillRejectedOverCap")
        send_alert(deps, _over_cap_alert(pid, day, version, admin_tokens, tokens, cap))
        return None
    merged.lines = compacted.lines
    merged.compacted = compacted.superseded + compacted.evicted + [i for ids in compacted.merged.values() for i in ids]
    count_metric("DistillCompactedToCap")
    return document_tokens(merged.lines)


def _over_cap_alert(pid: str, day: str, version: int, admin_tokens: int, tokens: int, cap: int) -> Alert:
    """The alert when the admin lines leave no room for the day's newest statement (every AI line
    dropped would still not make room), so nothing is applied."""
    return Alert(
        project_id=pid,
        kind="distill_over_cap",
        subject=f"Agent Memory: distillation rejected, hot memory over cap ({pid})",
        message=(
            f"Project {pid}: distilling {day} would make hot memory {tokens} tokens (cap {cap}; admin lines "
            f"{admin_tokens}; version {version}). Nothing was applied: the admin lines leave no room for the "
            f"newest statement. Shorten the System Rules or admin lines."
        ),
        dedupe_key=f"distill-over-cap#{day}#{version}",
    )


def _count(counts: dict[str, int], merged: MergeResult, before: int, after: int) -> None:
    rejected = sum(merged.rejected.values())
    counts.update(
        added=len(merged.added),
        replaced=len(merged.replaced),
        removed=len(merged.removed),
        confirmed=len(merged.confirmed),
        restated=len(merged.restated),
        duplicates=merged.duplicates,
        review_queued=len(merged.reviews),
        rejected=rejected + len(merged.reviews),
        rejected_ungrounded=merged.rejected["ungrounded"],
        rejected_language=merged.rejected["language"],
        rejected_invalid=merged.rejected["invalid"],
        rejected_dismissed=merged.rejected["dismissed"],
        tokens_before=before,
        tokens_after=after if merged.changed else before,
    )


def _reason(day: str, merged: MergeResult, max_bytes: int) -> str:
    """The revision reason: which lines were added / replaced / removed, from which messages."""
    parts = [f"distill {day}"]
    if merged.added:
        parts.append("added " + ",".join(merged.added))
    if merged.replaced:
        parts.append("replaced " + ",".join(f"{old}->{new}" for old, new in merged.replaced.items()))
    if merged.removed:
        parts.append("removed " + ",".join(merged.removed))
    if merged.superseded:
        parts.append("superseded same-day statements " + ",".join(merged.superseded))
    if merged.compacted:
        parts.append("compacted to the cap " + ",".join(merged.compacted))
    if merged.withdrawn:
        parts.append("withdrawn by " + ",".join(merged.withdrawn))
    if merged.restated:
        parts.append("said again " + ",".join(
            f"{line_id}<-{'+'.join(ev)}" for line_id, ev in merged.restated.items()))
    if merged.confirmed:
        parts.append("confirmed by feedback " + ",".join(
            f"{line_id}<-{'+'.join(ev)}" for line_id, ev in merged.confirmed.items()))
    parts.append("evidence " + ",".join(merged.evidence))
    return truncate_utf8("; ".join(parts), max_bytes)


__all__ = ["day_statements", "extract_candidates", "llm_candidates", "run_distill"]
