"""A history question that names a period loads exactly that period's weekly reports (the chat turn on
the in-memory fakes; the resolver itself is tested in ``test_history_anchors.py``): the context names
the range, the offline answer cites the period's points, "no report" only for weeks without one,
ranges over 50 weeks through yearly summaries, no period -> the newest weeks as before."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from agent_memory.chat.context_view import turn_context
from agent_memory.domain.models import HotMemoryLine, WeeklyReport, YearlySummary
from agent_memory.history.loading import load_history_for
from tests.fakes import FakeClock, InMemoryStore
from tests.unit.chat_support import deps_with, llm_requests, seed_project, send, system_blocks

#: Wednesday 2026-05-13, 10:20 in Shanghai: the last complete ISO week is 2026-W19.
ASKED = datetime(2026, 5, 13, 2, 20, tzinfo=UTC)


def _week(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def _book(store: InMemoryStore, first: date, last: date, *, skip: tuple[str, ...] = ()) -> list[str]:
    """A report for every ISO week from the one holding ``first`` to the one holding ``last``
    (except ``skip``), each naming its week; the weeks written, oldest first."""
    weeks, monday = [], first - timedelta(days=first.weekday())
    while monday <= last:
        week = _week(monday)
        if week not in skip:
            store.put_weekly_report(WeeklyReport(
                project_id="p1", iso_week=week, created_at=ASKED,
                summary=f"[进度]: {week} 入组 2 例。\n[问题]: {week} 的中心监查发现 3 份CRF漏填。"))
            weeks.append(week)
        monday += timedelta(days=7)
    return weeks


def _deps(store: InMemoryStore, hot_lines: list[HotMemoryLine] | None = None) -> Any:
    seed_project(store, weeks=0, hot_lines=hot_lines)
    deps = deps_with(store)
    deps.now = FakeClock(ASKED, tick=timedelta(seconds=1))
    return deps


def _weeks_sent(deps: Any) -> list[str]:
    history = system_blocks(llm_requests(deps)[-1]).get("history", "")
    return [ln[3:] for ln in history.splitlines() if ln.startswith("## ") and "yearly" not in ln]


def test_last_month_loads_exactly_its_weeks_and_names_the_range(store: InMemoryStore) -> None:
    # Given reports for every week of 2025 and 2026 up to the last complete week
    deps = _deps(store)
    _book(store, date(2025, 1, 1), date(2026, 5, 10))

    # When "上个月我们做了哪些决定？" is asked on 2026-05-13
    result = send(deps, "上个月我们做了哪些决定？")

    # Then April's weeks (2026-W14..W18) and nothing else reach the prompt, oldest first
    assert _weeks_sent(deps) == ["2026-W14", "2026-W15", "2026-W16", "2026-W17", "2026-W18"]
    # and the history block, the call report and the context view name the period
    history = system_blocks(llm_requests(deps)[-1])["history"]
    assert 'range="2026-W14..2026-W18"' in history
    assert "Period asked about: 2026-W14..2026-W18 (months: 2026-04-01..2026-04-30" in history
    assert result.calls[0].history_period is not None
    assert result.calls[0].history_period.startswith("2026-W14..2026-W18")
    view = turn_context(store, "p1", "s1", result.message_id)
    assert view["calls"][0]["history_period"]["first"] == "2026-W14"
    assert view["calls"][0]["history_period"]["missing"] == []


def test_week_46_answer_cites_the_weeks_problem_never_no_entry(store: InMemoryStore) -> None:
    # Given the 2025-W46 report lists a problem, and every other week has a report too
    deps = _deps(store)
    _book(store, date(2025, 1, 1), date(2026, 5, 10))

    # When "What went wrong in week 46?" is asked (no word of the question is in the report)
    result = send(deps, "What went wrong in week 46?")

    # Then only W46 is loaded and the offline answer cites its points
    assert _weeks_sent(deps) == ["2025-W46"]
    assert "No entry" not in result.reply
    assert "2025-W46" in result.reply and "CRF漏填" in result.reply


def test_no_report_for_week_n_only_when_there_is_none(store: InMemoryStore) -> None:
    # Given reports for every week but 2026-W12
    deps = _deps(store)
    _book(store, date(2026, 1, 1), date(2026, 5, 10), skip=("2026-W12",))

    # When week 12 is asked about
    result = send(deps, "第12周出了什么问题？")

    # Then the answer says there is no report for that week, and the block names it
    assert _weeks_sent(deps) == []
    assert "No weekly report for: 2026-W12." in system_blocks(llm_requests(deps)[-1])["history"]
    assert "2026-W12 没有周报" in result.reply

    # When a range holding it is asked about, the other weeks are cited and the gap named
    result = send(deps, "第11周到第13周遇到了哪些问题", session_id="s2")
    assert _weeks_sent(deps) == ["2026-W11", "2026-W13"]
    assert "2026-W11" in result.reply and "2026-W12 没有周报" in result.reply


def test_a_holiday_anchor_uses_the_calendar_library(store: InMemoryStore) -> None:
    # Given a year of reports; the calendar library names 2025-10-01..03 国庆节
    deps = _deps(store)
    _book(store, date(2025, 1, 1), date(2026, 5, 10))

    # When "国庆节前后" is asked about: the festival's days +- 7 days
    send(deps, "国庆节前后各中心出了哪些问题")

    # Then the weeks from 7 days before to 7 days after the festival (09-24..10-10)
    assert _weeks_sent(deps) == ["2025-W39", "2025-W40", "2025-W41"]


def test_a_milestone_named_in_hot_memory_anchors_the_question(store: InMemoryStore) -> None:
    # Given hot memory dates the first enrolment on 2025-10-28
    line = HotMemoryLine(line_id="hm-fpi", section="Active Context", text="首例受试者于2025-10-28入组",
                         source="admin", created_at=ASKED - timedelta(days=100), created_by="admin-1")
    deps = _deps(store, [line])
    _book(store, date(2025, 1, 1), date(2026, 5, 10))

    # When "首例入组前后" is asked about
    send(deps, "首例入组前后做了什么决定")

    # Then the weeks around 2025-10-28 (+- 7 days): 2025-W43..W45
    assert _weeks_sent(deps) == ["2025-W43", "2025-W44", "2025-W45"]


def test_a_range_over_fifty_weeks_loads_its_newest_fifty_and_its_years_summaries(store: InMemoryStore) -> None:
    # Given reports since 2024 and yearly summaries of 2023, 2024 and 2025
    deps = _deps(store)
    _book(store, date(2024, 1, 1), date(2026, 5, 10))
    for year in (2023, 2024, 2025):
        store.put_yearly_summary(YearlySummary(project_id="p1", year=year, summary=f"{year} 全年入组汇总。",
                                               created_at=ASKED))

    # When the question names 2024-2026 ("前年以来": from 2024-01-01 to now, 123 weeks)
    result = send(deps, "前年以来我们都调整过哪些流程")

    # Then the newest 50 weeks of the range are loaded, and the range's older years come as yearly
    # summaries: 2024 and 2025, never 2023 (before the range)
    assert len(_weeks_sent(deps)) == 50 and _weeks_sent(deps)[-1] == "2026-W19"
    history = system_blocks(llm_requests(deps)[-1])["history"]
    assert "## 2024 (yearly summary)" in history and "## 2025 (yearly summary)" in history
    assert "2023" not in history
    assert result.calls[0].history_weeks == 50


def test_no_anchor_keeps_the_newest_weeks(store: InMemoryStore) -> None:
    # Given 60 weeks of reports
    deps = _deps(store)
    weeks = _book(store, date(2025, 3, 1), date(2026, 5, 10))

    # When a history question names no period
    result = send(deps, "我们之前为什么暂停了筛选？")

    # Then the 50 newest weeks, as before; no period is named
    assert _weeks_sent(deps) == weeks[-50:]
    assert result.calls[0].history_period is None
    assert "Period asked about" not in system_blocks(llm_requests(deps)[-1])["history"]


def test_the_loader_reads_one_range_for_an_anchor(store: InMemoryStore) -> None:
    # Given a history book and a resolved range
    from agent_memory.history.loading import anchor_of

    seed_project(store, weeks=0)
    _book(store, date(2026, 1, 1), date(2026, 5, 10))
    anchor = anchor_of("上季度", ASKED, "Asia/Shanghai", [])
    calls: list[str] = []

    def yearly() -> list[YearlySummary]:
        calls.append("yearly")
        return []

    # When the reports are loaded for it
    load = load_history_for(store, "p1", anchor, cap=50, yearly_read=yearly)

    # Then exactly Q1's weeks, newest first, and no yearly summaries are asked for
    assert [r.iso_week for r in load.reports] == [f"2026-W{w:02d}" for w in range(14, 0, -1)]
    assert load.span is not None and (load.span.first, load.span.last) == ("2026-W01", "2026-W14")
    assert calls == []
