"""The baseline System Rules of a new IIT project (Chinese and English), as data.

An investigator-initiated trial's assistant starts with these safeguards, which the project's
admins review when onboarding and may edit like any admin line (docs/architecture.md, "Hot
memory": System Rules are admin lines; the AI never writes, changes or relaxes them). Each rule
states one safeguard of good clinical practice:

- ``br-identifiers``: subjects' identifiers are never handled by the assistant;
- ``br-data-changes``: data change only through the EDC, by study staff, with approval;
- ``br-ae-causality``: AE causality and SAE reporting are decided by investigators;
- ``br-deviations``: protocol deviations are recorded and reported, never hidden;
- ``br-medical-advice``: no medical advice to patients or subjects.

Pure data: nothing here reads storage or the clock (the caller passes ``now``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from agent_memory.domain.models import HotMemoryLine

RulesLanguage = Literal["zh", "en"]

#: ``created_by`` of a baseline line (it is an admin line: ``source="admin"``).
BASELINE_AUTHOR = "baseline"


@dataclass(frozen=True)
class BaselineRule:
    """One safeguard: ``rule_id`` (also the line id), ``safeguard`` (what it protects, a short
    English name) and its wording in Chinese (``zh``) and English (``en``)."""

    rule_id: str
    safeguard: str
    zh: str
    en: str

    def text(self, language: RulesLanguage) -> str:
        """The rule's wording in ``language``."""
        return self.zh if language == "zh" else self.en


BASELINE_RULES: tuple[BaselineRule, ...] = (
    BaselineRule(
        "br-identifiers", "identifiers",
        "助手不处理受试者的身份标识信息（姓名、身份证号、手机号、住址等）：回复、报告和导出中一律只用受试者编号。",
        "The assistant never handles subjects' identifiers (names, ID numbers, phone numbers, addresses): "
        "replies, reports and exports use subject numbers only.",
    ),
    BaselineRule(
        "br-data-changes", "data changes",
        "研究数据只能由研究人员在EDC中修改，并须经审批；助手不得直接修改、补填或删除任何数据。",
        "Study data are changed only in the EDC, by study staff, with approval; the assistant never edits, fills "
        "in or deletes any data itself.",
    ),
    BaselineRule(
        "br-ae-causality", "AE causality and SAE reporting",
        "不良事件的相关性判断和严重不良事件（SAE）是否上报、何时上报，均由研究者决定；助手只整理信息，不下结论。",
        "AE causality and whether and when an SAE is reported are decided by the investigators; the assistant "
        "organises the information and never concludes.",
    ),
    BaselineRule(
        "br-deviations", "protocol deviations",
        "方案偏离必须如实记录并按规定上报，不得隐瞒、淡化或不报。",
        "Protocol deviations are always recorded and reported as required; never hidden, played down or left "
        "unreported.",
    ),
    BaselineRule(
        "br-medical-advice", "medical advice",
        "助手不向患者或受试者提供医疗建议（诊断、用药、剂量、停药或治疗调整）；这类问题转交研究医生。",
        "The assistant gives patients and subjects no medical advice (diagnosis, medication, doses, stopping or "
        "changing treatment); such questions go to the study physician.",
    ),
)


def baseline_rule_lines(language: RulesLanguage, *, now: datetime) -> list[HotMemoryLine]:
    """The baseline as System Rules lines of a new project's hot memory, in rule order.

    Args:
        language: the wording used, ``"zh"`` or ``"en"`` (the project's working language).
        now: the creation time (timezone-aware UTC) written as each line's ``created_at``.

    Returns:
        One admin line per rule: ``line_id`` = the rule id, ``section="System Rules"``,
        ``source="admin"``, ``created_by`` = :data:`BASELINE_AUTHOR`, no evidence.
    """
    return [
        HotMemoryLine(line_id=rule.rule_id, section="System Rules", text=rule.text(language), source="admin",
                      created_at=now, created_by=BASELINE_AUTHOR)
        for rule in BASELINE_RULES
    ]


__all__ = ["BASELINE_AUTHOR", "BASELINE_RULES", "BaselineRule", "RulesLanguage", "baseline_rule_lines"]
