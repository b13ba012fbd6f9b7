"""Session memory of a turn : symptom facts, earlier diagnoses, rolling summary.

Used by the chat turn and by the transcript import alike, so a turn recorded elsewhere updates
the session exactly as a chat turn does:

1. :meth:`SessionMemory.before_turn` / :meth:`SessionMemory.extract` (before any LLM call):
   symptom facts of each user message, the question it answers being the assistant message
   before it (so ``是的`` / ``没有`` resolve against it); on the first turn of a session with
   a patient, the patient's earlier diagnoses (ids, times, key symptoms): those the turn's
   BatchGetItem read (``TurnContext.patient_diagnoses``), else ONE Query (a patient whose
   diagnoses predate the per-patient references, docs/architecture.md, "Request path").
2. :meth:`SessionMemory.apply` (inside the write's optimistic-lock retry loop, on the session
   as just read): folds those facts into the CURRENT facts (another container may have added
   some), keeps them under their byte budget, and rolls the turns that left the prompt's
   recent-turns window into ``session.summary``. It is pure apart from the summariser and a
   rare read of messages the window no longer holds (from the container cache when its version
   matches, else from DynamoDB).

Byte budgets (UTF-8, JSON as stored): facts <= ``FACTS_BUDGET_BYTES``, summary <=
``SUMMARY_BUDGET_BYTES``; with the window's budget the session item stays far under
DynamoDB's 400 KB.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from agent_memory.consultation.summary import SUMMARY_BUDGET_BYTES, ExtractiveSummariser, Summariser
from agent_memory.consultation.symptoms import (
    LLMSymptomExtractor,
    SymptomExtractor,
    SymptomFact,
    merge_facts,
)
from agent_memory.conversation.cache import SessionCache
from agent_memory.conversation.window import TURN_BLOCK, turn_block_of
from agent_memory.domain.session_models import MAX_DIAGNOSIS_REFS, DiagnosisRef, merge_diagnosis_refs
from agent_memory.domain.text import truncate_utf8, utf8_len
from agent_memory.domain.turns import MessageRecord, SessionState
from agent_memory.ports import MessageReader, PatientDiagnoses

#: Byte budget of ``facts`` (symptoms + diagnosis references) in the session item.
FACTS_BUDGET_BYTES = 60_000
#: At most this many symptoms per session (the most recently evidenced are kept).
MAX_SYMPTOMS = 150
#: Evidence message ids kept per symptom: the first two and the newest ones.
MAX_EVIDENCE = 12
#: Messages read back at most to fill a summary gap (the cache's size).
GAP_READ_LIMIT = 50
_PHRASE_BYTES = 120
_NAME_BYTES = 96


@dataclass
class TurnMemory:
    """What a turn adds to the session memory, re-applicable to a re-read session.

    ``fact_updates``: per message written (same order), the facts extracted from it.
    ``diagnosis_refs``: the patient's earlier diagnoses, loaded on the first turn (else None).
    """

    project_id: str
    session_id: str
    time_zone: str
    fact_updates: list[list[SymptomFact]] = field(default_factory=list)
    diagnosis_refs: list[dict[str, Any]] | None = None
    deadline: float | None = None
    _summaries: dict[tuple[str, str, str], str] = field(default_factory=dict, repr=False)


# ------------------------------------------------------------------ facts
def load_symptoms(facts: dict[str, Any] | None) -> list[SymptomFact]:
    """The stored symptom facts (entries that no longer validate are skipped)."""
    out: list[SymptomFact] = []
    for raw in (facts or {}).get("symptoms") or []:
        try:
            out.append(SymptomFact.model_validate(raw))
        except ValueError:
            continue
    return out


def dump_symptoms(facts: Sequence[SymptomFact]) -> list[dict[str, Any]]:
    """JSON form stored in ``facts["symptoms"]``."""
    return [f.model_dump(mode="json") for f in facts]


def fold_facts(current: Sequence[SymptomFact], updates: Sequence[Sequence[SymptomFact]]) -> list[SymptomFact]:
    """Merge each message's facts in order (a later statement updates an earlier one)."""
    facts = list(current)
    for new in updates:
        if new:
            facts = merge_facts(facts, list(new))
    return facts


