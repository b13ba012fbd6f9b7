"""A change said after a complaint that names the line's current value, fields added to a line
with the rest kept, and a value change that keeps the line's other clauses
(agent_memory.hot_memory.amend through the merge)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_memory.domain.jobs import FlowLogEntry
from agent_memory.domain.models import HotMemory, HotMemoryLine
from agent_memory.hot_memory.analysis import values
from agent_memory.hot_memory.merge import merge_candidates
from agent_memory.hot_memory.statements import extract_rule_candidates

T = datetime(2026, 9, 14, 3, 0, tzinfo=UTC)


def _line(text: str, tag: str, by: str = "u-1") -> HotMemoryLine:
    return HotMemoryLine(line_id="hm-old", section="User Preferences", text=text, source="distilled", role_tag=tag,
                         created_at=T, created_by="distiller", evidence=["m-0"], stated_by=by)


def _merge(lines: list[HotMemoryLine], text: str, role: str, user_id: str = "u-1", message_id: str = "m-1"):
    said = FlowLogEntry(message_id=message_id, session_id="s", role="user", content=text, at=T, user_id=user_id,
                        study_role=role)
    return merge_candidates(HotMemory(project_id="p1", lines=lines), extract_rule_candidates([said]),
                            day_messages={message_id: said}, day="2026-09-14", now=T, max_line_tokens=200)


@pytest.mark.parametrize(("old", "tag", "message", "role", "new"), [
    # the new value put in place of the old one in the line
    ("血压周报每周四下午发给CRC。", "CRC", "周四下午那个血压周报我根本顾不上看。挪到周一上午吧", "CRC",
     "血压周报每周一上午发给CRC。"),
    ("Screening logs go to the DM as PDF files.", "DM",
     "Those PDF screening logs are useless for filtering. Going forward send them as Excel.", "DM",
     "Screening logs go to the DM as Excel files."),
])
def test_a_complaint_naming_the_current_value_then_a_bare_new_value_changes_that_line(
        old: str, tag: str, message: str, role: str, new: str) -> None:
    result = _merge([_line(old, tag)], message, role)
    assert list(result.replaced) == ["hm-old"]
    [line] = result.lines
    assert (line.role_tag, line.text) == (tag, new)


def test_fields_added_with_the_rest_kept_amend_the_line() -> None:
    old = _line("给Sub-I的随访汇总每例只列访视日期和血压值。", "Sub-I")
    said = "随访汇总光有日期和血压不够用，还得去翻原始记录。以后每例再加上心率和用药调整，其他照旧"
    result = _merge([old], said, "Sub-I")
    assert list(result.replaced) == ["hm-old"]
    [line] = result.lines
    assert line.text.startswith("给Sub-I的随访汇总每例只列访视日期和血压值；")
    assert "心率和用药调整" in line.text


def test_a_new_value_keeps_the_clauses_of_the_line_it_does_not_mention() -> None:
    old = _line("入组周报每周五下午发给PI，按中心列出筛选数和入组数。", "PI")
    result = _merge([old], "以后入组周报改成周一上午发", "PI")
    assert list(result.replaced) == ["hm-old"]
    [line] = result.lines
    assert "按中心列出筛选数和入组数" in line.text and "周一上午" in line.text


def test_a_complaint_about_another_subject_changes_nothing() -> None:
    old = _line("血压周报每周四下午发给CRC。", "CRC")
    result = _merge([old], "周四下午的培训会太长了。以后随访电话提醒改到上午发", "CRC")
    assert [ln.line_id for ln in result.lines][0] == "hm-old"
    assert not result.replaced


def test_a_bare_value_with_no_line_to_change_adds_nothing() -> None:
    result = _merge([], "数据清单太慢了。以后每周发", "DM")
    assert result.lines == []


@pytest.mark.parametrize(("text", "lead"), [
    ("监查之前3个工作日，把清单发我", {"3wd"}), ("MV 前一周把清单发我", {"168h"}), ("访视前三天才提醒", {"72h"}),
    ("术后前3天的评估都要做", set()), ("这周前两天我不在", set()),
])
def test_a_lead_time_before_an_event_is_a_lead_time_and_the_first_days_after_one_are_not(
        text: str, lead: set[str]) -> None:
    assert set(values(text).get("lead_time", ())) == lead


def test_a_complaint_that_the_summary_says_too_little_amends_it_even_when_the_statement_names_it() -> None:
    old = _line("给Sub-I的随访汇总每例只列访视日期和血压值。", "Sub-I")
    said = "给我的随访汇总太简单了，光一个血压看不出控制得怎么样。以后每例把心率、用药调整分别写上，再带上当时的依从性"
    result = _merge([old], said, "Sub-I")
    assert list(result.replaced) == ["hm-old"]
    assert result.lines[0].text.startswith("给Sub-I的随访汇总每例只列访视日期和血压值；")


def test_no_more_x_then_what_to_do_instead_is_one_statement() -> None:
    from agent_memory.hot_memory.statements import find_statements

    said = "入组日报别再给我PDF了，我这边要筛选，每次还得转一遍。以后直接导Excel，其他照旧周五下午"
    assert [f.text for f in find_statements(said)] == ["入组日报直接导Excel。"]
    result = _merge([_line("入组日报每周五下午以PDF发给DM。", "DM")], said, "DM")
    assert list(result.replaced) == ["hm-old"] and len(result.lines) == 1


def test_names_in_what_an_output_has_now_are_not_asked_for() -> None:
    from agent_memory.hot_memory.relaxation import rules_relaxed_by

    rule = HotMemoryLine(line_id="hm-ids", section="System Rules", source="admin", role_tag=None, created_at=T,
                         created_by="admin", evidence=[],
                         text="助手不处理受试者的身份标识信息（姓名、手机号等）：一律只用受试者编号。")
    said = "不良事件汇总光写名字和日期不够用啊。以后每例加上严重程度和处理措施，其他不变"
    assert rules_relaxed_by("每例加上严重程度和处理措施。", [rule], said) is None
    assert rules_relaxed_by("每例加上患者姓名。", [rule], "以后每例加上患者姓名") is not None


def test_a_question_moving_an_output_to_the_friday_before_changes_its_line() -> None:
    old = _line("用药日程表每周一早上发给CRC，列出本周的给药时间。", "CRC")
    said = "用药日程表周一早上才发太晚了，周一上午就开始给药，根本排不过来。能不能提前到上周五下班前发？"
    result = _merge([old], said, "CRC")
    assert list(result.replaced) == ["hm-old"]
    assert "列出本周的给药时间" in result.lines[0].text and "上周五" in result.lines[0].text


def test_a_message_keeping_one_value_of_a_line_changes_the_rest_of_it() -> None:
    old = _line("每次监查的访视确认函草稿提前两周发给CRA。", "CRA")
    said = "访视确认函草稿以后别发我个人微信了，直接发我们CRA组的公共邮箱。提前两周这个不变"
    result = _merge([old], said, "CRA")
    assert list(result.replaced) == ["hm-old"]
    assert "提前两周" in result.lines[0].text and "公共邮箱" in result.lines[0].text


def test_never_mind_the_named_output_takes_back_the_line_and_no_change_is_no_statement() -> None:
    lines: list[HotMemoryLine] = []
    for text in ["From now on please add the HbA1c trend chart to my monthly efficacy tables.",
                 "Never mind the HbA1c chart from this morning; it's already in the DSMB pack, so no change to my "
                 "tables."]:
        said = FlowLogEntry(message_id=f"m-{len(text)}", session_id="s", role="user", content=text, at=T,
                            user_id="u-st", study_role="Statistician")
        result = merge_candidates(HotMemory(project_id="p1", lines=lines), extract_rule_candidates([said]),
                                  day_messages={said.message_id: said}, day="2026-09-14", now=T, max_line_tokens=200)
        lines = result.lines
    assert lines == []


@pytest.mark.parametrize("said", ["周报还是每周四下午发，别忘了",
                                  "Weekly report on Thursday afternoons, don't forget."])
def test_a_reminder_not_to_forget_a_line_restates_it(said: str) -> None:
    old = _line("周报每周四下午发" if "周" in said else "Weekly report on Thursday afternoons.", "PI")
    result = _merge([old], said, "PI")
    assert [ln.line_id for ln in result.lines] == ["hm-old"] and not result.added


def test_a_second_change_of_the_same_value_replaces_the_first_not_the_details() -> None:
    lines = [_line("入组周报每周五下午发给PI，按中心列出筛选数和入组数。", "PI")]
    for i, said in enumerate(["以后入组周报改成周一上午发", "入组周报还是改到周三上午吧"]):
        result = _merge(lines, said, "PI", message_id=f"m-{i}")
        lines = [ln.model_copy(update={"line_id": f"hm-{i}"}) for ln in result.lines]
    [line] = lines
    assert line.text == "入组周报每周三上午发给PI，按中心列出筛选数和入组数。"  # each change put in place


@pytest.mark.parametrize(("old", "message", "role"), [
    ("入组周报每周五下午发给PI，按中心列出筛选数和入组数。", "以后入组周报改成周一上午发", "PI"),
    ("用药依从性提醒每天晚上8点发给CRC。", "晚上8点那个依从性提醒我老是错过，下班路上看不到。改到下午5点半吧", "CRC"),
    ("给Sub-I的随访汇总每例只列访视日期和血压值。",
     "随访汇总光有日期和血压不够用，还得去翻原始记录。以后每例再加上心率和用药调整，其他照旧", "Sub-I"),
])
def test_a_rerun_of_the_day_changes_nothing_more(old: str, message: str, role: str) -> None:
    # the day's distillation runs again (an operator's re-run, a retried job): the amended line stays as it is
    first = _merge([_line(old, role)], message, role)
    again = _merge(first.lines, message, role)
    assert [ln.text for ln in again.lines] == [ln.text for ln in first.lines]
    assert not again.changed


def test_a_fix_asked_as_a_question_after_a_complaint_and_an_ellipsis_replaces_the_line() -> None:
    old = _line("周报每周五下午发给PI，按中心列出入组数。", "PI")
    result = _merge([old], "周报周五下午才到太晚了，周一开会前根本来不及看……能不能改到周四上午？", "PI")
    assert [ln.text for ln in result.lines] == ["周报每周四上午发给PI，按中心列出入组数。"]


def test_a_column_added_with_the_rest_unchanged_amends_the_report_line() -> None:
    old = _line("周报每周五下午发给PI，按中心列出入组数。", "PI")
    result = _merge([old], "周报里再加一列SAE数量，其他不变。", "PI")
    assert [ln.text for ln in result.lines] == ["周报每周五下午发给PI，按中心列出入组数；周报里再加一列SAE数量"]


@pytest.mark.parametrize(("message", "kept"), [
    ("每月最后一天提醒我做数据备份", False), ("Remind me to check the queries every Monday", False),
    ("以后每次访视前都提醒我带齐量表", True),
])
def test_a_reminder_request_is_for_the_reminder_skill_not_memory(message: str, kept: bool) -> None:
    assert bool(_merge([], message, "DM").lines) is kept
