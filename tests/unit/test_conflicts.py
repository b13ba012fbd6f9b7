"""A new statement against an active line of the same scope: it replaces the line (a new value of
the same kind, the opposite of it, a new current focus), never both active; a restatement of a
System Rule adds nothing; a statement on another detail is its own line."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_memory.domain.jobs import FlowLogEntry
from agent_memory.domain.models import HotMemory, HotMemoryLine
from agent_memory.hot_memory.analysis import analyse
from agent_memory.hot_memory.merge import MergeResult, merge_candidates
from agent_memory.hot_memory.statements import extract_rule_candidates

T = datetime(2026, 9, 14, 2, 0, tzinfo=UTC)
RULE = HotMemoryLine(line_id="br-id", section="System Rules", source="admin", created_at=T, created_by="baseline",
                     text="助手不处理受试者的身份标识信息（姓名、身份证号、手机号）：一律只用受试者编号。")


def _merge(active: HotMemoryLine, text: str, role: str) -> MergeResult:
    said = FlowLogEntry(message_id="m-1", session_id="s", role="user", content=text, at=T, user_id="u-1",
                        study_role=role)
    return merge_candidates(HotMemory(project_id="p1", lines=[RULE, active]), extract_rule_candidates([said]),
                            day_messages={"m-1": said}, day="2026-09-14", now=T, max_line_tokens=200)


def _line(text: str, role: str | None, section: str = "User Preferences") -> HotMemoryLine:
    return HotMemoryLine(line_id="hm-old", section=section, text=text, source="distilled", role_tag=role,
                         created_at=T, created_by="distiller", evidence=["m-0"], stated_by="u-1")


@pytest.mark.parametrize(
    ("active", "statement", "role"),
    [
        ("质控结果按中心分组列出。", "以后质控结果按受试者编号排序", "DM"),  # another arrangement key
        ("Protocol deviations are grouped by site.", "Going forward, sort the deviation log by type rather than by "
         "centre.", "DM"),
        ("Missing-data rates are reported per form.", "Going forward report missing-data rates per visit.", "DM"),
        ("回答要详细，附上计算过程。", "以后回答简短点，只给结论", "PI"),  # another level of detail
        ("QC清单以附件形式发送。", "QC清单以后直接贴在聊天里", "CRC"),  # another way of delivery
        ("日期格式用DD/MM/YYYY。", "以后日期一律写YYYY-MM-DD", "DM"),  # another date format
        ("周报里附上入组曲线图。", "周报里以后别放曲线图了", "PI"),  # the opposite
    ],
)
def test_a_contradicting_statement_replaces_the_active_line(active: str, statement: str, role: str) -> None:
    result = _merge(_line(active, role), statement, role)
    assert list(result.replaced) == ["hm-old"]
    assert [ln.line_id for ln in result.lines].count("hm-old") == 0


def test_a_new_current_focus_replaces_the_old_one_labelled_or_not() -> None:
    old = _line("当前重点：完成06中心启动访视。", None, "Active Context")
    result = _merge(old, "记一下：这个月的重点改成清理V2的query", "PI")
    assert list(result.replaced) == ["hm-old"]


def test_a_statement_on_another_detail_of_the_same_list_is_its_own_line() -> None:
    result = _merge(_line("偏离清单按类别分组。", "DM"), "偏离清单以后带上发生日期", "DM")
    assert result.replaced == {} and len(result.added) == 1
    assert not analyse("偏离清单按类别分组。").negative  # 类别 holds 别 but negates nothing


def test_a_statement_forbidding_only_what_a_system_rule_forbids_adds_nothing() -> None:
    result = _merge(_line("周报每周一上午发。", "PI"), "记住 报告里不要出现患者名字", "PI")
    assert result.duplicates == 1 and not result.changed and result.reviews == []