def cap_facts(
    facts: Sequence[SymptomFact],
    *,
    max_symptoms: int = MAX_SYMPTOMS,
    budget_bytes: int = FACTS_BUDGET_BYTES,
    max_evidence: int = MAX_EVIDENCE,
) -> list[SymptomFact]:
    """Bound the facts: evidence lists (first two + newest), phrase and name bytes, then the
    number of symptoms and their total JSON bytes (the most recently evidenced are kept, in
    their original order)."""
    capped: list[SymptomFact] = []
    for f in facts:
        update: dict[str, Any] = {}
        evidence = list(f.evidence)
        if len(evidence) > max_evidence:
            update["evidence"] = evidence[:2] + evidence[-(max_evidence - 2):]
        phrase = getattr(f, "onset_phrase", None)
        if isinstance(phrase, str) and utf8_len(phrase) > _PHRASE_BYTES:
            update["onset_phrase"] = truncate_utf8(phrase, _PHRASE_BYTES)
        if utf8_len(f.name) > _NAME_BYTES:
            update["name"] = truncate_utf8(f.name, _NAME_BYTES)
        capped.append(f.model_copy(update=update) if update else f)
    sizes = [utf8_len(json.dumps(f.model_dump(mode="json"), ensure_ascii=False)) + 1 for f in capped]
    if len(capped) <= max_symptoms and sum(sizes) <= budget_bytes:
        return capped
    newest_first = sorted(range(len(capped)), key=lambda i: max(capped[i].evidence, default=""), reverse=True)
    keep: set[int] = set()
    used = 0
    for i in newest_first:
        if len(keep) >= max_symptoms:
            break
        if used + sizes[i] > budget_bytes:
            continue
        keep.add(i)
        used += sizes[i]
    return [f for i, f in enumerate(capped) if i in keep]


def _questions_before(messages: Sequence[MessageRecord]) -> list[str | None]:
    """For each message, the content of the latest assistant message before it (or None)."""
    out: list[str | None] = []
    last: str | None = None
    for m in messages:
        out.append(last)
        if m.role == "assistant":
            last = m.content
    return out


#: what stands in the summary for a reply that drew on the history book
HISTORY_REPLY_PLACEHOLDER = "(answered from the project's weekly history)"


def _without_history_text(messages: Sequence[MessageRecord]) -> list[MessageRecord]:
    """``messages`` with the text of replies that drew on the history book replaced by
    :data:`HISTORY_REPLY_PLACEHOLDER`: the rolling summary reaches every context, a QC one
    included, and a QC context carries no history (docs/architecture.md, "Session window")."""
    return [m.model_copy(update={"content": HISTORY_REPLY_PLACEHOLDER}) if m.role == "assistant" and m.history else m
            for m in messages]


def group_turns(messages: Sequence[MessageRecord]) -> list[list[MessageRecord]]:
    """Turns: a user message and the assistant messages after it (leading assistant messages,
    e.g. a doctor's opening line, form a turn of their own)."""
    turns: list[list[MessageRecord]] = []
    for m in messages:
        if m.role == "user" or not turns:
            turns.append([m])
        else:
            turns[-1].append(m)
    return turns


