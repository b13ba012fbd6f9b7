"""A small bilingual cue lexicon of clinical-research concepts (English and Chinese), so that a
question in one language finds records written in the other ("Why did we pause screening?" meets
"暂停筛选"). One entry per CONCEPT, never per sentence; English forms are word starts (``screen``
matches screening, screened), Chinese forms are substrings. Matching is on NFKC + casefolded text.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

#: Concept groups: every form of a group stands for the same concept.
CONCEPTS: tuple[tuple[str, ...], ...] = (
    ("screen", "筛选", "筛查"),
    ("enrol", "recruit", "入组", "招募"),
    ("pause", "paus", "halt", "suspend", "on hold", "暂停", "中止", "叫停"),
    ("resum", "restart", "恢复"),
    ("protocol", "方案"),
    ("amend", "revision", "修订"),
    ("deviation", "偏离"),
    ("query", "queries", "质疑"),
    ("qc", "quality", "质控", "核查"),
    ("visit", "访视"),
    ("follow-up", "follow up", "followup", "随访"),
    ("window", "窗口", "超窗"),
    ("adverse", "sae", "不良事件"),
    ("site", "centre", "center", "中心"),
    ("consent", "icf", "知情同意"),
    ("ethic", "irb", "伦理"),
    ("lab", "化验", "实验室"),
    ("subsid", "allowance", "reimburs", "transport", "补贴", "交通"),
    ("coordinator", "crc", "协调员"),
    ("decid", "decision", "agreed", "决定", "决策"),
    ("problem", "issue", "blocker", "问题", "困难"),
    ("lesson", "learn", "pitfall", "教训", "经验", "踩坑"),
    ("delay", "slow", "late", "延迟", "推迟", "缓慢", "太慢"),
    ("data entry", "ocr", "录入"),
    ("drug", "medication", "药物"),
    ("randomi", "随机"),
    ("criteria", "criterion", "inclusion", "exclusion", "入排", "标准"),
    ("meeting", "会议", "开会"),
    ("dropout", "drop out", "withdr", "脱落", "退出"),
    ("interim", "中期"),
    ("monitor", "监查"),
    ("target", "目标"),
)


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    out = []
    for group in CONCEPTS:
        alternatives = [
            re.escape(form) if re.search(r"[\u4e00-\u9fff]", form) else r"(?<![a-z])" + re.escape(form)
            for form in group
        ]
        out.append((re.compile("|".join(alternatives)), group))
    return tuple(out)


def concept_forms(text: str) -> list[str]:
    """Every form of every concept ``text`` mentions (in lexicon order, no repeats)."""
    norm = _norm(text)
    found: list[str] = []
    for pattern, group in _patterns():
        if pattern.search(norm):
            found.extend(f for f in group if f not in found)
    return found


def expand_bilingual(text: str) -> str:
    """``text`` followed by the forms, in both languages, of the concepts it mentions."""
    forms = concept_forms(text)
    return f"{text} {' '.join(forms)}" if forms else text


__all__ = ["CONCEPTS", "concept_forms", "expand_bilingual"]
