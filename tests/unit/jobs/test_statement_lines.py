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
