"""Durable statements in user messages: the offline rule extractor of the daily distillation.

Only what a user states as a standing instruction, a current state or a lesson becomes memory;
what counts as a statement (and what never does) is in
:mod:`agent_memory.hot_memory.statement_finder`, the word families in
:mod:`agent_memory.hot_memory.statement_lexicon`, sentence cutting and line cleaning in
:mod:`agent_memory.hot_memory.sentences`, and the statements relaxing the admin's System Rules in
:mod:`agent_memory.hot_memory.relaxation`. This module turns the statements of the day's user
messages into merge candidates. A withdrawal ("早上说的那个…先不要了", "never mind the …")
becomes a ``withdraw`` candidate.

Sections by meaning: a lesson cue in the message (教训 / 坑 / lesson) -> Lessons Learned; a note
about the project's state, the current focus or a risk -> Active Context; else User Preferences,
with the scope its sentence names (:mod:`agent_memory.hot_memory.scope`: a role as its audience,
the speaker alone, everyone), else the speaker's study role from the flow-log record.
Deterministic and offline; nothing is logged.

The names callers import from here (:func:`find_statements`, :func:`directive_parts`,
:func:`relaxes_system_rules`, ``ACT_NOW`` ...) are re-exported from the modules above.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent_memory.domain.feedback import FEEDBACK_SOURCE
from agent_memory.domain.jobs import Candidate, FlowLogEntry
from agent_memory.hot_memory.analysis import SUBJECT_ID, language_of, nfkc
from agent_memory.hot_memory.directive_parts import directive_parts, find_statement
from agent_memory.hot_memory.feedback_reasons import feedback_preference
from agent_memory.hot_memory.guards import relaxed_concepts
from agent_memory.hot_memory.relaxation import relaxation_probe, relaxes_system_rules
from agent_memory.hot_memory.scope import preference_scope
from agent_memory.hot_memory.sentences import clean_statement, split_statements
from agent_memory.hot_memory.statement_finder import FoundStatement, find_statements
from agent_memory.hot_memory.statement_lexicon import ACT_NOW, CHANGE, CONTINUE, FOCUS, IMPERATIVE, LESSON, RISK, STATE

#: a statement about a risk (its head: "风险：…", "现在的风险是…", "the main risk is …"), not an
#: instruction that mentions risks ("跟我汇报时先讲风险")
_RISK_HEAD = re.compile(
    r"^\W*(?:现在|当前|目前|主要|最大|新)?的?风险|风险\s*[:：是为]|"
    r"\b(?:the )?(?:main |biggest |current |new )?risks? (?:is|are|now)\b|^\W*risks?\s*[:：]", re.IGNORECASE)


def classify_section(text: str, *, kind: str = "durable", hint: str | None = None) -> str:
    """``Lessons Learned`` (a lesson cue), ``Active Context`` (a note about the project's state, the
    current focus or a risk) or ``User Preferences`` (instructions on how to work).

    Args:
        text: the statement's text.
        kind: the :class:`~agent_memory.hot_memory.statement_finder.FoundStatement` kind; a
            ``remember`` about a subject or without an imperative, and every ``note``, is context.
        hint: a section already known (a lesson cue in the message), returned as it is.
    """
    if hint:
        return hint
    norm = nfkc(text)
    if LESSON.search(norm):
        return "Lessons Learned"
    if kind == "remember" and (SUBJECT_ID.search(norm) or not IMPERATIVE.search(norm)):
        return "Active Context"
    if kind == "note" and _EVERY_TIME_RULE.search(norm) and not SUBJECT_ID.search(norm):
        return "User Preferences"  # a rule noted down ("记一下：SAE 表格每次都要双人核对后再交")
    if kind == "note" or FOCUS.search(norm[:12]) or _RISK_HEAD.search(norm[:12]) or (
            kind == "change" and (FOCUS.search(norm) or RISK.search(norm))):
        return "Active Context"
    if STATE.search(_QUOTED.sub("", norm)) and not CONTINUE.match(norm):
        return "Active Context"  # not a state word inside a quoted label ("把“已回复待关闭”的单独拉出来")
    return "User Preferences"


#: a quoted label or value ("“已回复待关闭”"): its words say nothing about the project's state
_QUOTED = re.compile(r"[“\"「『‘][^”\"」』’]{0,40}[”\"」』’]")


#: a rule that holds each time ("每次都要…", "一律…", "always …"): a noted rule is an instruction
_EVERY_TIME_RULE = re.compile(r"每次都|每次必须|一律|务必每|\balways\b|\bevery time\b", re.IGNORECASE)


#: a line that already names its kind ("风险：…", "Current focus: …")
_LABELLED = re.compile(r"^\s*(?:风险|当前重点|risk|current focus)\s*[:：]", re.IGNORECASE)


def _label(text: str, section: str, kind: str) -> str:
    """Active Context lines name their kind: ``当前重点：`` / ``风险：`` (or Current focus / Risk)."""
    if section != "Active Context" or kind != "change" or _LABELLED.match(text):
        return text
    zh = language_of(text) == "zh"
    m = CHANGE.search(text)
    value = text[m.end():].strip() if m else text
    if FOCUS.search(text[: m.start()] if m else text):
        return ("当前重点：" if zh else "Current focus: ") + value
    if RISK.search(text[: m.start()] if m else text):
        return ("风险：" if zh else "Risk: ") + value
    return text


def extract_rule_candidates(messages: Sequence[FlowLogEntry]) -> list[Candidate]:
    """The rule extractor: the statements of the USER messages, one candidate each.

    Assistant messages are skipped (the assistant's own words never become memory). Each
    candidate cites the message it came from, carries its time (``stated_at``) and, for a
    preference, the speaker's study role from the flow-log record. A sentence naming the rules
    and asking to relax them (a question included) becomes a probe too.

    A message stating nothing durable that relaxes a safeguard by meaning, or names the rules and
    asks to relax them, becomes a ``relaxation_probe``
    (:func:`~agent_memory.hot_memory.relaxation.relaxation_probe`): held for review
    when a System Rule is relaxed, else dropped.

    A feedback event (``source == "feedback"``: a down-vote's reason, evidence = the rated
    answer) is the rater's implicit "from now on, answer like this": a directive in it is found
    as in any message, else the preference its complaint states
    (:func:`~agent_memory.hot_memory.feedback_reasons.feedback_preference`) becomes a User
    Preferences candidate; a bare judgement ("wrong") gives none, and a reason touching a
    safeguard that states no preference is still proposed, so the guards queue it for review.
    """
    out: list[Candidate] = []
    for m in messages:
        if m.role != "user":
            continue
        found = find_statements(m.content)
        if m.source == FEEDBACK_SOURCE:
            found = [f for f in found if f.kind != "withdraw"]
            preference = None if found else feedback_preference(m.content)
            if preference is not None:
                found = [FoundStatement(preference, "durable", "User Preferences")]
            elif not found and relaxed_concepts(m.content, asks_output=True):
                # unsure whether it asks for what a rule forbids: the guards queue it for review
                found = [FoundStatement(clean_statement(m.content), "durable", "User Preferences")]
        for position, f in enumerate(found):
            section = classify_section(f.text, kind=f.kind, hint=f.section_hint)
            text = _label(f.text, section, f.kind)
            out.append(Candidate(
                text=text if f.kind != "withdraw" else clean_statement(f.text),
                section=section,
                role_tag=m.study_role if section == "User Preferences" else None,
                evidence=[m.message_id],
                origin="rules",
                order=(_order_key(m), position),
                kind="withdraw" if f.kind == "withdraw" else ("change" if f.kind == "change" else "statement"),
                stated_at=m.at,
                speaker=m.user_id,
                scope=_scope_name(f.sentence) if section == "User Preferences" else None,
            ))
        probe = None if found else relaxation_probe(m.content)
        if probe is not None:
            out.append(Candidate(
                text=probe, section="User Preferences", role_tag=m.study_role, evidence=[m.message_id],
                origin="rules", order=(_order_key(m), 0), kind="relaxation_probe", stated_at=m.at, speaker=m.user_id,
                scope=_scope_name(probe),
            ))
    return out


def _scope_name(sentence: str) -> str | None:
    """The ``Candidate.scope`` of a preference stated in ``sentence`` (None: none named)."""
    scope = preference_scope(sentence)
    if scope is None:
        return None
    return scope.role if scope.kind == "role" else scope.kind


def _order_key(m: FlowLogEntry) -> str:
    return f"{m.at.isoformat()}#{m.message_id}"


__all__ = [
    "ACT_NOW",
    "classify_section",
    "directive_parts",
    "extract_rule_candidates",
    "find_statement",
    "find_statements",
    "relaxes_system_rules",
    "split_statements",
]
