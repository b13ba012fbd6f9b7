"""Intents of a message and the calls they plan: history only for a history intent, a QC task
never with history (docs/architecture.md, "Intents").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from agent_memory.domain.llm import Usage
from agent_memory.domain.models import HISTORY_INTENTS, Intent

ClassificationSource = Literal["rules", "llm", "rules_fallback"]


@dataclass(frozen=True)
class Classification:
    """The intents of one message.

    Attributes:
        intents: the intents, deduplicated, in a stable order (never empty; ``(GENERAL,)``
            when nothing specific was found).
        source: ``"rules"`` (rule classifier), ``"llm"`` (LLM classifier) or
            ``"rules_fallback"`` (the LLM classifier failed and the rules answered).
        fallback_reason: short machine-readable reason when ``source == "rules_fallback"``
            (e.g. ``"truncated"``, ``"llm_error:LLMUnavailable"``); never message text.
        usage: tokens of the LLM call when one answered (also a failed answer); None for the
            rules or when the call itself failed.
        directives: the standing directives the message states ("以后周报周一发"), as the
            distiller words them: the turn acknowledges them and leaves them to the distillation
            (:mod:`agent_memory.chat.intents.directives`); their words make no intent.
    """

    intents: tuple[Intent, ...]
    source: ClassificationSource
    fallback_reason: str | None = None
    usage: Usage | None = None
    directives: tuple[str, ...] = ()


class IntentClassifier(Protocol):
    """Port: classify one user message into intents."""

    def classify(self, text: str, *, deadline: float | None = None) -> Classification:
        """Return the message's intents.

        Args:
            text: the user message (any language; never logged).
            deadline: ``time.monotonic()`` value by which an answer is needed (used by
                classifiers that call out; the rule classifier ignores it).
        """
        ...


@dataclass(frozen=True)
class CallPlan:
    """One model call of a turn: the intents it serves and whether the history book
    (weekly reports) is loaded into its prompt."""

    intents: tuple[Intent, ...]
    load_history: bool
    #: the intents the other call(s) of the same message serve (a QC + history message split in
    #: two): this call does only its own part, the other part is answered beside it
    others: tuple[Intent, ...] = ()


def dedupe_intents(intents: Iterable[Intent]) -> tuple[Intent, ...]:
    return tuple(dict.fromkeys(intents))


def plan_calls(intents: Sequence[Intent]) -> list[CallPlan]:
    """Split a message's intents into calls.

    - History is loaded only when a history intent (``QUERY_HISTORY`` / ``ANALYZE_TREND``,
      :data:`HISTORY_INTENTS`) is present.
    - A ``QC_TASK`` never sees history ("质控必须基于当下的事实"): when QC and a history intent
      are both present, two plans are returned - first the QC part (QC plus every other
      non-history intent, ``load_history=False``), then the history part (the history intents,
      ``load_history=True``), each naming the other's intents (``others``). Two sub-turns, not one
      context with both: a context that holds the history book (or a recent turn drawing on it)
      would be a QC context with history, and the history part keeps its period (the turn reads
      it from the message without its QC clauses, ``rules.history_part``).
    - Otherwise one plan with all the intents. Empty input gives one ``GENERAL`` plan.

    Args:
        intents: the classified intents (duplicates are ignored, order kept).

    Returns:
        One or two :class:`CallPlan` objects, in the order they should run.
    """
    unique = dedupe_intents(intents)
    if not unique:
        return [CallPlan(intents=(Intent.GENERAL,), load_history=False)]
    history = tuple(i for i in unique if i in HISTORY_INTENTS)
    if history and Intent.QC_TASK in unique:
        rest = tuple(i for i in unique if i not in HISTORY_INTENTS)
        return [CallPlan(intents=rest, load_history=False, others=history),
                CallPlan(intents=history, load_history=True, others=rest)]
    return [CallPlan(intents=unique, load_history=bool(history))]
