"""One message asking for a QC run AND about the project's past: two contexts of one turn, the QC one
without any history, the history one with exactly the weeks of the period its own part names (never
the period of the data to check); QC-only and history-only look-alikes unchanged. Also: two periods
compared apart load those periods only, a span stays a span (docs/architecture.md, "Intents" and
"History"). The labelled set of these kinds is eval/qc_history.jsonl (``make eval``)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any

import pytest

from agent_memory.chat.intents import history_part, plan_calls
from agent_memory.chat.session_block import OTHER_PART_HEAD
from agent_memory.domain.models import HISTORY_INTENTS, Intent
from agent_memory.history.anchors import resolve_anchor
from agent_memory.history.loading import week_runs
from eval.anchors import expected_weeks, request_weeks, turn_requests
from eval.judgement import rows
from tests.fakes import InMemoryStore
from tests.unit.chat_support import deps_with, llm_requests, seed_project, send

NOW = datetime(2026, 3, 10, 2, tzinfo=UTC)  # Tuesday of 2026-W11 in Asia/Shanghai; W10 is the last complete week


def _sent(request: Any) -> str:
    """The messages of one request as sent (the session block of a context travels in them)."""
    return json.dumps(request.messages, ensure_ascii=False)


def _split(text: str, weeks: int = 10) -> tuple[Any, list[str], list[str], list[Any]]:
    """One turn of ``text`` on a project with reports 2026-W01..W``weeks``: the result, the weeks the QC
    contexts carried, the weeks the other contexts carried, the requests."""
    store = InMemoryStore()
    seed_project(store, "p1", weeks=weeks)
    deps = deps_with(store)
    result = send(deps, text)
    requests = llm_requests(deps)
    qc = [r for r in requests if "QC_TASK" in r.metadata["intents"]]
    other = [r for r in requests if r not in qc]
    return (result, sorted({w for r in qc for w in request_weeks(r)}),
            sorted({w for r in other for w in request_weeks(r)}), requests)


@pytest.mark.parametrize(("text", "weeks"), [
    # the QC half names a week, the history half another: only the history half's week is loaded
    ("质控一下第10周的数据，顺便说说第6周我们为什么暂停了筛选", ["2026-W06"]),
    ("QC week 9's entries and tell me what we decided in week 3 about the dose", ["2026-W03"]),
    # the QC half's "last week" is not joined to the history half's month into one span
    ("Can you QC last week's CRFs and remind me why we paused screening in February?",
     ["2026-W05", "2026-W06", "2026-W07", "2026-W08", "2026-W09"]),
    ("跑一下这周的QC，顺便说说上个月我们为什么暂停筛选", ["2026-W05", "2026-W06", "2026-W07", "2026-W08", "2026-W09"]),
    ("做个SDV核查 for P005, 顺便 recap 一下 what we decided about 入排标准 in week 2", ["2026-W02"]),
])
def test_qc_and_history_in_one_message_run_both_parts_history_with_its_own_period(text: str, weeks: list[str]) -> None:
    # When one message asks for a QC run and about the project's past
    result, qc_weeks, history_weeks, requests = _split(text)

    # Then a QC context ran with no history week at all, and a history context with exactly its period
    assert Intent.QC_TASK.value in result.intents and set(result.intents) & {i.value for i in HISTORY_INTENTS}
    assert qc_weeks == []
    assert history_weeks == weeks
    assert [c.history_weeks for c in result.calls] == [0, len(weeks)]
    # and each context is told that the other part is answered beside it (so neither says it cannot)
    qc_note = [_sent(r) for r in requests if "QC_TASK" in r.metadata["intents"]]
    history_note = [_sent(r) for r in requests if "QC_TASK" not in r.metadata["intents"]]
    assert all(f"{OTHER_PART_HEAD} the question about the project's past" in n for n in qc_note)
    assert all(f"{OTHER_PART_HEAD} the data quality check" in n and "QC_TASK" not in n for n in history_note)
    # and the reply holds both parts
    assert "【质控 QC】" in result.reply and "【历史 History】" in result.reply


@pytest.mark.parametrize("text", ["对上周录入的数据做质控", "Run QC on the data entered since January",
                                  "第10周录入的CRF做一下逻辑核查，重点看日期"])
def test_a_qc_only_message_with_a_period_loads_no_history(text: str) -> None:
    result, qc_weeks, history_weeks, requests = _split(text)
    assert result.intents == ["QC_TASK"]
    assert qc_weeks == history_weeks == []
    assert all(OTHER_PART_HEAD not in _sent(r) for r in requests)


@pytest.mark.parametrize(("text", "weeks"), [
    ("上个月我们为什么暂停筛选", ["2026-W05", "2026-W06", "2026-W07", "2026-W08", "2026-W09"]),
    # QC named as the topic of a decision or a trend is no QC run
    ("What did we decide about QC frequency in January?", ["2026-W01", "2026-W02", "2026-W03", "2026-W04", "2026-W05"]),
    ("我们上个月讨论质控频率时定了什么", ["2026-W05", "2026-W06", "2026-W07", "2026-W08", "2026-W09"]),
])
def test_a_history_only_message_about_qc_is_one_history_context(text: str, weeks: list[str]) -> None:
    result, qc_weeks, history_weeks, requests = _split(text)
    assert "QC_TASK" not in result.intents and qc_weeks == []
    assert history_weeks == weeks and len(requests) == 1


def test_history_part_drops_only_the_clauses_that_ask_for_qc() -> None:
    assert history_part("质控一下第10周的数据，顺便说说第6周我们为什么暂停了筛选") == "说说第6周我们为什么暂停了筛选"
    asked = "tell me what we decided in week 8"
    assert history_part(f"QC week 12's entries and {asked}") == asked
    # nothing to drop: the message as it is (normalised)
    assert history_part("上个月我们为什么暂停筛选") == "上个月我们为什么暂停筛选"
    assert history_part("Run QC on site 2") == "run qc on site 2"


@pytest.mark.parametrize("row", rows("qc_history.jsonl"), ids=lambda r: r["id"])
def test_the_labelled_qc_history_set(row: dict[str, Any]) -> None:
    # every row of eval/qc_history.jsonl: a real turn on a history book of every week since 2024-W01
    _, requests = turn_requests(row)
    qc = [r for r in requests if "QC_TASK" in r.metadata["intents"]]
    other = [r for r in requests if r not in qc]
    assert all(request_weeks(r) == [] for r in qc)
    weeks = sorted({w for r in other for w in request_weeks(r)})
    if row["label"] == "qc":
        assert qc and weeks == []
    else:
        assert weeks == expected_weeks({**row, "history": True})
        assert bool(qc) == (row["label"] == "both") and bool(other)


# ------------------------------------------------------------------ two periods compared apart
@pytest.mark.parametrize(("text", "weeks"), [
    ("W2 和 W6 比较一下", ["2026-W02", "2026-W06"]),
    ("compare week 2 with week 6", ["2026-W02", "2026-W06"]),
    ("第3周 vs 第8周，入组有什么变化", ["2026-W03", "2026-W08"]),
    # a span stays a span
    ("W2 到 W6 的入组趋势", ["2026-W02", "2026-W03", "2026-W04", "2026-W05", "2026-W06"]),
])
def test_two_weeks_compared_load_only_those_weeks_a_span_all_of_it(text: str, weeks: list[str]) -> None:
    result, _, loaded, requests = _split(text)
    assert "ANALYZE_TREND" in result.intents
    assert loaded == weeks
    # the history block names the weeks it holds
    history = next(b.text for b in requests[0].system if b.name == "history")
    assert f"Period asked about: {weeks[0]}" in history


def test_compared_periods_resolve_to_their_parts_and_a_between_range_to_one_span() -> None:
    two = resolve_anchor("W23 和 W30 比较一下", NOW, "Asia/Shanghai")
    assert two is not None and two.weeks() == ["2025-W23", "2025-W30"]
    assert (two.first, two.last) == ("2025-W23", "2025-W30")
    months = resolve_anchor("去年3月和今年1月比，入组快了吗", NOW, "Asia/Shanghai")
    assert months is not None
    assert months.parts == ((date(2025, 3, 1), date(2025, 3, 31)), (date(2026, 1, 1), date(2026, 1, 31)))
    assert len(months.weeks()) == 11  # 2025-W09..W14 and 2026-W01..W05, not the 53 weeks between
    span = resolve_anchor("What was decided between March 2 and March 20?", datetime(2026, 3, 25, 2, tzinfo=UTC), "UTC")
    assert span is not None and span.parts == () and span.weeks() == ["2026-W10", "2026-W11", "2026-W12"]
    assert resolve_anchor("W23 到 W30", NOW, "Asia/Shanghai").weeks() == [f"2025-W{w}" for w in range(23, 31)]  # type: ignore[union-attr]


def test_week_runs_groups_consecutive_weeks_across_a_year_end() -> None:
    runs = week_runs(["2025-W52", "2026-W01", "2026-W02", "2026-W06"])
    assert runs == [("2025-W52", "2026-W02"), ("2026-W06", "2026-W06")]
    assert week_runs([]) == []


def test_plan_of_a_split_message_names_the_other_part() -> None:
    qc, history = plan_calls([Intent.QC_TASK, Intent.QUERY_HISTORY])
    assert (qc.others, history.others) == ((Intent.QUERY_HISTORY,), (Intent.QC_TASK,))
    assert plan_calls([Intent.QUERY_HISTORY])[0].others == ()
