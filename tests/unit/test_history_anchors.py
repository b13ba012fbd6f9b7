"""The time-anchor resolver: a history question's period -> ISO-week range in the project's zone
(agent_memory.history.anchors; the rules in its module docstring)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.history.anchor_events import festival_days
from agent_memory.history.anchors import iso_week, resolve_anchor

SHANGHAI = "Asia/Shanghai"
#: Wednesday 2026-05-13 10:20 in Shanghai: ISO week 2026-W20, the last complete week is W19.
WED = datetime(2026, 5, 13, 2, 20, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]


def weeks(question: str, now: datetime = WED, zone: str = SHANGHAI, milestones: tuple[str, ...] = ()) -> tuple[
        str, str] | None:
    found = resolve_anchor(question, now, zone, milestones)
    return None if found is None else (found.first, found.last)


def test_last_month_is_the_previous_calendar_month_by_overlapping_weeks() -> None:
    assert weeks("上个月我们做了哪些决定？") == ("2026-W14", "2026-W18")  # 04-01 is a Wednesday, 04-30 a Thursday


def test_last_quarter_in_english_is_the_previous_calendar_quarter() -> None:
    assert weeks("What went wrong last quarter?") == ("2026-W01", "2026-W14")


def test_past_n_weeks_are_the_complete_weeks_before_the_current_one() -> None:
    assert weeks("最近两周出了什么问题") == ("2026-W18", "2026-W19")
    assert weeks("in the past three weeks, any issues?") == ("2026-W17", "2026-W19")


def test_a_period_reaching_into_the_current_week_ends_at_the_last_complete_week() -> None:
    found = resolve_anchor("今年上半年踩过哪些坑", WED, SHANGHAI)
    assert found is not None
    assert (found.first, found.last, found.end) == ("2026-W01", "2026-W19", date(2026, 5, 10))


def test_the_local_date_decides_not_the_utc_date() -> None:
    # 2026-02-28 17:30 UTC is already Sunday 1 March in Shanghai: last month is February.
    now = datetime(2026, 2, 28, 17, 30, tzinfo=UTC)
    assert weeks("上个月我们定了什么？", now) == ("2026-W05", "2026-W08")  # W09 holds "now": not complete
    assert weeks("上个月我们定了什么？", now, "Europe/Berlin") == ("2026-W01", "2026-W05")


def test_last_month_in_january_is_december_of_the_previous_year_with_week_53() -> None:
    now = datetime(2027, 1, 5, 3, 0, tzinfo=UTC)
    assert weeks("上个月有哪些方案偏离", now) == ("2026-W49", "2026-W53")
    assert weeks("第53周有什么问题", now) == ("2026-W53", "2026-W53")


def test_a_week_number_is_its_latest_complete_occurrence() -> None:
    assert weeks("What went wrong in week 46?") == ("2025-W46", "2025-W46")
    assert weeks("wk 15 有什么决定吗") == ("2026-W15", "2026-W15")


def test_explicit_week_and_date_ranges() -> None:
    assert weeks("2026-W10 到 W14 期间有哪些决定") == ("2026-W10", "2026-W14")
    assert weeks("3月1日到15日之间遇到了什么问题") == ("2026-W09", "2026-W11")
    assert weeks("What was decided between March 2 and March 20?") == ("2026-W10", "2026-W12")


def test_a_month_not_yet_come_this_year_is_last_years() -> None:
    assert weeks("12月份的数据清理定了什么规矩") == ("2025-W49", "2026-W01")


def test_festival_days_come_from_the_holiday_calendar() -> None:
    assert festival_days("CN", ("春节", "除夕"), 2026) == tuple(date(2026, 2, d) for d in (16, 17, 18, 19))


def test_around_a_festival_is_seven_days_either_side() -> None:
    # 国庆 2026: 10-01..10-03 and the in-lieu 10-05; asked on 2026-10-14 (W42 current)
    now = datetime(2026, 10, 14, 1, 30, tzinfo=UTC)
    assert weeks("国庆节前后出了什么问题", now) == ("2026-W39", "2026-W41")


def test_before_a_festival_not_yet_begun_this_year_is_last_years() -> None:
    now = datetime(2026, 1, 8, 1, 0, tzinfo=UTC)  # the 2026 Spring Festival (02-16) has not begun
    assert weeks("春节前我们在纠结什么问题", now) == ("2025-W03", "2025-W05")


def test_christmas_in_english() -> None:
    now = datetime(2026, 1, 8, 1, 0, tzinfo=UTC)
    assert weeks("What happened around Christmas?", now) == ("2025-W51", "2026-W01")


def test_a_milestone_is_dated_by_the_hot_memory_line_naming_it() -> None:
    lines = ("里程碑：01中心SIV于2025-09-22完成，首例受试者于2025年10月28日入组。",)
    now = datetime(2025, 11, 20, 7, 0, tzinfo=UTC)
    assert weeks("首例入组那周我们遇到了什么问题", now, milestones=lines) == ("2025-W44", "2025-W44")
    assert weeks("SIV之后出了哪些问题？", now, milestones=lines) == ("2025-W39", "2025-W41")
    assert weeks("SIV之后出了哪些问题？", now) is None  # without the line the milestone is unknown


def test_no_anchor_future_and_current_periods_give_none() -> None:
    for question in ("我们之前为什么换了中心实验室？", "下个月的监查访视安排一下", "这周入组几个了", "以后周报周一发"):
        assert weeks(question) is None, question


def test_half_units_are_half_a_year_or_half_a_month() -> None:
    assert weeks("近半年我们吸取了哪些教训") == ("2025-W46", "2026-W19")
    assert weeks("近半个月有什么问题") == ("2026-W18", "2026-W19")


def test_code_switched_quarter_and_month_words() -> None:
    assert weeks("去年Q4出了什么问题") == ("2025-W40", "2026-W01")
    assert weeks("we may have missed something") is None  # "may" without a preposition is no month


def test_the_label_names_the_days_and_weeks() -> None:
    found = resolve_anchor("上周例会定了什么", WED, SHANGHAI)
    assert found is not None
    assert found.label == "spans: 2026-05-04..2026-05-10 (2026-W19..2026-W19)"
    assert found.weeks() == ["2026-W19"]


def test_a_naive_now_is_refused() -> None:
    with pytest.raises(ValueError):
        resolve_anchor("上周", datetime(2026, 5, 13, 10, 0), SHANGHAI)


@settings(max_examples=60, deadline=None)
@given(day=st.dates(min_value=date(2024, 3, 1), max_value=date(2027, 12, 31)),
       question=st.sampled_from(["上个月出了什么问题", "最近三周", "上季度", "去年下半年", "第10周", "今年以来",
                                 "last quarter", "3月份", "the past 2 months"]))
def test_a_range_is_ordered_and_never_reaches_the_current_week(day: date, question: str) -> None:
    now = datetime(day.year, day.month, day.day, 4, 0, tzinfo=UTC)
    found = resolve_anchor(question, now, SHANGHAI)
    if found is not None:
        assert found.first <= found.last < iso_week(day)
        assert found.weeks()[0] == found.first and found.weeks()[-1] == found.last


def test_the_holiday_calendar_is_imported_only_for_a_festival() -> None:
    code = (
        "import sys\nfrom datetime import datetime, UTC\nfrom agent_memory.history.anchors import resolve_anchor\n"
        "now = datetime(2026, 5, 13, 2, tzinfo=UTC)\nresolve_anchor('上个月出了什么问题', now, 'Asia/Shanghai')\n"
        "print('holidays' in sys.modules)\nresolve_anchor('春节前后出了什么问题', now, 'Asia/Shanghai')\n"
        "print('holidays' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT / "layers" / "shared")}, timeout=60)
    assert out.stdout.split() == ["False", "True"]


def test_the_eval_sets_resolve_as_labelled() -> None:
    """Every labelled anchor row of eval/ resolves to its range (the conventions of eval/SETS.md)."""
    import json

    wrong = []
    for name in ("history_anchors.jsonl", "history_anchors_heldout.jsonl"):
        for raw in (ROOT / "eval" / name).read_text("utf-8").splitlines():
            row = json.loads(raw)
            if row["kind"] == "subject_past":
                continue
            got = weeks(row["text"], datetime.fromisoformat(row["now"]), row["time_zone"],
                        tuple(row.get("hot_memory", [])))
            if got != (None if row["expected"] is None else (row["expected"]["first"], row["expected"]["last"])):
                wrong.append(row["id"])
    assert wrong == []


@pytest.mark.parametrize("text", [
    "P001 在 2026-02-30 的随访做了吗", "2026-13-01 的周报", "2026年2月30日 入组情况", "2月30日到3月1日 入组情况",
    "2027-02-29T10:00 提醒我清理Query", "2027-04-31 提醒我清理Query", "what happened on February 30",
    "13月1日到2日", "0月5日的会议",
])
def test_a_day_no_calendar_has_anchors_nothing_and_is_no_error(text: str) -> None:
    # Given a question naming an impossible day (the whole kind: ISO, Chinese and English dates, ranges)
    from agent_memory.history.anchors import names_period

    # When it is read, Then it anchors nothing and raises nothing
    assert resolve_anchor(text, datetime(2026, 3, 10, 9, tzinfo=UTC), "Asia/Shanghai") is None
    assert names_period(text) in (True, False)  # (another finder may still read a valid part)


@given(st.integers(-5, 40), st.integers(-5, 40), st.integers(1, 9999))
@settings(max_examples=200, deadline=None)
def test_any_year_month_and_day_numbers_never_raise(month: int, day: int, year: int) -> None:
    from agent_memory.history.anchors import names_period

    for text in (f"{year:04d}-{month:02d}-{day:02d}", f"{month}月{day}日", f"{year}年{month}月{day}日到{day}日"):
        names_period(text)
        resolve_anchor(text, datetime(2026, 3, 10, 9, tzinfo=UTC), "UTC")


def test_two_periods_compared_load_both() -> None:
    # Given "now" in May 2026: last year's halves compared, and last month against the month before
    assert weeks("去年上半年和去年下半年比，入组速度有什么变化？") == ("2025-W01", "2026-W01")
    assert weeks("上个月和上上个月比，query多了还是少了？") == ("2026-W09", "2026-W18")  # 03-01 is a Sunday (W09)
    # one period named on one side only: the usual single period
    assert weeks("上个月和现在比怎么样") == ("2026-W14", "2026-W18")


def test_a_review_of_an_anchored_period_loads_history() -> None:
    from agent_memory.chat.intents import RuleIntentClassifier
    from agent_memory.domain.models import HISTORY_INTENTS

    rules = RuleIntentClassifier()
    assert set(rules.classify("国庆前后入组进展如何？").intents) & HISTORY_INTENTS
    assert not set(rules.classify("现在入组进展如何？").intents) & HISTORY_INTENTS
