"""The ``read_history`` tool: weekly reports by ISO-week range for a chat call that did not load the
history book and is not QC; validated input, compact result, shown in the call report and the
context view."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_memory.chat.context_view import turn_context
from agent_memory.chat.history_tool import MAX_TOOL_WEEKS, READ_HISTORY, HistoryTools, render_reports, week_span
from agent_memory.chat.intents import Classification
from agent_memory.chat.toolsets import ToolSets
from agent_memory.domain.models import Intent, WeeklyReport
from tests.fakes import InMemoryStore, ScriptedLLM, text_reply, tool_reply
from tests.unit.chat_support import make_deps, seed_project, send

T = datetime(2026, 3, 1, tzinfo=UTC)


def _report(week: str, text: str = "[决策] 暂停筛选 [m1]") -> WeeklyReport:
    return WeeklyReport(project_id="p1", iso_week=week, summary=text, created_at=T)


class _Reader:
    """A history reader over fixed reports, recording the ranges asked for."""

    def __init__(self, reports: list[WeeklyReport]) -> None:
        self.reports = reports
        self.asked: list[tuple[str, str, str]] = []

    def list_reports_between(self, project_id: str, first_week: str, last_week: str) -> list[WeeklyReport]:
        self.asked.append((project_id, first_week, last_week))
        return [r for r in self.reports if first_week <= r.iso_week <= last_week]


class _Classifier:
    """A classifier that always answers the given intents (a misrouted history question)."""

    def __init__(self, *intents: Intent) -> None:
        self.intents = intents

    def classify(self, text: str, *, deadline: float | None = None) -> Classification:
        return Classification(intents=self.intents, source="rules")


# ---------------------------------------------------------------- the tool set


def test_reads_the_reports_of_the_range_oldest_first_for_its_project_only() -> None:
    # Given: reports of three weeks across a year boundary
    reader = _Reader([_report("2025-W52", "[进度] 入组 3 人"), _report("2026-W01"), _report("2026-W03")])
    tools = HistoryTools(reader, "p1")
    # When: the model asks for 2025-W52..2026-W02
    text, is_error = tools.run("read_history", {"from_week": "2025-W52", "to_week": "2026-W02"})
    # Then: the two weeks in range, oldest first, for the fixed project, recorded as read; the week
    # of the range without a report is named
    assert not is_error
    assert text == "[2025-W52] [进度] 入组 3 人\n[2026-W01] [决策] 暂停筛选 [m1]\nNo weekly report for: 2026-W02"
    assert reader.asked == [("p1", "2025-W52", "2026-W02")]
    assert tools.weeks_read == ["2025-W52", "2026-W01"]


@pytest.mark.parametrize(
    ("tool_input", "reason"),
    [
        ({"from_week": "2026-W10"}, "to_week is required"),
        ({"from_week": "2026-W10", "to_week": 12}, "to_week is required"),
        ({"from_week": "2026-10", "to_week": "2026-W12"}, "from_week must be an ISO week"),
        ({"from_week": "2025-W53", "to_week": "2025-W53"}, "does not exist"),
        ({"from_week": "2026-W12", "to_week": "2026-W10"}, "must not be after"),
        ({"from_week": "2025-W01", "to_week": "2026-W01"}, "at most 50"),
        ({"from_week": "2026-W01", "to_week": "2026-W02", "project_id": "p2"}, "unknown input keys: project_id"),
        ("2026-W01", "input must be an object"),
    ],
)
def test_invalid_input_is_an_error_result_and_reads_nothing(tool_input: Any, reason: str) -> None:
    # Given: a reader
    reader = _Reader([_report("2026-W01")])
    # When: the model sends invalid input
    text, is_error = HistoryTools(reader, "p1").run("read_history", tool_input)
    # Then: an error result saying why; no read
    assert is_error and reason in text
    assert reader.asked == []


def _resolver(now: datetime = datetime(2026, 5, 13, 2, 20, tzinfo=UTC)) -> Any:
    from agent_memory.history.loading import anchor_of

    return lambda phrase: anchor_of(phrase, now, "Asia/Shanghai", ["首例入组：2025-10-28"])


def test_a_period_in_the_users_words_reads_the_weeks_the_history_book_resolves_it_to() -> None:
    # Given: reports of April 2026 (2026-W14..W18) and of March; asked on 2026-05-13 (Shanghai)
    reader = _Reader([_report("2026-W13"), _report("2026-W14", "[问题] 03中心超窗"), _report("2026-W18")])
    tools = HistoryTools(reader, "p1", resolve=_resolver())
    # When: the model passes the question's own period, "上个月"
    text, is_error = tools.run("read_history", {"period": "上个月"})
    # Then: exactly April's weeks are read, and the weeks of it without a report are named
    assert not is_error
    assert reader.asked == [("p1", "2026-W14", "2026-W18")]
    assert text == "[2026-W14] [问题] 03中心超窗\n[2026-W18] [决策] 暂停筛选 [m1]\n" \
                   "No weekly report for: 2026-W15, 2026-W16, 2026-W17"


def test_a_period_longer_than_fifty_weeks_reads_its_newest_fifty_and_says_so() -> None:
    # Given: a milestone 2025-10-28 and the question's "去年以来" (2025-01-01 to now: 70 weeks)
    reader = _Reader([_report("2026-W19")])
    tools = HistoryTools(reader, "p1", resolve=_resolver())
    # When
    text, is_error = tools.run("read_history", {"period": "去年以来"})
    # Then: the newest 50 weeks of it, and the answer says the period was cut
    assert not is_error
    assert reader.asked == [("p1", "2025-W22", "2026-W19")]
    assert text.startswith("Period years: 2025-01-01..") and "its newest 50 weeks:" in text


def test_a_period_naming_no_past_weeks_is_an_error() -> None:
    reader = _Reader([])
    text, is_error = HistoryTools(reader, "p1", resolve=_resolver()).run("read_history", {"period": "下个月"})
    assert is_error and "names no past weeks" in text and reader.asked == []


def test_fifty_weeks_is_the_largest_range_even_across_a_53_week_year() -> None:
    # Given: 2026 has 53 ISO weeks
    assert week_span("2026-W04", "2026-W53") == MAX_TOOL_WEEKS
    # When / Then: 50 weeks are read, 51 are refused
    reader = _Reader([])
    assert HistoryTools(reader, "p1").run("read_history", {"from_week": "2026-W04", "to_week": "2026-W53"}) == (
        "no weekly reports between 2026-W04 and 2026-W53", False)
    text, is_error = HistoryTools(reader, "p1").run("read_history", {"from_week": "2026-W03", "to_week": "2026-W53"})
    assert is_error and "51 weeks" in text


def test_result_is_compact_each_week_capped_and_the_rest_named() -> None:
    # Given: 50 weeks of 3 KB reports
    reports = [_report(f"2026-W{w:02d}", "决" * 1000) for w in range(1, 51)]
    # When: rendered for the tool
    text = render_reports(reports)
    # Then: under 8,000 bytes, every shown week capped, the weeks left out named
    assert len(text.encode()) <= 8_000
    assert text.startswith("[2026-W01] ")
    assert "(not shown, over the size limit: 2026-W" in text and "..2026-W50; ask for fewer weeks)" in text


def test_unknown_tool_is_an_error() -> None:
    assert HistoryTools(_Reader([]), "p1").run("read_clinical_data", {}) == ("unknown tool read_clinical_data", True)


def test_composite_sends_each_call_to_the_set_that_defines_it() -> None:
    # Given: the history tools beside another set
    reader = _Reader([_report("2026-W01")])

    class Other:
        specs = [replace(READ_HISTORY, name="other")]

        def run(self, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
            return "other ran", False

    tools = ToolSets([Other(), HistoryTools(reader, "p1")])
    # Then: both specs offered; each call goes to its own set; an unknown one is an error
    assert [s.name for s in tools.specs] == ["other", "read_history"]
    assert tools.run("other", {}) == ("other ran", False)
    assert tools.run("read_history", {"from_week": "2026-W01", "to_week": "2026-W01"})[0].startswith("[2026-W01]")
    assert tools.run("nope", {}) == ("unknown tool nope", True)


# ---------------------------------------------------------------- in the chat turn


def _deps(store: InMemoryStore, llm: ScriptedLLM, *intents: Intent) -> Any:
    deps = make_deps(store, llm)
    deps.classifier = _Classifier(*intents)
    deps.history = store
    return deps


def test_misrouted_history_question_is_answered_through_read_history(store: InMemoryStore) -> None:
    # Given: three weekly reports, and a history question the router took for GENERAL
    seed_project(store, weeks=3)
    llm = ScriptedLLM(
        tool_reply("read_history", {"from_week": "2026-W02", "to_week": "2026-W03"}),
        text_reply("第2周决定事项 2（2026-W02）。"),
    )
    deps = _deps(store, llm, Intent.GENERAL)
    # When: the turn runs
    result = send(deps, "那一周定了什么")
    # Then: the first call offered read_history and no history block; the tool result went back
    first, second = llm.requests
    assert "read_history" in [t.name for t in first.tools]
    assert not any(b.name == "history" for b in first.system)
    tool_result = second.messages[-1]["content"][0]
    assert tool_result["type"] == "tool_result" and not tool_result["is_error"]
    assert tool_result["content"].startswith("[2026-W02] [进度]: 第2周入组 2 人。")
    # ... the call report counts the weeks read, and the context view shows them
    assert result.reply == "第2周决定事项 2（2026-W02）。"
    assert result.calls[0].history_tool_weeks == 2
    view = turn_context(store, "p1", "s1", result.message_id)
    call = view["calls"][0]
    assert call["read_history"] == {"weeks": ["2026-W02", "2026-W03"]}
    block = call["blocks"][-1]
    assert block["name"] == "read_history" and "[2026-W03] [进度]: 第3周入组 3 人。" in block["text"]


def test_a_qc_call_never_gets_the_history_tool(store: InMemoryStore) -> None:
    # Given: a QC question
    seed_project(store, weeks=2)
    llm = ScriptedLLM(text_reply("QC 完成。"))
    deps = _deps(store, llm, Intent.QC_TASK)
    # When: the turn runs
    result = send(deps, "对P001做质控")
    # Then: no read_history among the tools; nothing read
    assert [t.name for t in llm.requests[0].tools] == ["read_clinical_data"]
    assert result.calls[0].history_tool_weeks == 0


def test_split_turn_offers_the_tool_only_to_the_history_call(store: InMemoryStore) -> None:
    # Given: QC + history: the QC call must not see history; the history call has its weeks loaded and
    # the same tools as every other call (the cached prefix starts with the tools)
    seed_project(store, weeks=2)
    llm = ScriptedLLM(text_reply("done"))
    deps = _deps(store, llm, Intent.QC_TASK, Intent.QUERY_HISTORY)
    # When: the turn runs
    send(deps, "对P001做质控，并告诉我第1周为什么暂停筛选")
    # Then: two calls, read_history only in the second; only the second has the history block
    assert len(llm.requests) == 2
    assert ["read_history" in [t.name for t in r.tools] for r in llm.requests] == [False, True]
    assert [any(b.name == "history" for b in r.system) for r in llm.requests] == [False, True]


def test_a_history_call_offers_the_same_tools_as_a_call_without_history(store: InMemoryStore) -> None:
    # Given: a project with history, a question routed to history and one that is not
    seed_project(store, weeks=2)
    llm = ScriptedLLM(text_reply("done"))
    send(_deps(store, llm, Intent.QUERY_HISTORY), "第1周为什么暂停筛选？")
    send(_deps(store, llm, Intent.GENERAL), "你好")
    # Then: the same tool names in the same order (the prompt cache's prefix holds)
    assert [[t.name for t in r.tools] for r in llm.requests][0] == [[t.name for t in r.tools] for r in llm.requests][1]


def test_without_a_history_reader_the_tools_are_unchanged(store: InMemoryStore) -> None:
    # Given: deps without the reader (a function that does not offer the tool)
    seed_project(store, weeks=1)
    llm = ScriptedLLM(text_reply("你好"))
    deps = make_deps(store, llm)
    # When: a general question
    send(deps, "你好")
    # Then: only the clinical tool
    assert [t.name for t in llm.requests[0].tools] == ["read_clinical_data"]
