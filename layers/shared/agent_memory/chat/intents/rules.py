"""The deterministic, offline, multi-intent classifier (Chinese and English).
"""

from __future__ import annotations

from functools import lru_cache

from agent_memory.chat.intents.cues import RESEARCH_CONTEXT, SUBJECT_ID_RX, cue_families, normalise, split_clauses
from agent_memory.chat.intents.directives import intents_now, split_directives
from agent_memory.chat.intents.periods import REASON_RX, period_flags
from agent_memory.chat.intents.plan import (
    Classification,
    dedupe_intents,
)
from agent_memory.domain.models import Intent

_HISTORY_KINDS = (Intent.QUERY_HISTORY, Intent.ANALYZE_TREND)
# Intents that a symptom narrative without research context overrides (see classify()).
_PATIENT_STORY_OVERRIDES = frozenset({Intent.QUERY_DATA, Intent.QUERY_HISTORY, Intent.ANALYZE_TREND})
# History cue kinds that only place a question in time; about a subject they are subject data.
_WEAK_HISTORY = frozenset({"past_reason", "past_record"})
# History kinds found by the period rules (anchor + event, anchor + reason, retrieval).
_PERIOD_HISTORY = frozenset({"anchored", "retrieval"})


def _drop_by_context(kinds: dict[Intent, set[str]], flags: set[str], subject: bool, *, medhist: bool,
                     subject_topic: bool = False) -> None:
    """Drop the intents that the clause's context contradicts (in place).

    - a patient's own past (病史/既往) cancels a weak history cue, and any with a subject id;
    - a subject's own past ("P003 上次访视为什么没来", "P031 一年前的肌酐") and a subject's values
      over visits ("P012 这几次访视的血红蛋白是不是在下降") are subject data, not history or trend;
    - a question about a term or a routine ("什么是同比", "周报一般每周几生成") is general;
    - a standing preference ("周报以后改成周一发", "以后周报里加上上周对比") asks for no report
      or trend now.
    """
    history = kinds.get(Intent.QUERY_HISTORY, set())
    if medhist and (subject or history <= _WEAK_HISTORY):
        kinds.pop(Intent.QUERY_HISTORY, None)
    if subject and history <= _WEAK_HISTORY | _PERIOD_HISTORY:
        kinds.pop(Intent.QUERY_HISTORY, None)
    if subject_topic and history <= _WEAK_HISTORY | _PERIOD_HISTORY | {"why_we"}:
        # "why + an action in the past aspect" about a subject named first is the subject's own past
        # ("P012 上个月的访视为什么推迟了"; not "上个月为什么把P007剔除了", the project's decision)
        kinds.pop(Intent.QUERY_HISTORY, None)
    if subject:
        kinds.pop(Intent.ANALYZE_TREND, None)
    if "definition" in flags and not subject:
        for intent in (Intent.ANALYZE_TREND, Intent.GENERATE_REPORT, Intent.QUERY_DATA, *_HISTORY_KINDS):
            kinds.pop(intent, None)
    if "preference" in flags and not subject:
        kinds.pop(Intent.GENERATE_REPORT, None)
        kinds.pop(Intent.ANALYZE_TREND, None)


def _history_or_trend(history: set[str], trend: set[str], flags: set[str], subject: bool, *, report: bool) -> None:
    """When a clause found both a past event and a change over time, keep what it asks for (in place).
    ``report``: the clause asks for a report (a review of a period in a report is a trend)."""
    if not (history and trend):
        return
    if trend <= {"review"} and "decision" in flags and "anchored" in history and not report:
        # "Recap the key decisions from weeks 20 to 26": the decisions themselves.
        trend.clear()
    elif trend <= {"change"} and "reason" in flags and "anchored" in history:
        # "第40周前后为什么突然多了很多query": the cause of a past event, not a trend.
        trend.clear()
    elif "event" in flags and "trend_explicit" not in flags:
        # "what were the biggest problems over the past quarter": what happened in a period.
        trend.clear()
    elif history <= {"anchored"} and "reason" not in flags and not subject:
        # "week 12 vs week 20", "过去三个月有什么变化趋势": a comparison of periods, not a past event.
        history.discard("anchored")


