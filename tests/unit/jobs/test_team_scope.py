"""The team in the merge: a preference for oneself by the only holder of a study role is that
role's (and so replaces the role's line); with two holders it stays the speaker's own; a
preference addressed to a colleague by name is that colleague's."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_memory.domain.jobs import FlowLogEntry
from agent_memory.domain.models import HotMemory, HotMemoryLine, Member
from agent_memory.hot_memory.merge import merge_candidates
from agent_memory.hot_memory.statements import extract_rule_candidates
from agent_memory.hot_memory.team import Team

T = datetime(2026, 9, 14, 3, 0, tzinfo=UTC)


def _member(user_id: str, role: str, name: str) -> Member:
    return Member(project_id="p1", user_id=user_id, project_role="member", study_role=role,
                  display_name=name, added_at=T, added_by="admin")


TEAM = Team([_member("u-pi", "PI", "周蔓"), _member("u-sub", "Sub-I", "林书航"), _member("u-c1", "CRC", "叶子涵"),
             _member("u-c2", "CRC", "康乐"), _member("u-stat", "Statistician", "Tomas Novak")])


def _merge(lines: list[HotMemoryLine], text: str, user_id: str, role: str, team: Team | None = TEAM):
    said = FlowLogEntry(message_id="m-1", session_id="s", role="user", content=text, at=T, user_id=user_id,
                        study_role=role)
    return merge_candidates(HotMemory(project_id="p1", lines=lines), extract_rule_candidates([said]),
                            day_messages={"m-1": said}, day="2026-09-14", now=T, max_line_tokens=200, team=team)


def _line(text: str, tag: str) -> HotMemoryLine:
    return HotMemoryLine(line_id="hm-old", section="User Preferences", text=text, source="distilled", role_tag=tag,
                         created_at=T, created_by="distiller", evidence=["m-0"])


def test_the_only_holder_of_a_role_speaking_for_themself_changes_the_roles_line() -> None:
    old = _line("项目周报每周五上午通过微信发给PI。", "PI")
    result = _merge([old], "周报别走微信了。以后发我邮箱，还是周五上午", "u-pi", "PI")
    assert list(result.replaced) == ["hm-old"]
    assert [(ln.role_tag, ln.text) for ln in result.lines] == [("PI", "周报发我邮箱，还是周五上午。")]


def test_one_of_two_holders_speaking_for_themself_keeps_a_line_of_their_own() -> None:
    old = _line("访视提醒通过微信发给CRC。", "CRC")
    result = _merge([old], "以后访视提醒发我邮箱就行", "u-c1", "CRC")
    assert [(ln.role_tag, ln.line_id == "hm-old") for ln in result.lines] == [("CRC", True), ("u-c1", False)]


def test_without_the_team_a_preference_for_oneself_is_the_speakers() -> None:
    result = _merge([], "以后周报发我邮箱", "u-pi", "PI", team=None)
    assert [ln.role_tag for ln in result.lines] == ["u-pi"]


def test_a_colleague_named_as_the_audience_gets_the_preference() -> None:
    by_title = _merge([], "以后给林医生做的AE汇总里，感染类的单独放一节", "u-pi", "PI")
    assert [ln.role_tag for ln in by_title.lines] == ["Sub-I"]
    by_first_name = _merge([], "From now on, listings for Tomas go out as SAS datasets.", "u-pi", "PI")
    assert [ln.role_tag for ln in by_first_name.lines] == ["Statistician"]
    one_of_two = _merge([], "以后给康乐的访视提醒里写上停车位置", "u-pi", "PI")
    assert [ln.role_tag for ln in one_of_two.lines] == ["u-c2"]


def test_a_colleague_mentioned_but_not_addressed_does_not_change_the_scope() -> None:
    result = _merge([], "林医生说得对，以后AE汇总里感染类单独放一节", "u-c1", "CRC")
    assert [ln.role_tag for ln in result.lines] == ["CRC"]


def test_a_rerun_of_a_day_whose_statements_replace_one_another_changes_nothing() -> None:
    said = [FlowLogEntry(message_id=f"m-{i}", session_id="s", role="user", content=text, at=T.replace(hour=3 + i),
                         user_id="u-c1", study_role="CRC")
            for i, text in enumerate(["以后访视提醒提前两天发", "访视提醒改成提前三天发"])]

    def run(lines: list[HotMemoryLine]):
        return merge_candidates(HotMemory(project_id="p1", lines=lines), extract_rule_candidates(said),
                                day_messages={m.message_id: m for m in said}, day="2026-09-14", now=T,
                                max_line_tokens=200, team=TEAM)

    first = run([])
    assert [ln.text for ln in first.lines] == ["访视提醒提前三天发。"] and first.changed
    again = run(first.lines)
    assert not again.changed and again.lines == first.lines


def test_a_colleague_called_by_a_nickname_when_they_ask_gets_the_preference() -> None:
    team = Team([_member("u-pi", "PI", "周蔓"), _member("u-xl", "CRC", "刘晓"), _member("u-c2", "CRC", "康乐")])
    result = _merge([], "以后小刘问入组进度的时候，直接给数字就行，不用解释", "u-pi", "PI", team=team)
    assert [ln.role_tag for ln in result.lines] == ["u-xl"]


def test_a_speaker_naming_themself_as_the_audience_states_their_own_preference() -> None:
    # 叶子涵 is one of two CRCs: her own preference is hers, not every CRC's
    result = _merge([], "以后给叶子涵的提醒不要在中午12点到2点之间发", "u-c1", "CRC")
    assert [ln.role_tag for ln in result.lines] == ["u-c1"]
