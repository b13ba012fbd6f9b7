"""The offline, deterministic symptom extractor: lexicon mentions, negation, trend and onset from
:mod:`agent_memory.consultation.symptoms.rules`, and short answers resolved against the doctor's
question (Q ``孩子现在打喷嚏吗?`` A ``没有`` -> 打喷嚏 denied).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any, Literal

from agent_memory.consultation.symptoms.dates import ResolvedDate
from agent_memory.consultation.symptoms.facts import (
    SymptomFact,
    Trend,
)
from agent_memory.consultation.symptoms.rules import (
    Mention,
    MessageAnalysis,
    analyse,
    find_mentions,
    mentions_negation,
    normalise,
    trend_matches,
)

# --------------------------------------------------------------------------------------
# Rule extractor
# --------------------------------------------------------------------------------------

_SHORT_YES = frozenset({
    "是", "是的", "是啊", "是呀", "对", "对的", "对啊", "有", "有的", "有啊", "有呀", "嗯", "嗯嗯", "恩", "恩恩",
    "存在", "有过", "出现过", "发现了", "确实", "确实有", "有点", "有一点", "有些", "偶尔", "会", "会的", "经常",
    "yes", "yeah", "yep", "yup", "correct", "right", "sure", "sometimes", "a little", "he does", "she does",
    "it does", "yes he does", "yes she does", "yes it does",
})
_SHORT_NO = frozenset({
    "不是", "不是的", "没有", "没", "没有的", "无", "不", "否", "没有过", "不存在", "没发现", "没有发现", "不会",
    "没呢", "还没有", "从来没有", "从没有", "没有啊", "没有呀", "不是啊",
    "no", "nope", "not really", "none", "never", "no he doesn't", "no she doesn't", "he doesn't", "she doesn't",
    "no it doesn't", "no he does not", "no she does not",
})
_SHORT_RESOLVED = frozenset({"没有了", "没了", "不了", "好了", "好多了", "退了", "not anymore", "no longer"})
_LEADING = re.compile(
    r"^\s*(是的|是啊|是|对的|对|有的|有|嗯+|恩+|没有|没|不是|不存在|不|无|否|yes|yeah|yep|no|nope)\s*(?=[,;。.!?]|$)"
)
_UNSURE = re.compile(
    r"不知道|不清楚|不确定|不记得|记不清|说不好|不好说|不太清楚|没注意|没留意|没在意|不一定|"
    r"not sure|don't know|do not know|unsure|no idea|can't tell|cannot tell"
)
_ASKS = re.compile(r"[?]|吗|么|呢|是否|有没有|存不存在|是不是|会不会|多久|什么时候|几天|how|did|does|do |is |are |any ")
_YES_WORDS = re.compile(r"有|是|对|嗯|恩|存在|出现|发现|确实|偶尔|经常|(?<![a-z])(?:yes|yeah|yep|sometimes)(?![a-z])")
_PUNCT = re.compile(r"[\s,;。.!?~…、:'\"()]+")


def _strip(s: str) -> str:
    return _PUNCT.sub("", s) if not re.search(r"[a-z]", s) else _PUNCT.sub(" ", s).strip()


def _iso(d: date) -> str:
    return d.isoformat()


def onset_fields(resolved: ResolvedDate | None, phrase: str | None) -> dict[str, Any]:
    if resolved is None:
        return {}
    return {
        "onset": _iso(resolved.start),
        "onset_approximate": resolved.approximate,
        "onset_range": (_iso(resolved.start), _iso(resolved.end)) if resolved.is_range else None,
        "onset_phrase": phrase,
    }


def _facts_from_mentions(mentions: Sequence[Mention], message_id: str) -> list[SymptomFact]:
    """One fact per name: present if any mention is present; a denial after the last present
    mention means it resolved (improving); the last mention's trend; the earliest onset."""
    order: list[str] = []
    per_name: dict[str, list[Mention]] = {}
    for m in sorted(mentions, key=lambda m: m.start):
        for name in m.names:
            if name not in per_name:
                order.append(name)
                per_name[name] = []
            per_name[name].append(m)
    facts = []
    for name in order:
        ms = per_name[name]
        present = [m for m in ms if m.status == "present"]
        if not present:
            facts.append(SymptomFact(name=name, status="denied", evidence=[message_id]))
            continue
        last_present = present[-1]
        # 之前发烧，现在没有发烧: the same words denied later in the message -> it resolved.
        later_denial = any(
            m.status == "denied" and m.start > last_present.start and m.surface == last_present.surface for m in ms
        )
        trend: Trend | None = last_present.trend
        if later_denial and trend is None:
            trend = "improving"
        dated = [(m.onset, m.onset_phrase) for m in present if m.onset is not None]
        fields = onset_fields(*min(dated, key=lambda d: d[0].start)) if dated else {}
        gone = later_denial or last_present.resolved
        facts.append(SymptomFact(name=name, status="present", trend=trend, resolved=gone, evidence=[message_id],
                                 **fields))
    return facts


