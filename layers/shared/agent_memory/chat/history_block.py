"""The history block of a prompt (docs/architecture.md, "History" and "Prompt caching"): the weekly
reports a history context loaded, oldest first, the yearly summaries standing for older periods,
and, for a question that named a period, that period and the weeks of it without a report.

Also the one escape of the prompt's block tags, which every block of stored text goes through.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent_memory.domain.models import WeeklyReport, YearlySummary
from agent_memory.domain.text import estimate_tokens

#: An opening or closing tag of one of the prompt's delimited blocks, as stored text might carry it.
_BLOCK_TAG = re.compile(r"<(\s*/?\s*(?:hot_memory|history_book|session|conversation_memory)\b)", re.IGNORECASE)


def neutralise_block_tags(text: str) -> str:
    """``text`` with every tag of the prompt's own blocks (``<hot_memory>``, ``</session>``, ...)
    written with a full-width ``＜``: what users, admins or the distiller wrote can never close a
    block and speak from outside it (docs/architecture.md, "Prompt caching")."""
    return _BLOCK_TAG.sub(lambda m: "\uff1c" + m.group(1), text)


# -------------------------------------------------------------------- history
def select_history(reports: Sequence[WeeklyReport], *, max_weeks: int, max_tokens: int) -> list[WeeklyReport]:
    """The newest reports that fit: at most ``max_weeks`` and ``max_tokens``; when trimming,
    the newest weeks are kept. Returned oldest first (reading order)."""
    newest_first = sorted(reports, key=lambda r: r.iso_week, reverse=True)[:max_weeks]
    kept: list[WeeklyReport] = []
    used = 0
    for r in newest_first:
        cost = estimate_tokens(render_report(r))
        if used + cost > max_tokens:
            break
        kept.append(r)
        used += cost
    return list(reversed(kept))


def render_report(report: WeeklyReport) -> str:
    """One week in the history block: ``## 2026-W05`` then the summary."""
    return f"## {report.iso_week}\n{report.summary.strip()}"


def select_yearly(
    yearly: Sequence[YearlySummary], weeks: Sequence[WeeklyReport], *, max_tokens: int
) -> list[YearlySummary]:
    """Yearly summaries for the periods older than the loaded weeks, newest year first within
    ``max_tokens``; returned oldest first. A year is used when it is older than the oldest
    loaded week's ISO year, or is that year but the loaded weeks do not start at its W01."""
    if not yearly:
        return []
    if weeks:
        oldest = min(r.iso_week for r in weeks)
        oldest_year, oldest_week = int(oldest[:4]), int(oldest[6:])
    else:
        oldest_year, oldest_week = 10_000, 1
    eligible = [
        y for y in yearly if y.year < oldest_year or (y.year == oldest_year and oldest_week > 1)
    ]
    kept: list[YearlySummary] = []
    used = 0
    for y in sorted(eligible, key=lambda y: y.year, reverse=True):
        cost = estimate_tokens(render_yearly(y))
        if used + cost > max_tokens:
            break
        kept.append(y)
        used += cost
    return sorted(kept, key=lambda y: y.year)


def render_yearly(summary: YearlySummary) -> str:
    """One year in the history block: ``## 2025 (yearly summary)`` then the summary."""
    return f"## {summary.year} (yearly summary)\n{summary.summary.strip()}"


#: Most weeks without a report named one by one in the history block (more are counted).
MISSING_WEEKS_NAMED = 12


def render_history_block(
    reports: Sequence[WeeklyReport], yearly: Sequence[YearlySummary] = (), *, period: str | None = None,
    missing: Sequence[str] = (),
) -> str:
    """The delimited history block: yearly summaries of older years, then the weeks, oldest first.

    ``period``: the period the question named (the weeks loaded and the phrase's days, see
    :meth:`agent_memory.history.loading.HistorySpan.describe`), stated first; ``missing``: the weeks
    of that period without a weekly report, named (at most :data:`MISSING_WEEKS_NAMED`, the rest
    counted) so that the answer says "no report for week N" only for those."""
    parts = [render_yearly(y) for y in yearly] + [render_report(r) for r in reports]
    head: list[str] = []
    if period is not None:
        head.append(f"Period asked about: {period}. Only these weeks are loaded.")
    if missing:
        named = ", ".join(missing[:MISSING_WEEKS_NAMED])
        more = f" and {len(missing) - MISSING_WEEKS_NAMED} more" if len(missing) > MISSING_WEEKS_NAMED else ""
        head.append(f"No weekly report for: {named}{more}.")
    body = neutralise_block_tags("\n\n".join(["\n".join(head)] * bool(head) + parts))
    years = f' years="{len(yearly)}"' if yearly else ""
    weeks = f' range="{period.split(" ", 1)[0]}"' if period else ""
    return f'<history_book weeks="{len(reports)}"{years}{weeks}>\n{body}\n</history_book>'
