"""The line a found statement becomes keeps its instruction: an open head (an occasion or a
document) is completed by the next clause, clauses that set a value are kept while reasons that
merely mention a time are dropped, and a statement with no subject takes the document an earlier
sentence of the message opens with."""

from __future__ import annotations

import pytest

from agent_memory.hot_memory.statements import find_statements


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # an occasion as the head: the instruction is the next clause
        ("以后给PI发SAE汇总的时候，每一例都标上是否已经随访到结局，上次开会就因为这个对不上",
         "给PI发SAE汇总的时候，每一例都标上是否已经随访到结局。"),
        # a document as the head; a polite 麻烦 and a lead time
        ("以后每次的中心启动会议程，麻烦提前三天先发我过一遍，我要跟伦理那边对时间",
         "每次的中心启动会议程，麻烦提前三天先发我过一遍。"),
        # a second sort key continues the rule
        ("以后先按风险等级排，同一等级里面再按发现日期从早到晚",
         "先按风险等级排，同一等级里面再按发现日期从早到晚。"),
        # a reason that names a time is not part of the rule
        ("周报以后改成周三上午发吧，周四上午我要去外院", "周报改成周三上午发。"),
        ("以后访视提醒提前两天发，周一上午大家都在门诊", "访视提醒提前两天发。"),
    ],
)
def test_the_line_keeps_the_instruction_and_drops_reasons(message: str, expected: str) -> None:
    assert [f.text for f in find_statements(message)] == [expected]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("随访清单的顺序我想调一下，现在找人太费劲。以后先按访视窗口截止日排，再按中心",
         "随访清单先按访视窗口截止日排，再按中心。"),
        ("月报别再发群里了，群消息一多就找不到。以后直接发我邮箱", "月报直接发我邮箱。"),
    ],
)
def test_a_statement_without_a_subject_takes_the_document_named_before(message: str, expected: str) -> None:
    assert [f.text for f in find_statements(message)][-1] == expected


def test_a_subjectless_statement_borrows_nothing_when_no_document_was_named() -> None:
    assert [f.text for f in find_statements("最近大家都很辛苦。以后直接发我邮箱")] == ["直接发我邮箱。"]


@pytest.mark.parametrize(
    "message",
    [
        "你做的周报都在最上面写一下本周新增SAE数",  # what the assistant sends, habitual 都 with 一下
        "每次给CRA的监查提醒都附一句本周要看的中心",  # a recurring occasion with 本周 as content
        "给DM的核查清单里把首次发现日期都标出来",  # what goes into a recurring document, with 把
        "发我的汇总尽量一屏看完，不超过十行",  # how what the assistant sends should be
        "一旦有受试者退出，当天给我的日报就把退出原因放在最前面",  # a conditional rule about an output
        "Could the summaries you send me list the open queries per site?",  # a standing request asked
        "Until the interim analysis, send me the missing-data count every Friday.",  # bounded by an end
        "For the DMs, keep the query listings in English only.",
        "我更希望你把偏离按中心先汇总，再附明细",  # a wish with 把
        "I'd rather get the AE listing sorted by onset date than by subject.",
    ],
)
def test_standing_instructions_about_what_the_assistant_sends_are_found(message: str) -> None:
    assert [f.kind for f in find_statements(message)] in (["durable"], ["change"])


@pytest.mark.parametrize(
    "message",
    [
        "帮我把这周的周报都按中心发我",  # a task on this week's report
        "你出的表有个地方错了",  # a report of a mistake, no instruction
        "以后每周一我都会先在群里报一下进度",  # the speaker's own promise
        "I'll start sending the visit schedule earlier from now on, sorry about that.",
        "伦理办的老师讲，以后年度报告都要附上SAE列表，我不确定",  # someone else's words
        "Could you send me the summary you sent me yesterday again?",  # a one-off asked again
    ],
)
def test_look_alikes_about_what_the_assistant_sends_are_not_statements(message: str) -> None:
    assert find_statements(message) == []


def test_a_rule_and_its_exception_stay_one_line() -> None:
    assert [f.text for f in find_statements("月报还是月初发，但是春节那个月改成节后第一周发")] == [
        "月报还是月初发，但是春节那个月改成节后第一周发。"]


def test_a_recurring_morning_is_no_withdrawal_and_an_emphasis_restates() -> None:
    assert [f.kind for f in find_statements("锁库之前，每天早上给我一份未关闭query的数量，锁完就不用了")] == ["durable"]
    assert [f.kind for f in find_statements("早上说的那个每天给我发清单的先不要了")] == ["withdraw"]
    assert find_statements("SAE那个事再强调下，报告里务必写明获知日期") == []


def test_newcomer_kinds_a_conditional_rule_a_promise_inside_and_a_universal_asker() -> None:
    # a conditional rule about an output is standing; a speaker's own promise with 以后 inside is not
    said = "换个思路：如果一个中心一周里超过五条query，就把它放清单最上面，这样好催"
    assert [f.text for f in find_statements(said)] == ["如果一个中心一周里超过五条query，就把它放清单最上面。"]
    assert find_statements("我以后每周五都会先过一遍偏离清单") == []
    assert [f.kind for f in find_statements("不管谁问筛选数，都只报筛选成功的，别报总数")] == ["durable"]
    # someone else's words with the subject named after the verb of saying
    assert find_statements("伦理那边说他们以后所有修正案都要附对照表，不知道会不会影响我们") == []
    # a subject's order with a cue in the same sentence stays the subject's
    assert find_statements("P021今天起停奥氮平，以后夜里躁动先用非药物措施") == []
    # "anything meant for me" in a standing request asked as a question
    assert [f.kind for f in find_statements("Could you send anything meant for me to my email rather than WeCom?")] == [
        "durable"]


def test_a_rule_noted_down_is_an_instruction_and_a_state_noted_down_is_context() -> None:
    from agent_memory.hot_memory.statements import classify_section

    assert classify_section("SAE 表格每次都要双人核对后再交。", kind="note") == "User Preferences"
    assert classify_section("3号中心的冷链记录仪没电了，这周换。", kind="note") == "Active Context"


def test_a_question_form_change_after_a_complaint_keeps_its_subject_and_value() -> None:
    from agent_memory.hot_memory.analysis import values

    said = "用药提醒一周发一次我老忘，周二看完周四就想不起来了 能不能改成每天上午发，就发当天要吃的那几种？"
    assert [f.text for f in find_statements(said)] == ["用药提醒能不能改成每天上午发，就发当天要吃的那几种。"]
    assert values("能不能改成每天上午发")["frequency"] == frozenset({"day"})  # 能不能 is no negation
    assert "format" not in values("不要PDF")