def _add_period_intents(kinds: dict[Intent, set[str]], flags: set[str], subject: bool) -> None:
    """Add the history and trend intents the period kinds of a clause imply (in place).

    - QUERY_HISTORY ``anchored``: a time anchor (week N, W23, a year ago, last quarter, around a
      holiday, since the start, "that time") with a question about what happened / was decided /
      went wrong, or with a reason word;
    - QUERY_HISTORY ``lesson``/``provenance``: lessons and pitfalls, who/when decided (past by nature);
    - QUERY_HISTORY ``retrieval``: all or past weekly reports, or a report of an anchored week
      looked up (not this period's);
    - ANALYZE_TREND ``change``: a direction of change asked about, before/after an event, a
      comparison with a past reference or between periods, a review of an anchored period;
    - ANALYZE_TREND + GENERATE_REPORT ``from_reports``: a report compiled from past weekly reports.
    """
    history = kinds.setdefault(Intent.QUERY_HISTORY, set())
    trend = kinds.setdefault(Intent.ANALYZE_TREND, set())
    anchor = "anchor" in flags
    if anchor and ({"event", "reason", "decision"} & flags):
        history.add("anchored")
    if "reason" in flags and "decision" in flags:
        history.add("decision_reason")
    if "lesson" in flags and "lesson_told" not in flags:
        history.add("lesson")
    if "provenance" in flags:
        history.add("provenance")
    if "past_reports" in flags or ("report_retrieval" in flags and anchor and "current" not in flags):
        history.add("retrieval")
    if "change" in flags or "before_after" in flags:
        trend.add("change")
    if "compare" in flags and (anchor or "past_ref" in flags):
        trend.add("change")
    if "review" in flags and anchor:
        trend.add("review")
    if "from_reports" in flags or ("report_summary" in flags and anchor and "current" not in flags):
        # Compiling past reports into a report is a review of the period, not a look-up of them.
        history.discard("retrieval")
        trend.add("from_reports")
        kinds.setdefault(Intent.GENERATE_REPORT, set()).add("from_reports")
    _history_or_trend(history, trend, flags, subject,
                      report=bool(kinds.get(Intent.GENERATE_REPORT, set()) - {"summary"}))
    for intent in (Intent.QUERY_HISTORY, Intent.ANALYZE_TREND):
        if not kinds[intent]:
            del kinds[intent]


def _subject_before_reason(clause: str) -> bool:
    """The clause names a subject before its why-word: the subject is what it is about."""
    subject, why = SUBJECT_ID_RX.search(clause), REASON_RX.search(clause)
    return bool(subject and why and subject.start() < why.start())


