"""TEMPORARY stand-in for ``agent_memory.symptoms`` (being written elsewhere), installed only
when the real module is missing. Implements the contract just enough for the session tests."""

from __future__ import annotations

import re
import sys
import types
from datetime import datetime, timedelta
from typing import Literal, Protocol

from pydantic import BaseModel, Field

_TERMS = {"头痛": "头痛", "怕冷": "怕冷", "恶寒": "怕冷", "出汗": "出汗", "汗": "出汗", "发烧": "发烧",
          "发热": "发烧", "咳嗽": "咳嗽", "咳": "咳嗽", "流鼻涕": "流涕", "呕吐": "呕吐", "腹泻": "腹泻"}
_NEG = ("没有", "无", "不", "否认", "未")


class SymptomFact(BaseModel):
    name: str
    status: Literal["present", "denied"]
    onset: str | None = None
    onset_approximate: bool = False
    onset_range: list[str] | None = None
    onset_phrase: str | None = None
    trend: Literal["worsening", "improving"] | None = None
    evidence: list[str] = Field(default_factory=list)


class SymptomExtractor(Protocol):
    def extract(self, text: str, *, message_id: str, at_local: datetime,
                question: str | None) -> list[SymptomFact]: ...


class RuleSymptomExtractor:
    def extract(self, text: str, *, message_id: str, at_local: datetime,
                question: str | None) -> list[SymptomFact]:
        facts: dict[str, SymptomFact] = {}
        stripped = text.strip("。！!？? ")
        if question and stripped in ("是的", "是", "有", "对", "没有", "不是", "没", "无"):
            status: Literal["present", "denied"] = "denied" if stripped in ("没有", "不是", "没", "无") else "present"
            for term, name in _TERMS.items():
                if term in question and name not in facts:
                    facts[name] = SymptomFact(name=name, status=status, evidence=[message_id])
            return list(facts.values())
        for clause in re.split(r"[，,。；;、]", text):
            for term, name in sorted(_TERMS.items(), key=lambda kv: -len(kv[0])):
                idx = clause.find(term)
                if idx < 0 or name in facts:
                    continue
                before = clause[max(0, idx - 2):idx]
                denied = any(n in before for n in _NEG)
                trend: Literal["worsening", "improving"] | None = None
                if "加重" in clause or "更" in clause:
                    trend = "worsening"
                elif "好转" in clause or "好些" in clause:
                    trend = "improving"
                onset = None
                approx = False
                rng = None
                phrase = None
                if "昨天" in clause:
                    onset, phrase = (at_local.date() - timedelta(days=1)).isoformat(), "昨天"
                elif "上周" in clause:
                    monday = at_local.date() - timedelta(days=at_local.weekday() + 7)
                    onset, approx, phrase = monday.isoformat(), True, "上周"
                    rng = [monday.isoformat(), (monday + timedelta(days=6)).isoformat()]
                facts[name] = SymptomFact(
                    name=name, status="denied" if denied else "present", onset=onset, onset_approximate=approx,
                    onset_range=rng, onset_phrase=phrase, trend=trend, evidence=[message_id],
                )
        return list(facts.values())


def merge_facts(current: list[SymptomFact], new: list[SymptomFact]) -> list[SymptomFact]:
    out = {f.name: f for f in current}
    for f in new:
        old = out.get(f.name)
        if old is None:
            out[f.name] = f
            continue
        evidence = list(dict.fromkeys([*old.evidence, *f.evidence]))
        out[f.name] = old.model_copy(update={
            "status": f.status, "trend": f.trend or old.trend, "evidence": evidence,
            "onset": old.onset or f.onset, "onset_approximate": old.onset_approximate if old.onset else f.onset_approximate,
        })
    return list(out.values())


def facts_block(facts: list[SymptomFact]) -> str:
    return "\n".join(f"- {f.name}: {f.status}" for f in facts)


class LLMSymptomExtractor(RuleSymptomExtractor):
    def __init__(self, llm: object, model: str, fallback: RuleSymptomExtractor) -> None:
        self.fallback = fallback


def install() -> None:
    """Install as ``agent_memory.symptoms`` if the real module is missing."""
    try:
        import agent_memory.symptoms  # noqa: F401
    except ModuleNotFoundError:
        module = types.ModuleType("agent_memory.symptoms")
        for name in ("SymptomFact", "SymptomExtractor", "RuleSymptomExtractor", "LLMSymptomExtractor",
                     "merge_facts", "facts_block"):
            setattr(module, name, globals()[name])
        sys.modules["agent_memory.symptoms"] = module
