"""Intent classification and the retrieval plan it drives.

A message may carry several intents. Two classifiers sit behind one Protocol
(:class:`IntentClassifier`):

- :class:`RuleIntentClassifier`: deterministic and offline; Chinese and English. It is built
  from *families* of cue patterns (each with a note saying what kind of wording it catches),
  plus a few resolution rules for the known traps, never from sample sentences.
- :class:`LLMIntentClassifier`: Claude through the LLM port with a forced tool call; falls back
  to the rules on any failure (error, truncation, missing or invalid tool input).

:func:`plan_calls` turns the intents into one or two calls: the history book is loaded only
for a history intent, and a QC task never sees history.

Nothing here logs message text.
"""

from agent_memory.chat.intents.cues import Cue, normalise, split_clauses
from agent_memory.chat.intents.llm import INTENT_TOOL, SYSTEM_PROMPT, TOOL_NAME, LLMIntentClassifier
from agent_memory.chat.intents.plan import (
    CallPlan,
    Classification,
    ClassificationSource,
    IntentClassifier,
    plan_calls,
)
from agent_memory.chat.intents.rules import RuleIntentClassifier

__all__ = [
    "INTENT_TOOL",
    "SYSTEM_PROMPT",
    "TOOL_NAME",
    "CallPlan",
    "Classification",
    "ClassificationSource",
    "Cue",
    "IntentClassifier",
    "LLMIntentClassifier",
    "RuleIntentClassifier",
    "normalise",
    "plan_calls",
    "split_clauses",
]