def _carry_anchors(clauses: list[str]) -> list[str]:
    """A clause that is only a time anchor ("this year's first half — what were the big decisions",
    "上个月，出了哪些问题") is the topic of the clause after it: it is read with that clause."""
    out: list[str] = []
    carried = ""
    for clause in clauses:
        text = f"{carried} {clause}".strip() if carried else clause
        flags = period_flags(clause)
        if "anchor" in flags and flags <= {"anchor", "past_ref"} and len(clause) <= 40 and clause is not clauses[-1]:
            carried = text
            continue
        carried = ""
        out.append(text)
    return out


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
    6. A message stating standing directives ("以后周报周一发") asks only for what lies outside
       them, if anything (:mod:`agent_memory.chat.intents.directives`).

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
        flags = period_flags(clause)
        data = kinds.get(Intent.QUERY_DATA, set())
        mem = kinds.get(Intent.MEMORY_RECALL, set())
        subject = "subject" in data
        # The "now" marker only reinforces.
        data.discard("current")
        _add_period_intents(kinds, flags, subject)
        _drop_by_context(kinds, flags, subject, medhist="medhist" in data,
                         subject_topic=subject and _subject_before_reason(clause))
        if "told" in mem:
            kinds.pop(Intent.QUERY_HISTORY, None)
        elif mem and any(i in kinds for i in _HISTORY_KINDS):
            kinds.pop(Intent.MEMORY_RECALL, None)
        trend = kinds.get(Intent.ANALYZE_TREND, set())
        report = kinds.get(Intent.GENERATE_REPORT, set())
        if trend == {"long_past_summary"} and Intent.QUERY_HISTORY in kinds:
            # "我们去年讨论过要不要加亚组分析": 分析 names the topic of a past decision.
            kinds.pop(Intent.ANALYZE_TREND, None)
        if (trend or Intent.QUERY_HISTORY in kinds) and report and not (report - {"summary"}):
            # "总结一下去年的入组", "那几周的经验教训总结一下": a summary of the past, not a report.
            kinds.pop(Intent.GENERATE_REPORT, None)
        if report and "retrieval" in kinds.get(Intent.QUERY_HISTORY, set()) and "from_reports" not in trend:
            # Looking up stored weekly reports is not writing one ("把第12周的周报调出来").
            kinds.pop(Intent.GENERATE_REPORT, None)
        if Intent.QC_TASK in kinds and any(i in kinds for i in _HISTORY_KINDS) and "qc_nominal" in flags:
            # QC as the object of a decision or the subject of a trend ("为什么决定每周做质控",
            # "质控发现的问题是不是越来越少") is not a QC task.
            kinds.pop(Intent.QC_TASK, None)
        if any(i in kinds for i in (Intent.QC_TASK, *_HISTORY_KINDS)):
            data.clear()
        if Intent.GENERATE_REPORT in kinds or Intent.MEMORY_RECALL in kinds:
            data.discard("noun_query")
        if not data:
            kinds.pop(Intent.QUERY_DATA, None)
        return [i for i in Intent if kinds.get(i)]

    def classify(self, text: str, *, deadline: float | None = None) -> Classification:
        """Classify ``text`` (``deadline`` is accepted for the Protocol and ignored). A message
        stating standing directives gets the intents of what it asks for now, if anything
        (:func:`~agent_memory.chat.intents.directives.intents_now`); the directives are returned.

        Returns:
            ``Classification(intents=..., source="rules", directives=...)``; ``(GENERAL,)`` when
            nothing matched.
        """
        split = split_directives(text)
        intents = intents_now(split, self.intents_of) if split.statements else self.intents_of(text)
        return Classification(intents=intents, source="rules", directives=split.statements)

    def intents_of(self, text: str) -> tuple[Intent, ...]:
        """The intents of ``text`` by its cues alone (directives not split off)."""
        norm = normalise(text)
        found: list[Intent] = []
        for clause in _carry_anchors(split_clauses(norm)):
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
        return tuple(intents) or (Intent.GENERAL,)

    def history_part(self, text: str) -> str:
        """The part of ``text`` a history context reads its period from when the message also asks
        for a QC run: ``text`` without its QC clauses (a clause asking for QC and nothing of the
        past), so the period of the data to check ("质控一下第10周的数据", "QC last week's CRFs") is
        never taken for the period of the history question beside it. ``text`` itself (normalised)
        when no clause is QC-only, or every clause is.

        The QC context reads no period at all (it has no history, docs/architecture.md, "Intents").
        """
        clauses = split_clauses(normalise(text))
        kept = [c for c in clauses if not _qc_only(self._clause_intents(c))]
        return " ".join(kept) if kept and len(kept) < len(clauses) else normalise(text)


@lru_cache(maxsize=1)
def _rules() -> RuleIntentClassifier:
    return RuleIntentClassifier()


def history_part(text: str) -> str:
    """:meth:`RuleIntentClassifier.history_part` of one shared rule classifier (whichever
    classifier routed the turn: the clauses are told apart by the rules)."""
    return _rules().history_part(text)


def _qc_only(intents: list[Intent]) -> bool:
    """A clause that asks for QC and not about the past."""
    return Intent.QC_TASK in intents and not any(i in intents for i in _HISTORY_KINDS)
