"""The baseline System Rules of a new IIT project (agent_memory.domain.baseline_rules)."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_memory.domain.baseline_rules import BASELINE_AUTHOR, BASELINE_RULES, baseline_rule_lines
from agent_memory.domain.text import estimate_tokens

NOW = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)


def test_every_safeguard_of_an_iit_has_one_rule_in_both_languages() -> None:
    assert [r.rule_id for r in BASELINE_RULES] == [
        "br-identifiers", "br-data-changes", "br-ae-causality", "br-deviations", "br-medical-advice"]
    for rule in BASELINE_RULES:
        assert any("\u4e00" <= ch <= "\u9fff" for ch in rule.zh), rule.rule_id
        assert rule.en.isascii(), rule.rule_id


def test_baseline_lines_are_admin_system_rules_in_the_projects_language() -> None:
    lines = baseline_rule_lines("en", now=NOW)
    assert [ln.line_id for ln in lines] == [r.rule_id for r in BASELINE_RULES]
    assert {(ln.section, ln.source, ln.created_by, ln.created_at) for ln in lines} == {
        ("System Rules", "admin", BASELINE_AUTHOR, NOW)}
    assert lines[1].text.startswith("Study data are changed only in the EDC")
    assert baseline_rule_lines("zh", now=NOW)[2].text.startswith("不良事件的相关性判断")


def test_the_baseline_leaves_most_of_the_hot_memory_cap_to_the_project() -> None:
    for language in ("zh", "en"):
        total = sum(estimate_tokens(ln.text) for ln in baseline_rule_lines(language, now=NOW))
        assert total < 400, (language, total)  # of the 2,000-token cap
