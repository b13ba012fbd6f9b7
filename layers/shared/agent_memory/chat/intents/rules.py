"""The deterministic, offline, multi-intent classifier (Chinese and English).
"""

from __future__ import annotations

from agent_memory.chat.intents.cues import RESEARCH_CONTEXT, cue_families, normalise, split_clauses
from agent_memory.chat.intents.plan import (
    Classification,
    dedupe_intents,
)
from agent_memory.domain.models import Intent

_HISTORY_KINDS = (Intent.QUERY_HISTORY, Intent.ANALYZE_TREND)
# Intents that a symptom narrative without research context overrides (see classify()).
_PATIENT_STORY_OVERRIDES = frozenset({Intent.QUERY_DATA, Intent.QUERY_HISTORY, Intent.ANALYZE_TREND})


class RuleIntentClassifier:
    """Deterministic, offline, multi-intent classifier for Chinese and English.

    How it decides:

    1. Normalise (NFKC + casefold) and split into request clauses.
    2. In each clause, find which cue families (:func:`cue_families`) match.
    3. Resolve the traps by kind, per clause:
       - a patient's own past (病史/既往/medical history) is data: it cancels a history cue; so
         does a subject id when the only history cue is "past + why" ("P003 上次访视为什么没来");
       - a QC task, a history question or a trend analysis is ABOUT the data it names, so it
         cancels the clause's data cues ("对 P005 做质控", "回顾下去年的入组情况");
       - a report or a memory question cancels a generic data-noun cue in its clause;
       - "I told you / my rule" is hot memory and cancels a history cue; a bare "do you
         remember" yields to a history cue ("你还记得我们为什么换了中心实验室吗" is history);
       - a summary of a long past period is a trend, not a report;
       - the "now" marker never creates a data intent on its own.
    4. Across the message: symptoms with research context (subject ids, 受试者/患者, 入组, AE,
       CRF...) are subject data, not a consultation; symptoms WITHOUT research context are a
       patient's or parent's own story, whose data/trend/history wording (病史, 化验, 去年,
       越来越多) is about the patient, so those intents are dropped.
    5. Nothing matched -> ``GENERAL``.

    ``classify`` returns a :class:`Classification` with ``source="rules"``; intents are in the
    order of the clauses, then :class:`Intent` order within a clause.
    """

    def __init__(self) -> None:
        self.cue_families = cue_families()

    def matched_kinds(self, clause: str) -> dict[Intent, set[str]]:
        """Cue kinds matched in one normalised clause, by intent (for tests and debugging)."""
        found: dict[Intent, set[str]] = {}
        for cue in self.cue_families:
            if cue.pattern.search(clause):
                found.setdefault(cue.intent, set()).add(cue.kind)
        return found

    def _clause_intents(self, clause: str) -> list[Intent]:
        kinds = self.matched_kinds(clause)
        data = kinds.get(Intent.QUERY_DATA, set())
        mem = kinds.get(Intent.MEMORY_RECALL, set())
        # The "now" marker only reinforces.
        data.discard("current")
        if "medhist" in data or ("subject" in data and kinds.get(Intent.QUERY_HISTORY) == {"past_reason"}):
            kinds.pop(Intent.QUERY_HISTORY, None)
        if "told" in mem:
            kinds.pop(Intent.QUERY_HISTORY, None)
        elif mem and any(i in kinds for i in _HISTORY_KINDS):
            kinds.pop(Intent.MEMORY_RECALL, None)
        trend = kinds.get(Intent.ANALYZE_TREND, set())
        report = kinds.get(Intent.GENERATE_REPORT, set())
        if trend == {"long_past_summary"} and Intent.QUERY_HISTORY in kinds:
            # "我们去年讨论过要不要加亚组分析": 分析 names the topic of a past decision.
            kinds.pop(Intent.ANALYZE_TREND, None)
        if trend and report and not (report - {"summary"}):
            kinds.pop(Intent.GENERATE_REPORT, None)
        if any(i in kinds for i in (Intent.QC_TASK, *_HISTORY_KINDS)) and "medhist" not in data:
            data.clear()
        if Intent.GENERATE_REPORT in kinds or Intent.MEMORY_RECALL in kinds:
            data.discard("noun_query")
        if not data:
            kinds.pop(Intent.QUERY_DATA, None)
        return [i for i in Intent if kinds.get(i)]

    def classify(self, text: str, *, deadline: float | None = None) -> Classification:
        """Classify ``text`` (``deadline`` is accepted for the Protocol and ignored).

        Returns:
            ``Classification(intents=..., source="rules")``; ``(GENERAL,)`` when nothing matched.
        """
        norm = normalise(text)
        found: list[Intent] = []
        for clause in split_clauses(norm):
            found.extend(self._clause_intents(clause))
        intents = list(dedupe_intents(found))
        if Intent.CONSULTATION in intents:
            if RESEARCH_CONTEXT.search(norm):
                # Symptoms inside research work describe subject data ("P002 AE 里记的头痛").
                intents.remove(Intent.CONSULTATION)
            else:
                # A patient's or parent's own story: its 病史/化验/去年/越来越... are about the
                # patient, never project data, trends or decisions.
                intents = [i for i in intents if i not in _PATIENT_STORY_OVERRIDES]
        if not intents:
            intents = [Intent.GENERAL]
        return Classification(intents=tuple(intents), source="rules")
