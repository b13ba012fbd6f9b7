"""Intent classification and the retrieval plan it drives.

A message may carry several intents. Two classifiers sit behind one Protocol
(:class:`IntentClassifier`):

- :class:`RuleIntentClassifier`: deterministic and offline; Chinese and English. It is built
  from *families* of cue patterns (each with a note saying what kind of wording it catches),
  plus a few resolution rules for the known traps, never from sample sentences.
- :class:`LLMIntentClassifier`: Claude through the LLM port with a structured output (a JSON
  document, :mod:`agent_memory.structured`); falls back to the rules on any failure (error,
  truncation, refusal, no text, invalid JSON or output), counted as ``LLMFallback``.

:func:`plan_calls` turns the intents into one or two calls: the history book is loaded only
for a history intent, and a QC task never sees history.

Nothing here logs message text.
"""

from agent_memory.chat.intents.cues import Cue, normalise, split_clauses
from agent_memory.chat.intents.llm import SYSTEM_PROMPT, TASK, IntentOutput, LLMIntentClassifier
from agent_memory.chat.intents.plan import (
    CallPlan,
    Classification,
    ClassificationSource,
    IntentClassifier,
    plan_calls,
)
from agent_memory.chat.intents.rules import RuleIntentClassifier, history_part

__all__ = [
    "SYSTEM_PROMPT",
    "TASK",
    "CallPlan",
    "Classification",
    "ClassificationSource",
    "Cue",
    "IntentClassifier",
    "IntentOutput",
    "LLMIntentClassifier",
    "RuleIntentClassifier",
    "history_part",
    "normalise",
    "plan_calls",
    "split_clauses",
]
