"""Symptom facts: the model, the extractor port, and how facts of later messages fold into the
session's facts (earliest onset wins; a later status or trend replaces an earlier one).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, Field

Status = Literal["present", "denied"]
Trend = Literal["worsening", "improving"]


class SymptomFact(BaseModel):
    """One normalised symptom of a session."""

    name: str
    status: Status
    onset: str | None = None
    onset_approximate: bool = False
    onset_range: tuple[str, str] | None = None
    onset_phrase: str | None = None
    trend: Trend | None = None
    #: Had it and it has gone ("不咳了", "烧退了", "头不疼了"): still ``present`` (the patient had the
    #: symptom), ``trend`` improving, and gone as of this statement; a later mention without the
    #: resolution clears it. A follow-up comparison counts it as resolved.
    resolved: bool = False
    evidence: list[str] = Field(default_factory=list)


class SymptomExtractor(Protocol):
    """Port: the symptom facts stated in one patient message."""

    def extract(
        self, text: str, *, message_id: str, at_local: datetime, question: str | None = None
    ) -> list[SymptomFact]:
        """Facts of ``text`` (one per name, first mention first).

        Args:
            text: the patient's message.
            message_id: id recorded as the facts' evidence.
            at_local: the message time as an aware datetime in the project's time zone; relative
                dates resolve against its LOCAL date.
            question: the doctor's turn right before this answer, if any: a short answer
                (是的 / 没有 / 不是 ...) is resolved against the symptoms it names.
        """
        ...


# --------------------------------------------------------------------------------------
# Merge and prompt block
# --------------------------------------------------------------------------------------


def merge_fact(old: SymptomFact, new: SymptomFact) -> SymptomFact:
    evidence = list(dict.fromkeys([*old.evidence, *new.evidence]))
    status = new.status
    if status == "denied":
        trend: Trend | None = None
    else:
        trend = new.trend if new.trend is not None else (old.trend if old.status == "present" else None)
    onset_src = old
    if new.onset is not None and (
        old.onset is None
        or new.onset < old.onset
        or (new.onset == old.onset and old.onset_approximate and not new.onset_approximate)
    ):
        onset_src = new
    return SymptomFact(
        name=old.name,
        status=status,
        onset=onset_src.onset,
        onset_approximate=onset_src.onset_approximate,
        onset_range=onset_src.onset_range,
        onset_phrase=onset_src.onset_phrase,
        trend=trend,
        resolved=status == "present" and new.resolved,
        evidence=evidence,
    )


def merge_facts(current: list[SymptomFact], new: list[SymptomFact]) -> list[SymptomFact]:
    """Fold ``new`` facts (a later message) into ``current``; inputs are not modified.

    Per name: the newer status wins (a later denial or confirmation); evidence ids accumulate
    (deduplicated, order kept); a newer trend replaces an older one (a mention without a trend
    keeps the older trend; a denial clears it); the earliest known onset is kept (with its
    phrase, range and approximate flag). Order is stable: first mention first, new names
    appended in their order.
    """
    merged: dict[str, SymptomFact] = {}
    for fact in [*current, *new]:
        if fact.name in merged:
            merged[fact.name] = merge_fact(merged[fact.name], fact)
        else:
            merged[fact.name] = fact.model_copy(deep=True)
    return list(merged.values())


_TREND_ZH = {"worsening": "加重", "improving": "好转"}


def facts_block(facts: list[SymptomFact]) -> str:
    """Compact text of the session's symptoms for the prompt (``""`` when there are none).

    One line per symptom, present first then denied, each ``- name: 有|无 ...``, e.g.
    ``- 头痛: 有, 加重, 起病 2026-03-09 (昨天开始)`` / ``- 咳嗽: 有, 起病约 2026-03-02~2026-03-08
    (上周起)`` / ``- 发烧: 无 (否认)``.
    """
    if not facts:
        return ""
    lines = ["症状记录 (有 = present, 无 = denied by the patient):"]
    for fact in sorted(facts, key=lambda f: f.status != "present"):
        if fact.status == "denied":
            lines.append(f"- {fact.name}: 无 (否认)")
            continue
        parts = ["有"]
        if fact.trend:
            parts.append(_TREND_ZH[fact.trend])
        if fact.onset:
            when = f"{fact.onset_range[0]}~{fact.onset_range[1]}" if fact.onset_range else fact.onset
            about = "约" if fact.onset_approximate else ""
            phrase = f" ({fact.onset_phrase})" if fact.onset_phrase else ""
            parts.append(f"起病{about} {when}{phrase}")
        lines.append(f"- {fact.name}: " + ", ".join(parts))
    return "\n".join(lines)
