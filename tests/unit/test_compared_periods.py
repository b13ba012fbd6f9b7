"""Two periods compared load both, and only those (agent_memory.history.anchors, "compared"): periods
around events (a festival of the ``holidays`` calendar) and relative periods, on their own or
against each other, as the two absolute weeks of "W23 和 W30 比较" already did. A question naming
one period beside an unrelated 和 / and still names that period alone. Sentences written for these
tests (zh, en)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_memory.domain.models import WeeklyReport
from agent_memory.history.anchors import resolve_anchor
from agent_memory.history.loading import load_history_for
from tests.fakes import InMemoryStore, project_partition
from tests.unit.chat_support import T0, seed_project

SHANGHAI = "Asia/Shanghai"
#: Wednesday 2026-05-13 10:20 in Shanghai: ISO week 2026-W20, the last complete week is W19.
WED = datetime(2026, 5, 13, 2, 20, tzinfo=UTC)

#: 2026 Spring Festival (02-16..02-19) ± 7 days
SPRING = ["2026-W07", "2026-W08", "2026-W09"]
#: 2025 National Day (10-01..10-03) ± 7 days
NATIONAL = ["2025-W39", "2025-W40", "2025-W41"]
#: Christmas 2025 ± 7 days
CHRISTMAS = ["2025-W51", "2025-W52", "2026-W01"]
#: Easter 2026 (Good Friday 04-03 to Easter Monday 04-06) ± 7 days
EASTER = ["2026-W13", "2026-W14", "2026-W15", "2026-W16"]
APRIL = ["2026-W14", "2026-W15", "2026-W16", "2026-W17", "2026-W18"]


def _weeks(question: str) -> list[str] | None:
    found = resolve_anchor(question, WED, SHANGHAI)
    return None if found is None else found.weeks()


COMPARED = [
    ("春节前后和国庆前后比，入组有什么变化？", NATIONAL + SPRING),
    ("国庆前后跟春节前后相比，脱落多了吗", NATIONAL + SPRING),
    ("中秋前后跟国庆前后对比", ["2025-W39", "2025-W40", "2025-W41", "2025-W42"]),  # 中秋 2025-10-06 ± 7
    ("去年国庆和今年春节对比一下query数量", ["2025-W40", "2026-W08"]),
    ("国庆前后和上个月比，入组速度怎么样", NATIONAL + APRIL),
    ("compare the weeks around Christmas with the weeks around Chinese New Year", CHRISTMAS + SPRING),
    ("compare the weeks around Easter with the weeks around Christmas", CHRISTMAS + EASTER),
    ("How did screening around Christmas compare with last month?", CHRISTMAS + APRIL),
    ("上个月和这个月比，query多了还是少了？", [*APRIL, "2026-W19"]),
    ("How did enrolment last month compare with this month?", [*APRIL, "2026-W19"]),
    ("Q3 vs Q1: dropout rates?", [f"2025-W{w}" for w in range(27, 41)] + [f"2026-W{w:02d}" for w in range(1, 15)]),
]


@pytest.mark.parametrize(("question", "expected"), COMPARED)
def test_two_compared_periods_load_both_and_only_those(question: str, expected: list[str]) -> None:
    assert _weeks(question) == expected


ONE_PERIOD = [
    ("春节前后入组和脱落情况怎么样", SPRING),
    ("What happened with screening and enrolment around Christmas?", CHRISTMAS),
    ("国庆前后的query和偏离有哪些", NATIONAL),
]


@pytest.mark.parametrize(("question", "expected"), ONE_PERIOD)
def test_one_period_beside_an_unrelated_and_is_that_period(question: str, expected: list[str]) -> None:
    assert _weeks(question) == expected


def test_a_turn_comparing_two_festivals_reads_only_their_weeks() -> None:
    # Given a history book from 2025-W30 to 2026-W10 and "now" in March 2026
    store = InMemoryStore()
    seed_project(store, weeks=0)
    weeks = [f"2025-W{w}" for w in range(30, 53)] + [f"2026-W{w:02d}" for w in range(1, 11)]
    for week in weeks:
        project_partition(store).put_weekly_report(WeeklyReport(
            project_id="p1", iso_week=week, summary=f"[进度]: {week} 入组 2 人。", created_at=T0))
    anchor = resolve_anchor("春节前后和国庆前后比，入组有什么变化？", T0, SHANGHAI)
    assert anchor is not None

    # When the turn's history is loaded for it
    load = load_history_for(store, "p1", anchor, cap=50, yearly_read=list)

    # Then exactly the weeks around the two festivals are read
    assert sorted(r.iso_week for r in load.reports) == NATIONAL + SPRING
