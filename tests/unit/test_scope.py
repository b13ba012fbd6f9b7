"""Whom a preference is for (agent_memory.hot_memory.scope) and what the distillation does with it:
a role named as its audience, the speaker alone, everyone, or the speaker's study role."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_memory.domain.jobs import FlowLogEntry
from agent_memory.domain.models import HotMemory, HotMemoryLine
from agent_memory.hot_memory.merge import MergeResult, merge_candidates
from agent_memory.hot_memory.scope import Scope, preference_scope
from agent_memory.hot_memory.statements import extract_rule_candidates

T = datetime(2026, 9, 14, 2, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # a role as the audience: receiver, asker, topic at the head; Chinese, English, plurals
        ("以后给统计师的导出都用CSV格式", Scope("role", "Statistician")),
        ("监查员要的清单以后按中心分开", Scope("role", "CRA")),
        ("以后CRC问随访时先列超窗的", Scope("role", "CRC")),
        ("Please answer the data managers in English from now on.", Scope("role", "DM")),
        ("When Sub-Is ask about AEs, give the grade first going forward.", Scope("role", "Sub-I")),
        ("For us PIs, summaries should lead with the totals from now on.", Scope("role", "PI")),
        # the speaker as receiver or subject
        ("以后提醒我的时候带上访视窗", Scope("speaker")),
        ("Keep my summaries short from now on.", Scope("speaker")),
        ("我以后只看本中心的数据", Scope("speaker")),
        # the whole team
        ("以后不管谁问，日期都用YYYY-MM-DD", Scope("everyone")),
        ("From now on, everyone's exports should be CSV.", Scope("everyone")),
        ("各位，以后周报都周五发", Scope("everyone")),
        # none named: the speaker's role applies
        ("以后周报周一发", None),
        # a role as the content of the line, an opinion of the speaker: no scope
        ("以后偏离清单由PI确认后再发", None),
        ("我觉得以后周报用表格更好", None),
    ],
)
def test_the_scope_a_sentence_names(sentence: str, expected: Scope | None) -> None:
    assert preference_scope(sentence) == expected


def _said(text: str, *, user_id: str = "u-pi", role: str = "PI", message_id: str = "m-1") -> FlowLogEntry:
    return FlowLogEntry(message_id=message_id, session_id="s", role="user", content=text, at=T, user_id=user_id,
                        study_role=role)


def _merge(lines: list[HotMemoryLine], said: list[FlowLogEntry]) -> MergeResult:
    return merge_candidates(HotMemory(project_id="p1", lines=lines), extract_rule_candidates(said),
                            day_messages={m.message_id: m for m in said}, day="2026-09-14", now=T,
                            max_line_tokens=200)


def test_a_preference_for_another_role_is_tagged_with_that_role_not_the_speakers() -> None:
    result = _merge([], [_said("From now on always answer in English for the DM")])
    assert [(ln.role_tag, ln.section) for ln in result.lines] == [("DM", "User Preferences")]


def test_the_speakers_own_preference_is_tagged_with_their_user_id_and_everyones_is_untagged() -> None:
    result = _merge([], [_said("以后给我发的提醒都放在上午", user_id="u-crc", role="CRC"),
                         _said("大家以后的汇报都先写结论", message_id="m-2")])
    assert [ln.role_tag for ln in result.lines] == ["u-crc", None]


def test_a_role_line_and_everyones_line_on_the_same_subject_are_both_kept() -> None:
    # Given everyone's reply language, then English for the CRA: an exception, not a replacement
    everyone = HotMemoryLine(line_id="hm-all", section="User Preferences", text="回复都用中文。", source="distilled",
                             created_at=T, created_by="distiller", evidence=["m-0"])
    result = _merge([everyone], [_said("Please reply to the CRA in English from now on.")])
    assert [(ln.line_id, ln.role_tag) for ln in result.lines][0] == ("hm-all", None)
    assert [ln.role_tag for ln in result.lines][1:] == ["CRA"] and result.replaced == {}


def test_a_restatement_naming_no_scope_keeps_the_speakers_own_line_scope() -> None:
    # Given a CRC's own reminder lead time, restated later without "我"
    first = _merge([], [_said("以后随访提醒提前3天发我", user_id="u-crc", role="CRC")])
    again = _merge(first.lines, [_said("随访提醒以后提前1天发就够了", user_id="u-crc", role="CRC", message_id="m-2")])
    # Then the new value replaces the speaker's own line and keeps its scope
    assert list(again.replaced) == first.added
    assert [ln.role_tag for ln in again.lines] == ["u-crc"]
