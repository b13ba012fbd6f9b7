"""Weekly archiving: one ISO week of the flow log -> one history-book report (written once,
never overwritten).

One run = one project, the ISO week before the run date's week in the project's calendar
(correct at year boundaries and in week 53: 2026-W53 is 2026-12-28..2027-01-03):
1. ``JOBRUN#archive#{week}`` exists, or the report exists -> nothing to do, no LLM call;
2. read the week's flow log (7 local days; user AND assistant messages);
3. no message -> nothing is written and no LLM is called;
4. summarise into ``[进度]`` / ``[决策]`` / ``[问题]`` points (problems and lessons), each citing
   message ids, under a one-line overview: the LLM (structured output) when configured, else / on
   any failure the offline summary. An LLM report that says nothing (no point, no grounded point,
   or only stock phrases such as "暂无历史记录" / "No prior history", whatever it cites) is
   rejected, asked for once more, then replaced by the offline summary with an admin alert and the
   ``ArchiveLLMReportRejected`` metric: it is never stored.
   Both see only what happened THIS week (:func:`week_content`): user messages and the
   assistant's own answers (tool results), never what an assistant reply quotes from the history
   book (lines citing ISO weeks or yearly summaries) or from hot memory / the weekly reports;
5. bound the size (UTF-8 bytes; whole points dropped first, then ``truncate_utf8``);
6. write the report and the marker in one transaction, never overwriting an existing report.

A week still in progress (its end, local Monday midnight, after ``deps.clock()``: a manual run
for the current week) is NOT archived at all: nothing is read or written (details ``reason =
"period_not_over"``), since a report is never overwritten and a partial one would block the
real one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Final
from zoneinfo import ZoneInfo

from agent_memory.domain.errors import LLMError
from agent_memory.domain.jobs import Alert, FlowLogEntry, JobReport, JobRun
from agent_memory.domain.models import Project, WeeklyReport
from agent_memory.domain.text import truncate_utf8, utf8_len
from agent_memory.feedback.report import split_feedback, with_feedback_section
from agent_memory.history.reports import REPORT_SECTIONS
from agent_memory.jobs.calendar import archive_week, iso_week_window, period_over, zone
from agent_memory.jobs.deps import JobCaps, JobDeps, JobProgress, count_metric, send_alert
from agent_memory.jobs.llm_tasks import ARCHIVE_TASK, ReportOutput, ReportPoint, report_request, request_input_tokens
from agent_memory.jobs.report_text import condense, is_placeholder, similar
from agent_memory.observability import logger
from agent_memory.structured import UsageTally, call_structured, failure_reason, failure_usage, record_fallback

JOB: Final = "archive"
ARCHIVER = "archiver"

_DECISION = re.compile(
    r"决定|决议|确认|同意|批准|通过了|改为|改成|调整为|暂停|恢复|定为|统一|采用|拍板|"
    r"\bdecid|\bagreed\b|\bapproved?\b|\bconfirmed\b|\bswitch(?:ed)? to\b|\bwill use\b",
    re.IGNORECASE,
)
_PROBLEM = re.compile(
    r"问题|失败|错误|出错|报错|延迟|推迟|延误|不良事件|(?<![A-Za-z])S?AE(?![A-Za-z])|缺失|偏离|脱落|风险|教训|踩坑|经验|"
    r"\blessons?\b|"
    r"投诉|异常|超窗|漏填|\bissues?\b|\bproblems?\b|\bfail|\berrors?\b|\bdelay|\bbugs?\b|\bdeviation|\bmissing\b|\brisks?\b",
    re.IGNORECASE,
)
_PROGRESS = re.compile(
    r"入组|筛选|完成|随访|上线|累计|启动|到货|递交|进度|签署|录入|锁库|"
    r"\benrol|\bscreen|\bcomplet|\bfinished\b|\bvisits?\b|\blaunched\b|\bprogress\b|\bsubmitted\b",
    re.IGNORECASE,
)
_LESSON = re.compile(r"教训|经验|踩坑|\blessons?\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])")
_LABEL = re.compile(r"^\s*【[^】]{0,40}】\s*")
#: A line of an assistant reply citing the history book: an ISO week or a yearly summary.
_CITES_HISTORY = re.compile(r"(?<!\d)\d{4}-W\d{1,2}(?!\d)|年度总结|yearly summary", re.IGNORECASE)
#: An assistant reply quoting the project's memory (history book, weekly reports, hot memory).
_QUOTES_MEMORY = re.compile(r"history[ _]book|hot[ _]memory|周报|热记忆|历史记录", re.IGNORECASE)


def week_content(m: FlowLogEntry) -> str:
    """What of ``m`` may be archived as an event of its week (``""``: nothing).

    A user message whole. An assistant reply quotes old history when it answers from the
    history book or hot memory (the offline provider's ``根据周报（history book）：- 2026-W12 …``,
    ``热记忆中记录着：…``): such a reply is skipped whole, and any other reply loses its lines
    citing an ISO week or a yearly summary, so old decisions are never re-archived as new ones.
    """
    if m.role == "user":
        return m.content
    text = _LABEL.sub("", m.content)
    if _QUOTES_MEMORY.search(text):
        return ""
    return "\n".join(ln for ln in text.splitlines() if not _CITES_HISTORY.search(ln))


def _section(text: str, role: str) -> str | None:
    """The section of a condensed point: decisions (the team's: user messages only), problems and
    lessons, progress; None for anything else."""
    if text.startswith("教训") or _LESSON.search(text):
        return "problems"
    if role == "user" and _DECISION.search(text):
        return "decisions"
    if _PROBLEM.search(text):
        return "problems"
    if _PROGRESS.search(text):
        return "progress"
    return None


def summarise_offline(messages: Sequence[FlowLogEntry], tz: ZoneInfo, caps: JobCaps) -> dict[str, list[ReportPoint]]:
    """The offline summary: each sentence of the week (:func:`week_content`: no quotes of old
    reports or hot memory) condensed into a statement (:func:`~agent_memory.jobs.report_text.condense`:
    no questions, requests to the assistant, preferences, acknowledgements or assistant advice),
    filed as a decision (users' only), a problem or lesson, or progress; near-duplicates merged
    (their evidence united); at most ``caps.report_points_per_section`` per section.

    Points are prefixed with the local date (``MM-DD``) of their first message.
    """
    points: dict[str, list[ReportPoint]] = {k: [] for k, _ in REPORT_SECTIONS}
    for m in messages:
        for raw in _SENTENCE_END.split(week_content(m)):
            text = condense(raw, role=m.role)
            section = _section(text, m.role) if text else None
            if text is None or section is None:
                continue
            same = next((p for p in points[section] if similar(p.text[6:], text)), None)
            if same is not None:
                if len(text) > len(same.text) - 6:
                    same.text = same.text[:6] + text
                if m.message_id not in same.evidence:
                    same.evidence.append(m.message_id)
                continue
            if len(points[section]) >= caps.report_points_per_section:
                continue
            local = m.at.astimezone(tz).strftime("%m-%d")
            points[section].append(ReportPoint(text=f"{local} {text}", evidence=[m.message_id]))
    return points


def overview(label: str, points: dict[str, list[ReportPoint]], messages: int) -> str:
    """The report's first line: the week and what it holds (counts only, no message text)."""
    n = {key: len(points.get(key, [])) for key, _ in REPORT_SECTIONS}
    return (
        f"{label} 本周小结：进度 {n['progress']} 项，决策 {n['decisions']} 项，问题与教训 {n['problems']} 项"
        f"（据 {messages} 条消息）。"
    )


def render_summary(
    points: dict[str, list[ReportPoint]], caps: JobCaps, header: str | None = None
) -> tuple[str, list[str], int]:
    """``header`` (if any), then ``[进度] text [ids]`` lines, section by section, within
    ``caps.report_max_bytes``.

    Each point is capped at ``caps.report_point_max_bytes`` (whole characters, ``…`` marks a
    cut); points that no longer fit are dropped whole. Returns ``(summary, evidence ids,
    dropped points)``.
    """
    lines: list[str] = [header] if header else []
    evidence: list[str] = []
    dropped = 0
    used = utf8_len(header) + 1 if header else 0
    for key, label in REPORT_SECTIONS:
        for p in points.get(key, []):
            text = " ".join(p.text.split())
            capped = truncate_utf8(text, caps.report_point_max_bytes)
            if capped != text:
                capped = truncate_utf8(capped, caps.report_point_max_bytes - 3) + "…"
            line = f"[{label}] {capped} [{','.join(p.evidence)}]"
            cost = utf8_len(line) + 1
            if used + cost > caps.report_max_bytes:
                dropped += 1
                continue
            lines.append(line)
            used += cost
            evidence.extend(e for e in p.evidence if e not in evidence)
    return truncate_utf8("\n".join(lines), caps.report_max_bytes), evidence, dropped


#: Why an LLM report was rejected as saying nothing (asked for once more, then replaced).
REJECTED_REASONS = ("empty", "placeholder", "no_grounded_points")


def _grounded(
    output: ReportOutput, by_id: dict[str, FlowLogEntry], caps: JobCaps, tz: ZoneInfo
) -> tuple[dict[str, list[ReportPoint]], int, int]:
    """The LLM's points that cite messages of the week and say something, dated; with the counts
    of points dropped as ungrounded and as placeholders (:func:`is_placeholder`)."""
    points: dict[str, list[ReportPoint]] = {}
    ungrounded = placeholders = 0
    for key, _ in REPORT_SECTIONS:
        kept = []
        for p in getattr(output, key)[: caps.report_points_per_section]:
            if not p.evidence or any(e not in by_id for e in p.evidence):
                ungrounded += 1
                continue
            if is_placeholder(p.text):
                placeholders += 1
                continue
            first = min((by_id[e] for e in p.evidence), key=lambda m: m.at)
            kept.append(ReportPoint(text=f"{first.at.astimezone(tz).strftime('%m-%d')} {p.text}", evidence=p.evidence))
        points[key] = kept
    return points, ungrounded, placeholders


def _llm_points(
    deps: JobDeps, messages: Sequence[FlowLogEntry], label: str, tz: ZoneInfo, tally: UsageTally
) -> tuple[dict[str, list[ReportPoint]] | None, str, int]:
    """The LLM's points with only grounded, substantive ones kept; ``(None, reason, n)`` to fall
    back (counted as ``LLMFallback``, task ``archive``, unless no LLM is configured or nothing of
    the week is left to send). The calls and their usage are added to ``tally``.

    A report that says nothing (:data:`REJECTED_REASONS`: no point, only placeholders, nothing
    grounded) is asked for once more; a second such report falls back. The LLM gets the messages'
    :func:`week_content` only (replies quoting old history left out), so it can neither read nor
    cite them."""
    llm = deps.structured_llm
    if llm is None:
        return None, "offline", 0
    caps = deps.caps
    own = [(m, week_content(m)) for m in messages]
    messages = [m if text == m.content else m.model_copy(update={"content": text}) for m, text in own if text.strip()]
    if not messages:
        return None, "nothing_of_this_week", 0
    request = report_request(
        messages, iso_week=label, model=caps.llm_model_id, max_tokens=caps.llm_max_output_tokens,
        max_bytes_each=caps.llm_message_max_bytes, timeout_s=caps.llm_timeout_s, effort=caps.archive_effort,
    )
    if request_input_tokens(request) > caps.llm_input_token_budget:
        record_fallback(ARCHIVE_TASK, "input_over_budget")
        return None, "input_over_budget", 0
    by_id = {m.message_id: m for m in messages}
    reason, ungrounded = "empty", 0
    for _attempt in range(2):
        try:
            answer = call_structured(llm, request, ReportOutput)
        except LLMError as exc:  # a truncated reply included: nothing of it is used
            tally.add(failure_usage(exc))
            reason = failure_reason(exc)
            record_fallback(ARCHIVE_TASK, reason)
            return None, reason, 0
        tally.add(answer.usage)
        points, ungrounded, placeholders = _grounded(answer.value, by_id, caps, tz)
        if any(points.values()):
            return points, "llm", ungrounded
        reason = "placeholder" if placeholders else "no_grounded_points" if ungrounded else "empty"
    record_fallback(ARCHIVE_TASK, reason)
    return None, reason, ungrounded


def _alert_rejected(deps: JobDeps, pid: str, label: str, reason: str) -> None:
    """The LLM's weekly report said nothing twice: count it and tell the admins (no message text)."""
    count_metric("ArchiveLLMReportRejected")
    logger.warning("LLM weekly report rejected", extra={"project_id": pid, "iso_week": label, "reason": reason})
    send_alert(deps, Alert(
        project_id=pid,
        kind="archive_llm_report_rejected",
        subject=f"Agent Memory: LLM weekly report rejected ({pid} {label})",
        message=(
            f"Project {pid}, week {label}: the LLM's weekly report said nothing ({reason}) twice; "
            "the offline summary was stored instead."
        ),
        dedupe_key=f"archive-rejected#{label}",
    ))


def run_archive(deps: JobDeps, project: Project, run_date: date) -> JobReport:
    """Archive the ISO week before ``run_date``'s week for ``project`` (see module docstring).

    Returns:
        JobReport with counts ``messages``, ``points``, ``points_dropped``, ``ungrounded``,
        ``summary_bytes``; details ``iso_week``, ``window_utc``, ``summariser``,
        ``fallback_reason`` when the offline summary answered, ``llm_calls`` and ``llm_usage``
        (the four token counts summed, None when no call reported any) when the LLM was called,
        and ``existing_report`` / ``already_done`` / ``reason = "period_not_over"`` when nothing
        was written.
    """
    label, monday = archive_week(run_date)
    start, end = iso_week_window(monday, project.time_zone)
    progress = JobProgress(JOB, project.project_id, run_date,
                           details={"iso_week": label, "window_utc": [start.isoformat(), end.isoformat()]})
    if not period_over(end, deps.clock()):
        progress.details["reason"] = "period_not_over"
        return progress.report(False)
    if progress.already_done(deps.store, label):
        return progress.report(False)
    if deps.store.get_weekly_report(project.project_id, label) is not None:
        progress.details["existing_report"] = True
        return progress.report(False)
    # Feedback events are not conversation: they become the report's feedback section.
    messages, feedback = split_feedback(deps.store.read_flow_log(project.project_id, start, end))
    progress.counts["messages"] = len(messages)
    if not messages:
        return progress.report(False)
    points = _week_points(deps, progress, messages, label, zone(project.time_zone))
    summary, evidence, dropped = render_summary(points, deps.caps, overview(label, points, len(messages)))
    summary = with_feedback_section(summary, feedback, deps.caps.report_max_bytes)
    progress.counts.update(
        points=sum(len(v) for v in points.values()) - dropped,
        points_dropped=dropped,
        summary_bytes=utf8_len(summary),
    )
    now = deps.clock()
    written = deps.store.commit_weekly_report(
        WeeklyReport(project_id=project.project_id, iso_week=label, summary=summary, created_at=now,
                     created_by=ARCHIVER, evidence=evidence),
        JobRun(project_id=project.project_id, job=JOB, key=label, completed_at=now, counts=dict(progress.counts)),
    )
    if written:
        count_metric("ReportsArchived")
    else:
        progress.details["existing_report"] = True
    logger.info("archiving done", extra={"project_id": project.project_id, "iso_week": label,
                                         "counts": progress.counts, "written": written})
    return progress.report(written)


def _week_points(deps: JobDeps, progress: JobProgress, messages: list[FlowLogEntry], label: str,
                 tz: ZoneInfo) -> dict[str, list[ReportPoint]]:
    """The week's points by section: the LLM's grounded ones, else the offline summary (an LLM
    report that said nothing twice is alerted), else one point counting the week's messages."""
    points, summariser, ungrounded = _llm_points(deps, messages, label, tz, progress.tally)
    if points is None:
        progress.details["fallback_reason"] = summariser
        if summariser in REJECTED_REASONS:
            _alert_rejected(deps, progress.project_id, label, summariser)
        points, summariser = summarise_offline(messages, tz, deps.caps), "offline"
    if not any(points.values()):
        users = sum(1 for m in messages if m.role == "user")
        sessions = len({m.session_id for m in messages})
        points = {"progress": [ReportPoint(
            text=(
                f"本周对话 {len(messages)} 条（用户 {users} 条，{sessions} 个会话），"
                "未识别到需要归档的进度、决策或问题。"
            ),
            evidence=[messages[0].message_id],
        )]}
    progress.details["summariser"] = summariser
    progress.counts["ungrounded"] = ungrounded
    return points


__all__ = ["REJECTED_REASONS", "overview", "render_summary", "run_archive", "summarise_offline", "week_content"]