def _question_names(question: str) -> tuple[list[str], Trend | None]:
    """Symptom names a doctor's question asks about (only when it reads as a question), and the
    trend it asks about (头痛加重了吗), if any."""
    q = normalise(question)
    if not _ASKS.search(q):
        return [], None
    # The asking sentence: the last one with a question marker.
    sentences = [s for s in re.split(r"(?<=[。!?;\n])", q) if s.strip()]
    asking = [s for s in sentences if _ASKS.search(s)]
    target = asking[-1] if asking else q
    mentions = find_mentions(target)
    names: list[str] = []
    for m in mentions:
        for n in m.names:
            if n not in names:
                names.append(n)
    trends = trend_matches(target, mentions)
    return names, (trends[0][2] if trends else None)


def _answer_polarity(norm: str, has_mentions: bool) -> Literal["yes", "no", "resolved"] | None:
    """How a patient's answer answers a yes/no question (None: it does not)."""
    if _UNSURE.search(norm):
        return None
    if has_mentions:
        lead = _LEADING.match(norm)
        if not lead:
            return None
        word = lead.group(1)
        if word in ("没有", "没", "不是", "不存在", "不", "无", "否", "no", "nope"):
            return "no"
        return "yes"
    short = _strip(norm)
    if short in _SHORT_RESOLVED:
        return "resolved"
    if short in _SHORT_NO:
        return "no"
    if short in _SHORT_YES:
        return "yes"
    lead = _LEADING.match(norm)
    if lead:
        return "no" if lead.group(1) in ("没有", "没", "不是", "不存在", "不", "无", "否", "no", "nope") else "yes"
    if len(short) > 24:
        return None
    # A short restatement without the symptom word: 孩子现在没有 / 宝宝有过 / 昨天开始的.
    if mentions_negation(short):
        return "resolved" if re.search(r"(?:没有|没|不)了$", short) else "no"
    if _YES_WORDS.search(short):
        return "yes"
    return None


class RuleSymptomExtractor:
    """Offline, deterministic extractor (see :mod:`agent_memory.consultation.symptoms.rules` for the rules)."""

    def extract(
        self, text: str, *, message_id: str, at_local: datetime, question: str | None = None
    ) -> list[SymptomFact]:
        """Facts of one patient message; see :class:`SymptomExtractor`."""
        analysis = analyse(text, at_local)
        facts = _facts_from_mentions(analysis.mentions, message_id)
        if question:
            facts.extend(self._answer_facts(analysis.norm, analysis, facts, message_id, question))
        return facts

    @staticmethod
    def _answer_facts(
        norm: str,
        analysis: MessageAnalysis,
        facts: list[SymptomFact],
        message_id: str,
        question: str,
    ) -> list[SymptomFact]:
        """Facts for the symptoms the doctor's ``question`` names that the answer does not
        restate: a short yes / no (是的 / 没有 / 不是 / yes / no), a resolution (没有了), or a
        bare time or trend (昨天开始的 / 好多了) answers for them."""
        names, asked_trend = _question_names(question)
        stated = {f.name for f in facts}
        pending = [n for n in names if n not in stated]
        if not pending:
            return []
        polarity = _answer_polarity(norm, has_mentions=bool(analysis.mentions))
        if polarity is None:
            # An answer with only a time or a trend still confirms: Q 发烧吗 A 昨天开始的.
            if analysis.mentions or (not analysis.dated and not analysis.trends):
                return []
            polarity = "yes"
        if polarity == "no":
            if asked_trend is not None:
                return []  # Q 头痛加重了吗 A 没有: not worse, not "no headache".
            return [SymptomFact(name=n, status="denied", evidence=[message_id]) for n in pending]
        trend: Trend | None = "improving" if polarity == "resolved" else None
        if analysis.trends:
            trend = analysis.trends[-1][2]
        elif polarity == "yes" and asked_trend is not None:
            trend = asked_trend
        fields: dict[str, Any] = {}
        if analysis.dated and trend is None:
            _s, _e, phrase, resolved = min(analysis.dated, key=lambda d: d[3].start)
            fields = onset_fields(resolved, phrase)
        return [
            SymptomFact(name=n, status="present", trend=trend, evidence=[message_id], **fields) for n in pending
        ]
