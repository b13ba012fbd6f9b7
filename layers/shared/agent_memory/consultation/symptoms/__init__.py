"""
Every patient turn (chat or imported transcript) is run through a :class:`SymptomExtractor`; its
facts are folded into the session's facts with :func:`merge_facts`, and :func:`facts_block` renders
them for the prompt's session block.

Two extractors behind one port:

- :class:`RuleSymptomExtractor` - offline and deterministic (rules in
  :mod:`.rules`, dates in :mod:`.dates`): lexicon
  normalisation, scope-aware Chinese/English negation, trend, onset, and short answers resolved
  against the doctor's question (Q ``孩子现在打喷嚏吗?`` A ``没有`` -> 打喷嚏 denied).
- :class:`LLMSymptomExtractor` - Claude with a structured output (one JSON document); falls back
  to the rules on any error, truncation (``stop_reason == "max_tokens"``), refusal, missing text,
  invalid JSON or invalid output - nothing of a partial answer is used. Onset DATES are always computed in code
  from the phrase the model quotes: a date the model writes itself is never stored.

Decisions (documented here because callers rely on them):

- ``status`` is ``present`` or ``denied``. A symptom that resolved (退烧了 / 不烧了 / 咳嗽好了)
  stays ``present`` with ``trend="improving"``; only an explicit denial (没有发烧 / 不再咳嗽 /
  denies fever) records ``denied``.
- ``onset`` is an ISO date in the project's time zone: the day named, or the FIRST day of a
  range (``上周起`` -> ``onset="2026-03-02"``, ``onset_range=("2026-03-02", "2026-03-08")``,
  ``onset_approximate=True``), so the earliest-onset rule of :func:`merge_facts` compares like
  with like. Denied facts carry no onset from their message.
- Names are the lexicon's normalised names (its keys are the DXY label vocabulary, extended by
  ``symptom_lexicon_extra.json`` with TCM / adult complaints such as 怕冷, 无汗, 乏力, 口干).

Nothing here logs message text."""

from agent_memory.consultation.symptoms.answers import RuleSymptomExtractor
from agent_memory.consultation.symptoms.facts import SymptomExtractor, SymptomFact, facts_block, merge_facts
from agent_memory.consultation.symptoms.llm import (
    TASK,
    LLMSymptomExtractor,
    SymptomItem,
    SymptomOutput,
    canonical_name,
)

__all__ = [
    "TASK",
    "LLMSymptomExtractor",
    "RuleSymptomExtractor",
    "SymptomExtractor",
    "SymptomFact",
    "SymptomItem",
    "SymptomOutput",
    "canonical_name",
    "facts_block",
    "merge_facts",
]