# ----------------------------------------------------------------- memory
@dataclass
class SessionMemory:
    """Symptom extraction, diagnosis references and the rolling summary (see module docstring)."""

    extractor: SymptomExtractor
    summariser: Summariser = field(default_factory=ExtractiveSummariser)
    patients: PatientDiagnoses | None = None
    reader: MessageReader | None = None
    recent_turns: int = 10
    summary_budget_bytes: int = SUMMARY_BUDGET_BYTES
    turn_block: int = TURN_BLOCK

    # ------------------------------------------------------ before the LLM
    def extract(
        self,
        messages: Sequence[MessageRecord],
        *,
        prior: Sequence[MessageRecord],
        time_zone: str,
        deadline: float | None = None,
    ) -> list[list[SymptomFact]]:
        """Facts of each user message of ``messages`` (``[]`` for assistant messages).

        The question a message answers is the latest assistant message before it, in
        ``prior`` (the window as read) followed by ``messages``; ``at_local`` is its time in
        the project's zone (relative dates resolve against the local day). The LLM
        extractor gets the turn's ``deadline`` (it answers with the rules when time is short).
        """
        zone = ZoneInfo(time_zone)
        sequence = [*prior, *messages]
        questions = _questions_before(sequence)[len(prior):]
        out: list[list[SymptomFact]] = []
        for m, question in zip(messages, questions, strict=True):
            if m.role != "user" or not m.content.strip():
                out.append([])
                continue
            at_local = m.at.astimezone(zone)
            if isinstance(self.extractor, LLMSymptomExtractor):
                facts = self.extractor.extract(m.content, message_id=m.message_id, at_local=at_local,
                                               question=question, deadline=deadline)
            else:
                facts = self.extractor.extract(m.content, message_id=m.message_id, at_local=at_local,
                                               question=question)
            out.append(list(facts))
        return out

    def before_turn(
        self,
        session: SessionState,
        user_msg: MessageRecord,
        *,
        patient_id: str | None,
        time_zone: str,
        deadline: float | None = None,
        known_refs: Sequence[DiagnosisRef] | None = None,
    ) -> tuple[SessionState, TurnMemory]:
        """Facts of the user's message (and, on a patient's first turn, the earlier diagnoses)
        merged into a copy of ``session`` for the prompt, plus what to apply at write time.

        ``known_refs``: the patient's earlier diagnoses as the turn's read returned them
        (``TurnContext.patient_diagnoses``); None = not read (queried when needed)."""
        prior = list(session.window)
        ids = [m.message_id for m in prior]
        if user_msg.message_id in ids:  # a retried failed message: its question came before it
            prior = prior[: ids.index(user_msg.message_id)]
        turn = TurnMemory(
            project_id=session.project_id, session_id=session.session_id, time_zone=time_zone, deadline=deadline,
            fact_updates=self.extract([user_msg], prior=prior, time_zone=time_zone, deadline=deadline),
        )
        turn.diagnosis_refs = self.load_diagnosis_refs(session, patient_id, known_refs=known_refs)
        return self.preview(session, turn), turn

    def load_diagnosis_refs(
        self, session: SessionState, patient_id: str | None, *, known_refs: Sequence[DiagnosisRef] | None = None,
    ) -> list[dict[str, Any]] | None:
        """On the first turn of a patient's session (no messages, references never loaded):
        the patient's newest diagnoses as JSON references, ``known_refs`` when the caller read
        them, else ONE lookup (``PatientDiagnoses.patient_diagnosis_refs``). Otherwise None
        (nothing to add)."""
        patient = session.patient_id or patient_id
        if not patient or session.message_count or "diagnoses" in (session.facts or {}):
            return None
        if known_refs is not None:
            refs = list(known_refs)
        elif self.patients is not None:
            refs = self.patients.patient_diagnosis_refs(session.project_id, patient, limit=MAX_DIAGNOSIS_REFS)
        else:
            return None
        return [r.model_dump(mode="json") for r in refs]

    def preview(self, session: SessionState, turn: TurnMemory) -> SessionState:
        """``session`` with the turn's facts and diagnosis references merged (for the prompt)."""
        return session.model_copy(update={"facts": self._facts(session.facts, turn)})

    # --------------------------------------------------------- at write time
    def apply(
        self,
        current: SessionState,
        updated: SessionState,
        turn: TurnMemory,
        *,
        full_window: Sequence[MessageRecord],
        cache: SessionCache | None = None,
    ) -> SessionState:
        """``updated`` (window appended and trimmed) with facts folded into ``current``'s and
        the summary rolled forward over the turns that left the recent-turns window."""
        facts = self._facts(current.facts, turn)
        summary, through = self._roll_summary(current, updated, full_window, facts, turn, cache)
        if through is not None:
            facts["summary_through"] = through
        return updated.model_copy(update={"facts": facts, "summary": summary})

    def _facts(self, stored: dict[str, Any] | None, turn: TurnMemory) -> dict[str, Any]:
        facts = dict(stored or {})
        symptoms = cap_facts(fold_facts(load_symptoms(facts), turn.fact_updates))
        facts["symptoms"] = dump_symptoms(symptoms)
        if turn.diagnosis_refs is not None and "diagnoses" not in facts:
            facts["diagnoses"] = merge_diagnosis_refs([], turn.diagnosis_refs)
        return facts

    def _roll_summary(
        self,
        current: SessionState,
        updated: SessionState,
        full_window: Sequence[MessageRecord],
        facts: dict[str, Any],
        turn: TurnMemory,
        cache: SessionCache | None,
    ) -> tuple[str, str | None]:
        """(summary, last message id it covers) after this write.

        Summarised now, while the pre-trim window still holds them: the messages before the
        first turn of the replay block (``turn_block_of``) holding the ``recent_turns``-th newest
        user message (the next prompt replays every turn from that block's first turn on; a failed
        message waiting for its retry counts, so it is not summarised) and any message the window's
        trim drops (by turn count or by bytes), after the last summarised one. So the summary moves
        only when the replay's first turn does (once every ``turn_block`` turns: the block holding
        it stays cacheable, docs/architecture.md, "Prompt caching"), a turn is never left out of
        both, and a message is always summarised before the window drops it; only a session whose
        early messages were dropped before it had any summary (``summary_through`` unset) has a
        gap to read back.
        """
        through = (current.facts or {}).get("summary_through")
        through = through if isinstance(through, str) else None
        ids = [m.message_id for m in full_window]
        horizon = max(self._replay_start(current, full_window), len(full_window) - len(updated.window))
        gap: list[MessageRecord] = []
        if through in ids:
            start = ids.index(through) + 1
        else:
            start = 0
            if through is None:
                gap = self._gap(current, full_window, turn, cache)
        dropped = [*gap, *full_window[start:horizon]]
        if not dropped:
            return current.summary, through
        key = (str(through), dropped[0].message_id, dropped[-1].message_id)
        if key not in turn._summaries:
            turn._summaries[key] = self.summariser.summarise(
                current.summary, group_turns(_without_history_text(dropped)), facts.get("symptoms") or [],
                time_zone=turn.time_zone, budget_bytes=self.summary_budget_bytes, deadline=turn.deadline,
            )
        return turn._summaries[key], dropped[-1].message_id

    def _replay_start(self, current: SessionState, full_window: Sequence[MessageRecord]) -> int:
        """Index in ``full_window`` of the first user message of the replay block holding its
        ``recent_turns``-th newest user message (0 with fewer; ``len(full_window)`` with
        ``recent_turns == 0``). Messages are numbered as the prompt numbers them: the window's
        first is message ``message_count - len(window)`` of the session."""
        users = [i for i, m in enumerate(full_window) if m.role == "user"]
        if not self.recent_turns:
            return len(full_window)
        if self.recent_turns > len(users):
            return 0
        first = max(0, current.message_count - len(current.window))
        block = turn_block_of(first + users[-self.recent_turns], self.turn_block)
        return next(i for i in users if turn_block_of(first + i, self.turn_block) >= block)

    def _gap(
        self,
        current: SessionState,
        full_window: Sequence[MessageRecord],
        turn: TurnMemory,
        cache: SessionCache | None,
    ) -> list[MessageRecord]:
        """Messages the stored window no longer holds although no summary covers them (a
        session older than the summary). From the container cache when it is at the session's
        version and holds them, else read from DynamoDB (the newest ``GAP_READ_LIMIT``)."""
        if current.message_count <= len(current.window) or not full_window:
            return []
        first = full_window[0].message_id
        if cache is not None:
            cached = cache.get(turn.project_id, turn.session_id, current.version)
            if cached is not None:
                ids = [m.message_id for m in cached]
                if first in ids and len(cached) >= current.message_count:
                    return cached[: ids.index(first)]
        if self.reader is None:
            return []
        return self.reader.messages_between(
            turn.project_id, turn.session_id, after_id=None, before_id=first, limit=GAP_READ_LIMIT
        )


__all__ = [
    "FACTS_BUDGET_BYTES",
    "MAX_DIAGNOSIS_REFS",
    "MAX_SYMPTOMS",
    "MessageReader",
    "PatientDiagnoses",
    "SessionMemory",
    "TurnMemory",
    "cap_facts",
    "dump_symptoms",
    "fold_facts",
    "group_turns",
    "load_symptoms",
    "merge_diagnosis_refs",
]
