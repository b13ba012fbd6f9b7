"""History older than the 50 loaded weeks reaches the prompt through yearly summaries, and only
when the loaded weeks reach that cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent_memory.chat.turn import handle_message
from agent_memory.domain.models import WeeklyReport, YearlySummary
from tests.fakes import InMemoryStore, ScriptedLLM
from tests.unit.chat_support import T0, chat_llm, make_deps, seed_project


def _weeks(project_id: str, first_year: int, count: int) -> list[WeeklyReport]:
    start = datetime(first_year, 1, 5, tzinfo=UTC)  # a Monday of ISO week 1
    out = []
    for i in range(count):
        day = (start + timedelta(weeks=i)).date()
        year, week, _ = day.isocalendar()
        out.append(WeeklyReport(project_id=project_id, iso_week=f"{year}-W{week:02d}",
                                summary=f"[进度]: 第 {i} 周入组 {i % 4} 人。", created_at=T0))
    return out


def _history_text(llm: ScriptedLLM) -> str:
    blocks = {b.name: b.text for b in llm.requests[-1].system}
    return blocks.get("history", "")


def test_trend_question_beyond_fifty_weeks_gets_the_older_years_summaries(store: InMemoryStore) -> None:
    # Given 60 weekly reports from 2025-W02 on and yearly summaries of 2023 and 2024
    seed_project(store, weeks=0)
    for report in _weeks("p1", 2025, 60):
        store.put_weekly_report(report)
    for year in (2023, 2024):
        store.put_yearly_summary(
            YearlySummary(project_id="p1", year=year, summary=f"{year} 年共入组 {year - 2000} 人。", created_at=T0)
        )
    llm = chat_llm()
    deps = make_deps(store, llm)

    # When a trend question is asked
    result = handle_message(deps, project_id="p1", session_id="s1", user_id="u1",
                            content="回顾一下入组趋势", patient_id=None, deadline=None)

    # Then the 50 newest weeks and both older years are in the history block, years first
    assert result.calls[0].history_weeks == 50
    history = _history_text(llm)
    assert "## 2023 (yearly summary)" in history and "## 2024 (yearly summary)" in history
    assert history.index("## 2024 (yearly summary)") < history.index("## 2025-W")
    assert 'years="2"' in history


def test_short_history_makes_no_yearly_query(store: InMemoryStore) -> None:
    # Given a project with only 3 weeks of history (and a stray yearly summary)
    seed_project(store, weeks=3)
    store.put_yearly_summary(YearlySummary(project_id="p1", year=2024, summary="old", created_at=T0))
    llm = chat_llm()
    deps = make_deps(store, llm)

    # When a history question is asked
    handle_message(deps, project_id="p1", session_id="s1", user_id="u1",
                   content="我们为什么暂停了筛选？", patient_id=None, deadline=None)

    # Then only the weeks are in the prompt: the yearly summaries are for periods beyond the cap
    history = _history_text(llm)
    assert "yearly summary" not in history
    assert "## 2026-W03" in history
