"""Weekly reports a person can read and that say something: the offline summary condenses the
week's statements (no questions, requests to the assistant, preferences, acknowledgements or copies
of messages), and an LLM report that says nothing is rejected, asked for once more, then replaced by
the offline summary with an alert: never stored."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.jobs.report_text import condense, is_placeholder
from agent_memory.observability import metrics
from tests.fakes import InMemoryNotifier, InMemoryStore, ScriptedLLM, json_reply
from tests.unit.jobs.support import add_project, make_deps, run, say, utc


def _points(store: InMemoryStore) -> list[str]:
    report = store.get_weekly_report("p1", "2026-W10")
    assert report is not None
    return report.summary.splitlines()[1:]


def _week_of_chat(store: InMemoryStore) -> None:
    add_project(store)
    say(store, "p1", "m-1", "好的，07中心累计入组 9 例。", utc("2026-03-02T10:00:00+08:00"))
    say(store, "p1", "m-2", "07中心累计 9 例，近一月 3 例", utc("2026-03-02T11:00:00+08:00"), role="assistant")
    say(store, "p1", "m-3", "P008 的V2访视做了没", utc("2026-03-02T12:00:00+08:00"))
    say(store, "p1", "m-4", "帮我把本周的 query 清单导出来", utc("2026-03-03T09:00:00+08:00"))
    say(store, "p1", "m-5", "以后不良事件汇总给我按严重程度排吧", utc("2026-03-03T09:30:00+08:00"))
    say(store, "p1", "m-6", "嗯 PI 会上定了：从下周起暂停 05 中心的筛选😅", utc("2026-03-04T15:00:00+08:00"))
    say(store, "p1", "m-7", "1) 03-021 基线血糖缺失；2) 03-017 收缩压缺失", utc("2026-03-05T09:00:00+08:00"),
        role="assistant")
    say(store, "p1", "m-8", "建议在 EDC 中尽快补录缺失字段。", utc("2026-03-05T09:00:05+08:00"), role="assistant")
    say(store, "p1", "m-9", "这个坑记住：启动访视前一周必须确认药物已到中心", utc("2026-03-06T18:00:00+08:00"))
    say(store, "p1", "m-10", "收到👍", utc("2026-03-06T18:01:00+08:00"))


def test_offline_report_condenses_the_weeks_statements_into_sections(store: InMemoryStore) -> None:
    # Given: a week of chat with acknowledgements, a question, a request, a preference, emoji,
    # list markers, the same news twice, assistant advice and a lesson handed to the assistant
    _week_of_chat(store)
    # When: archived offline
    run(make_deps(store), "archive", "p1", "2026-03-09")
    # Then: statements only, filed by section, duplicates merged, each citing its messages
    report = store.get_weekly_report("p1", "2026-W10")
    assert report is not None
    overview = "2026-W10 本周小结：进度 1 项，决策 1 项，问题与教训 3 项（据 10 条消息）。"
    assert report.summary.splitlines()[0] == overview
    assert _points(store) == [
        "[进度] 03-02 07中心累计 9 例，近一月 3 例 [m-1,m-2]",
        "[决策] 03-04 PI 会上定了：从下周起暂停 05 中心的筛选 [m-6]",
        "[问题] 03-05 03-021 基线血糖缺失 [m-7]",
        "[问题] 03-05 03-017 收缩压缺失 [m-7]",
        "[问题] 03-06 教训：启动访视前一周必须确认药物已到中心 [m-9]",
    ]


@pytest.mark.parametrize(
    ("sentence", "role", "point"),
    [
        ("好的，P007 今天完成 V2 随访。", "user", "P007 今天完成 V2 随访。"),
        ("P007 入组了吗", "user", None),
        ("上周的AE情况", "user", None),
        ("你这样列我还得自己找", "user", None),
        ("Can you export the query list?", "user", None),
        ("From now on send the report on Mondays.", "user", None),
        ("OK, site 3 activated on Tuesday.", "user", "site 3 activated on Tuesday."),
        ("请核实 ICF 签署时间。", "assistant", None),
        ("还有个教训也记下：SAE 24 小时从研究者获知起算", "user", "教训：SAE 24 小时从研究者获知起算"),
    ],
)
def test_a_sentence_becomes_a_point_only_when_it_states_something(sentence: str, role: str, point: str | None) -> None:
    assert condense(sentence, role=role) == point


@pytest.mark.parametrize(
    "text",
    ["暂无历史记录", "No prior history.", "本周无新进展。", "Nothing to report this week.", "03-02 无", "N/A",
     "本周暂无相关决策", "No significant issues were noted this week", "[2026-W09] 暂无记录 [m-1]"],
)
def test_stock_phrases_without_content_are_placeholders(text: str) -> None:
    assert is_placeholder(text)


@pytest.mark.parametrize(
    "text",
    ["P007 完成 V2 随访", "入组 3 例", "本周无新增 SAE", "暂停 05 中心筛选", "EDC sync failed", "No AEs at site 2"],
)
def test_statements_with_content_are_not_placeholders(text: str) -> None:
    assert not is_placeholder(text)


def _llm_week(store: InMemoryStore) -> None:
    add_project(store)
    say(store, "p1", "m-1", "P007 今天完成 V2 随访。", utc("2026-03-02T10:00:00+08:00"))
    say(store, "p1", "m-2", "PI 决定暂停 05 中心筛选。", utc("2026-03-04T10:00:00+08:00"))


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"progress": [{"text": "暂无历史记录", "evidence": ["m-1"]}], "decisions": [], "problems": []}, "placeholder"),
        ({"progress": [], "decisions": [{"text": "No prior history.", "evidence": ["m-2"]}], "problems": []},
         "placeholder"),
        ({"progress": [{"text": "本周无新进展", "evidence": ["m-1"]}],
          "decisions": [{"text": "N/A", "evidence": ["m-2"]}],
          "problems": [{"text": "Nothing to report this week.", "evidence": ["m-1"]}]}, "placeholder"),
        ({"progress": [], "decisions": [], "problems": []}, "empty"),
    ],
)
def test_llm_report_saying_nothing_is_retried_once_then_replaced_by_the_offline_summary_with_an_alert(
    store: InMemoryStore, payload: dict[str, Any], reason: str
) -> None:
    # Given: an LLM that answers with an empty or placeholder report (every time)
    _llm_week(store)
    llm = ScriptedLLM(json_reply(payload))
    notifier = InMemoryNotifier()
    # When: archived
    report = run(make_deps(store, llm=llm, notifier=notifier), "archive", "p1", "2026-03-09")
    # Then: asked twice; the offline summary is stored, never the placeholder; admins alerted, counted
    assert len(llm.requests) == 2
    assert (report.details["summariser"], report.details["fallback_reason"]) == ("offline", reason)
    assert _points(store) == [
        "[进度] 03-02 P007 今天完成 V2 随访。 [m-1]", "[决策] 03-04 PI 决定暂停 05 中心筛选。 [m-2]",
    ]
    assert [a.kind for a in notifier.alerts] == ["archive_llm_report_rejected"]
    assert "P007" not in notifier.alerts[0].message  # counts and ids only, never message text
    assert "ArchiveLLMReportRejected" in metrics.metric_set


def test_a_placeholder_then_a_real_report_stores_the_real_one_without_alert(store: InMemoryStore) -> None:
    # Given: a placeholder first, a real report on the retry
    _llm_week(store)
    llm = ScriptedLLM(
        json_reply({"progress": [{"text": "暂无历史记录", "evidence": ["m-1"]}], "decisions": [], "problems": []}),
        json_reply({"progress": [{"text": "P007 完成 V2 随访。", "evidence": ["m-1"]}],
                    "decisions": [{"text": "暂停 05 中心筛选。", "evidence": ["m-2"]}], "problems": []}),
    )
    notifier = InMemoryNotifier()
    # When: archived
    report = run(make_deps(store, llm=llm, notifier=notifier), "archive", "p1", "2026-03-09")
    # Then: the retry's report is stored; no alert
    assert report.details["summariser"] == "llm" and report.details["llm_calls"] == 2
    assert _points(store) == ["[进度] 03-02 P007 完成 V2 随访。 [m-1]", "[决策] 03-04 暂停 05 中心筛选。 [m-2]"]
    assert notifier.alerts == []


def test_placeholder_points_beside_real_ones_are_dropped(store: InMemoryStore) -> None:
    # Given: one real point and one stock phrase citing a real message
    _llm_week(store)
    llm = ScriptedLLM(json_reply({"progress": [{"text": "P007 完成 V2 随访。", "evidence": ["m-1"]}],
                                  "decisions": [], "problems": [{"text": "暂无问题", "evidence": ["m-2"]}]}))
    # When: archived
    run(make_deps(store, llm=llm), "archive", "p1", "2026-03-09")
    # Then: only the real point, asked once
    assert _points(store) == ["[进度] 03-02 P007 完成 V2 随访。 [m-1]"]
    assert len(llm.requests) == 1


def test_a_statement_ending_in_a_topic_noun_is_kept() -> None:
    # Given: a statement that ends with 结果 (only a bare short topic is a request)
    statement = "已在 EDC 中更新 P007 第二次访视的化验结果"
    assert condense(statement, role="user") == statement
