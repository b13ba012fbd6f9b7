"""Standing directives versus tasks in the chat turn (docs/architecture.md, "Intents"): a directive is
acknowledged and left to the distiller, never a report, a QC run or a tool call; a message that is
both does both parts. And a QC context never sees history, also not through the recent turns."""

from __future__ import annotations

import pytest

from agent_memory.chat.intents import RuleIntentClassifier
from agent_memory.chat.intents.directives import split_directives
from agent_memory.domain.models import Intent
from tests.fakes import InMemoryStore
from tests.unit.chat_support import deps_with, llm_requests, seed_project, send, session_block, system_blocks

RULES = RuleIntentClassifier()


@pytest.mark.parametrize("text", [
    "以后周报周一发",
    "记住：QC清单以后直接贴表格",
    "质控报告以后只列未关闭的问题，已经关闭的不用再列",
    "Going forward, flag missing lab units in every QC run.",
    "以后查受试者数据的时候先给我访视状态再给化验值",
])
def test_a_standing_directive_carries_no_task_intent(text: str) -> None:
    # When a message only states how things are to be done from now on
    result = RULES.classify(text)
    # Then it asks for nothing now: no report, QC run or look-up; the directive is returned
    assert result.intents == (Intent.GENERAL,)
    assert result.directives


@pytest.mark.parametrize(("text", "task"), [
    ("以后周报周一发，这周的先发我", Intent.GENERATE_REPORT),
    ("以后QC结果都直接贴表格，现在先帮我跑一下01中心的", Intent.QC_TASK),
    ("以后质控按受试者编号排序。先把P001到P010查一遍", Intent.QC_TASK),
    ("以后回答简短点。P011 入组了没", Intent.QUERY_DATA),
    ("Going forward group QC findings by form; run QC on site 02 now.", Intent.QC_TASK),
])
def test_a_message_that_is_both_asks_for_its_task_only(text: str, task: Intent) -> None:
    # When a message states a directive AND asks for something now
    result = RULES.classify(text)
    # Then its intents are those of the task, and the directive is returned beside them
    assert result.intents == (task,)
    assert result.directives


def test_the_task_part_is_what_lies_outside_the_statement() -> None:
    split = split_directives("以后周报周一发，这周的先发我")
    assert split.statements == ("周报周一发。",) and split.task == "这周的先发我" and split.asks_now


def test_a_reminder_request_is_never_split_off_as_a_directive() -> None:
    # "以后每周一提醒我…" asks the reminder skill for a schedule now
    assert split_directives("以后每周一早上9点提醒我清理Query").statements == ()


def test_a_directive_turn_is_acknowledged_with_no_tool_call_and_no_report(store: InMemoryStore) -> None:
    # Given a project with reports and clinical data
    seed_project(store)
    deps = deps_with(store)

    # When a PI states a standing directive about the weekly report
    result = send(deps, "以后周报周一发")

    # Then the reply acknowledges it; one model call, which may call no tool, with no history
    assert result.intents == ["GENERAL"]
    assert "好的，以后周报周一发。" in result.reply and "周报草稿" not in result.reply
    (request,) = llm_requests(deps)
    assert request.tool_choice == {"type": "none"} and request.tools  # same tools: the cached prefix holds
    assert "Standing directives in this message: 周报周一发。" in session_block(request)
    assert "history" not in system_blocks(request)


def test_a_qc_directive_runs_no_qc(store: InMemoryStore) -> None:
    seed_project(store)
    deps = deps_with(store)

    result = send(deps, "记住：QC清单以后直接贴表格")

    assert result.intents == ["GENERAL"] and result.calls[0].model_calls == 1
    assert "质控" not in result.reply and "好的，以后QC清单直接贴表格。" in result.reply


def test_a_message_that_is_both_acknowledges_and_does_the_task(store: InMemoryStore) -> None:
    seed_project(store)
    deps = deps_with(store)

    result = send(deps, "以后回答简短点。P001 入组了吗")

    # the directive is acknowledged AND the data is looked up with the tool
    assert result.intents == ["QUERY_DATA"]
    assert "好的，以后回答简短点。" in result.reply and "P001 已入组" in result.reply
    assert llm_requests(deps)[0].tool_choice == {"type": "auto"}


def test_a_qc_turn_after_a_history_answer_leaves_that_answer_out(store: InMemoryStore) -> None:
    # Given a session whose earlier turn answered a history question from the weekly reports
    seed_project(store)
    deps = deps_with(store)
    history_turn = send(deps, "第3周我们做了什么决定？")
    send(deps, "P001 入组了吗")
    assert "第3周决定事项 3" in history_turn.reply

    # When a QC task is asked in the same session
    send(deps, "对 P005 做质控")

    # Then the QC context replays the data turn but not the history answer (nor its question)
    qc = llm_requests(deps)[-2]  # the QC call's first step (then its tool step)
    sent = str(qc.messages)
    assert "P001 入组了吗" in sent
    assert "第3周决定事项" not in sent and "第3周我们做了什么决定" not in sent
    # while a later non-QC turn still replays it
    send(deps, "P005 入组了吗")
    assert "第3周决定事项 3" in str(llm_requests(deps)[-2].messages)


@pytest.mark.parametrize(
    ("text", "intents"),
    [
        # what was judged since the project started is a question about the project's past
        ("自项目启动以来，哪些SAE被判定和研究药物相关？", {"QUERY_HISTORY"}),
        ("Since the study began, which deviations were deemed major?", {"QUERY_HISTORY"}),
        # a subject's own record stays a look-up of current data
        ("P014 这个AE被判定和药物相关吗？", {"QUERY_DATA"}),
    ],
)
def test_what_was_judged_since_the_start_is_history(text: str, intents: set[str]) -> None:
    assert {str(i) for i in RuleIntentClassifier().classify(text).intents} == intents


@pytest.mark.parametrize(("text", "reply"), [
    ("那个算了，不用了。", "好的，那条不作数了"),
    ("scratch that, 还是照旧吧", "好的，那条不作数了"),
    ("Actually forget that, the site prints it.", "OK, withdrawn"),
])
def test_a_withdrawal_is_acknowledged_as_taken_back_not_as_a_directive(
        store: InMemoryStore, text: str, reply: str) -> None:
    seed_project(store)
    deps = deps_with(store)

    result = send(deps, text)

    assert reply in result.reply and "以后" not in result.reply and "from now on" not in result.reply
    (request,) = llm_requests(deps)
    assert "Withdrawn in this message:" in session_block(request)
    assert "Standing directives in this message" not in session_block(request)
