"""Pure operations on the hot-memory document: merging distilled candidates, validating and
building compactions (the daily distillation and the pruning job apply them).

Invariants every function here keeps:
- admin lines are never changed, moved out or removed by the AI (byte-identical);
- every line knows where it came from (``source``, ``created_by``, ``created_at``, ``evidence``);
- nothing is clipped: a result over the token cap is rejected as a whole.
No I/O: callers read and save through the repository.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import get_args

from agent_memory.domain.feedback import FEEDBACK_SOURCE
from agent_memory.domain.jobs import AI_SECTIONS, SYSTEM_RULES, Candidate, FlowLogEntry, ReviewItem
from agent_memory.domain.models import HotMemory, HotMemoryLine, StudyRole
from agent_memory.domain.text import estimate_tokens
from agent_memory.hot_memory.amend import Amendment, amendment, kept_details
from agent_memory.hot_memory.analysis import (
    SUBJECT_ID,
    Analysis,
    analyse,
    changes_value,
    conflicts,
    is_duplicate,
    languages_present,
    names_other_sites,
    nfkc,
    restates_value,
    subject_grams,
)
from agent_memory.hot_memory.compaction import Compaction, build_llm_compaction, compact_offline, validate_compaction
from agent_memory.hot_memory.document import stable_id
from agent_memory.hot_memory.feedback_reasons import feedback_preference
from agent_memory.hot_memory.guards import names_rules, reinforced_rule, relaxed_rules
from agent_memory.hot_memory.relaxation import does_what_rule_forbids, relaxation_probe, rules_relaxed_by
from agent_memory.hot_memory.scope import preference_scope
from agent_memory.hot_memory.speaker_lines import (
    PREFERENCES as _PREFERENCES,
)
from agent_memory.hot_memory.speaker_lines import (
    changed_mind,
    sole_value_line,
    speaker_own_subject,
    speaker_role_subject,
)
from agent_memory.hot_memory.statement_lexicon import ACT_NOW, BACK_REFERENCE, DOCUMENT, ONE_OFF
from agent_memory.hot_memory.statements import find_statements, relaxes_system_rules
from agent_memory.hot_memory.subjects import closes_risk as _closes_risk
from agent_memory.hot_memory.subjects import restates as _restates
from agent_memory.hot_memory.subjects import same_scope as _same_scope
from agent_memory.hot_memory.subjects import same_subject
from agent_memory.hot_memory.team import Team
from agent_memory.hot_memory.withdrawal import bare_withdrawal, withdrawn_line

DISTILLER = "distiller"
#: The study roles a preference's scope may name.
STUDY_ROLES: frozenset[str] = frozenset(get_args(StudyRole)) - {"Other"}


# ------------------------------------------------------------------- merge
@dataclass
class MergeResult:
    """What merging one day's candidates into hot memory would do.

    ``lines`` is the new document (equal to the input lines when nothing changed);
    ``added`` / ``replaced`` (old id -> new id) / ``removed`` (extra lines on a replaced
    subject) list line ids; ``duplicates`` counts candidates already present;
    ``reviews`` are held for an admin; ``rejected`` counts rejections by reason
    (``ungrounded``, ``language``, ``invalid``, ``no_subject``, ``dismissed``).
    """

    lines: list[HotMemoryLine]
    added: list[str] = field(default_factory=list)
    replaced: dict[str, str] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    duplicates: int = 0
    reviews: list[ReviewItem] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    evidence: list[str] = field(default_factory=list)
    #: same-day statements a later statement of the day replaced or withdrew (message ids)
    superseded: list[str] = field(default_factory=list)
    #: messages that withdrew a statement
    withdrawn: list[str] = field(default_factory=list)
    #: AI line ids dropped or folded to keep the document under the cap (set by the caller)
    compacted: list[str] = field(default_factory=list)
    #: AI lines a down-vote's reason re-confirmed: line id -> the feedback evidence added to it
    confirmed: dict[str, list[str]] = field(default_factory=dict)
    #: AI lines a user message said again the day they were said: line id -> the message ids added to
    #: its evidence (so an admin who deletes the line dismisses every message of the day that said it,
    #: docs/architecture.md, "Hot memory")
    restated: dict[str, list[str]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """True when the document differs from the input (a line added, replaced, removed,
        re-confirmed by feedback or said again)."""
        return bool(self.added or self.replaced or self.removed or self.confirmed or self.restated)

    @property
    def touched(self) -> set[str]:
        """Ids of the lines this merge wrote (added or replacing)."""
        return set(self.added) | set(self.replaced.values())


def merge_candidates(
    hot: HotMemory,
    candidates: Sequence[Candidate],
    *,
    day_messages: Mapping[str, FlowLogEntry],
    day: str,
    now: datetime,
    max_line_tokens: int,
    feedback_events: Sequence[FlowLogEntry] = (),
    team: Team | None = None,
) -> MergeResult:
    """Merge candidates (oldest statement first) into a copy of ``hot.lines``: THE guards both
    extractors (rules and LLM) go through.

    Per candidate, in this order:
    1. grounding: every evidence id must be a USER message of the processed day, else
       rejected ``ungrounded`` (the AI never writes what no user said);
       every evidence id among ``hot.dismissed_evidence`` (an admin deleted what was learnt from
       those messages), or the statement a duplicate of a line an admin removed after it was said
       (``hot.dismissed_lines``) -> rejected ``dismissed``;
    2. shape: a known AI section, non-empty, at most ``max_line_tokens``, else ``invalid``;
       a proposed ``System Rules`` line goes to review (admins own that section);
    3. language: the candidate's language must be one its evidence is written in, else
       ``language`` (Chinese stays Chinese);
    4. provenance: a preference's role tag is its scope (``Candidate.scope``: a study role, the
       speaker's user id, none for everyone), else the speaker's study role from the flow-log
       record of its evidence; the line keeps the statement's time;
    5. System Rules guard: a candidate the LLM marks ``relaxes_rule``, one that names the rules
       and asks to relax them, one that permits what a rule forbids or waives what it requires
       (:func:`~agent_memory.hot_memory.guards.relaxed_rules`, by meaning, whether or not it
       names the rule), one targeting an admin line or contradicting one -> review queue naming
       the rule, never applied (one item per message);
       a ``relaxation_probe`` (a message stating nothing durable) no guard holds is rejected
       ``not_a_statement``; a candidate from down-vote reasons only (flow-log ``source == "feedback"``) whose reasons
       state no preference (a bare judgement such as "wrong") -> ``not_a_preference``;
    6. a withdrawal removes the speaker's statement on that subject (made earlier the same day,
       or an AI line of the same scope);
    7. duplicate of any line (or of one added earlier in this merge) -> counted, the existing
       line keeps its provenance; a duplicate from a down-vote's reason re-confirms an AI line:
       the rated answer is added to its evidence (``confirmed``);
    8. same subject and scope as AI lines (:func:`same_subject`: same section, same role for
       preferences; a new value of the same kind, the same focus / risk, the same state, a
       contradiction, or the LLM's ``replace``) -> the first such line is replaced in place and
       the others removed, so exactly one line holds the subject (the last statement wins; the
       statements it supersedes are listed in ``superseded``);
    9. otherwise added at the end.

    ``feedback_events``: the day's down-vote records; several raters may rate the same answer, so
    a candidate citing it is grounded in the record of its own speaker (``Candidate.speaker``).
    ``team``: the project's members (:class:`~agent_memory.hot_memory.team.Team`; step 4: a
    preference for oneself by the only holder of a study role is that role's, one addressed to a
    member by name is that member's); None: unknown (a preference for oneself is the speaker's).

    Deterministic: the same inputs give byte-identical lines (ids are content hashes).
    """
    merge = _Merge(hot, day_messages=day_messages, day=day, now=now, max_line_tokens=max_line_tokens,
                   feedback_events=feedback_events, team=team or Team())
    for cand in sorted(candidates, key=lambda c: c.order):
        merge.add(cand)
    return _settled(merge.result, hot.lines)


def _settled(result: MergeResult, before: Sequence[HotMemoryLine]) -> MergeResult:
    """``result`` with no change recorded when its document is the input line for line (a re-run of
    a day whose statements replace one another ends where the first run ended: placing the day's
    first statement and replacing it by the later one again is no change, and no new revision)."""
    if [ln.model_dump() for ln in result.lines] == [ln.model_dump() for ln in before]:
        result.added.clear()
        result.replaced.clear()
        result.removed.clear()
    return result


@dataclass
class _Statement:
    """A grounded candidate as the merge reads it: its normalised text and evidence, the records it
    cites (the day's user messages, or down-vote records of its own speaker), and who said it."""

    cand: Candidate
    text: str
    evidence: list[str]
    said: list[FlowLogEntry]
    #: the speaker's own line on the subject (tagged with their user id) a statement naming no
    #: scope restates or changes: the statement keeps that scope
    own_scope: bool = False
    #: no such line, but a line of the speaker's study role on the subject the statement changes
    #: (a CRC's "那份名单改成中午12点发我" and the CRC line of that list): the statement keeps the role
    role_scope: bool = False
    #: the project's members (who holds a study role alone, who is named as an audience)
    team: Team = field(default_factory=Team)

    @cached_property
    def info(self) -> Analysis:
        return analyse(self.text)

    @property
    def speaker(self) -> FlowLogEntry:
        return self.said[-1]

    @property
    def role(self) -> str | None:
        """A preference's role tag (docs/architecture.md, "Hot memory"): the study role its scope
        names, the speaker's user id for a preference of the speaker alone (their study role when
        they hold it alone in the team), the member it names as its audience by name
        (:class:`~agent_memory.hot_memory.team.Team`), None for everyone; the speaker's study role
        from the flow-log record when the statement names no scope (or an extractor names one that
        is not a study role)."""
        if self.cand.section != "User Preferences":
            return None
        speaker = self.speaker
        scope = self.cand.scope
        if self.role_scope and speaker.study_role:
            return speaker.study_role
        if self.own_scope or scope == "speaker":
            return self.team.own_tag(speaker.user_id, speaker.study_role)
        if scope == "everyone":
            return None
        if scope in STUDY_ROLES:
            return scope
        return self.team.named_audience(self.text, speaker=speaker.user_id) or speaker.study_role

    @property
    def feedback(self) -> list[FlowLogEntry]:
        """The down-vote records among what it cites."""
        return [m for m in self.said if m.source == FEEDBACK_SOURCE]


class _Merge:
    """One merge of :func:`merge_candidates`: the document being changed (``lines``), the result,
    the admin rules guarding it, the messages already queued for review."""

    def __init__(self, hot: HotMemory, *, day_messages: Mapping[str, FlowLogEntry], day: str, now: datetime,
                 max_line_tokens: int, feedback_events: Sequence[FlowLogEntry], team: Team) -> None:
        self.hot = hot
        self.team = team
        self.lines = list(hot.lines)
        self.result = MergeResult(lines=self.lines)
        self.rules = [ln for ln in hot.lines if ln.source == "admin" and ln.section == SYSTEM_RULES]
        self.queued: set[str] = set()
        self.dismissed = set(hot.dismissed_evidence)
        self.by_rater = {(m.message_id, m.user_id): m for m in feedback_events}
        self.day_messages, self.day, self.now, self.max_line_tokens = day_messages, day, now, max_line_tokens

    def add(self, cand: Candidate) -> None:
        """One candidate through the steps of :func:`merge_candidates`: rejected, held for an admin,
        a withdrawal, a down-vote stating no preference, a duplicate, or placed."""
        text = " ".join(cand.text.split())
        evidence = list(dict.fromkeys(cand.evidence))
        rejection = _rejection(cand, text, evidence, self.day_messages, self.max_line_tokens, self.by_rater)
        if rejection == "proposes_system_rule":
            self._queue(cand, text, evidence, "proposes_system_rule", None, role=cand.role_tag)
            return
        if rejection is None and set(evidence) <= self.dismissed:
            rejection = "dismissed"  # an admin deleted what was learnt from it (the kill switch, an edit)
        if rejection is not None:
            self.result.rejected[rejection] += 1
            return
        said = [self.by_rater.get((e, cand.speaker), self.day_messages[e]) for e in evidence]
        statement = _Statement(cand, text, evidence, said, team=self.team)
        statement.own_scope = speaker_own_subject(cand, text, statement.speaker, self.lines, self.now)
        statement.role_scope = not statement.own_scope and speaker_role_subject(
            cand, text, statement.speaker, self.lines, self.now)
        if cand.kind != "withdraw" and self._dismissed(statement):
            self.result.rejected["dismissed"] += 1  # what an admin deleted, said again before they deleted it
            return
        target = next((ln for ln in self.lines if cand.replaces and ln.line_id == cand.replaces), None)
        feedback = statement.feedback
        context = "\n".join(m.content for m in said)
        if cand.kind != "withdraw" and reinforced_rule(text, self.rules) is not None and not relaxed_rules(
                text, self.rules, context="\n".join(m.content for m in said)):
            self.result.duplicates += 1  # only forbids what a System Rule forbids ("以后不要处理受试者的姓名身份证号")
            return
        # a withdrawal takes back what its speaker said; it relaxes a rule only by naming it ("那条规则不要了")
        held = None if cand.kind == "withdraw" and not names_rules(text) else _held_for_admin(
            cand, text, statement.info, self.lines, self.rules, target, context, asks_output=bool(feedback))
        if held is not None:
            shown = _review_text(cand, text, context, self.rules, held[0], asks_output=bool(feedback))
            self._queue(cand, shown, evidence, *held, role=_review_role(statement, shown))
        elif cand.kind == "relaxation_probe":
            self.result.rejected["not_a_statement"] += 1
        elif cand.kind == "withdraw":
            self._withdraw(statement, target)
        elif feedback and len(feedback) == len(said) and not any(_states_preference(m.content) for m in feedback):
            self.result.rejected["not_a_preference"] += 1
        elif not self._duplicate(statement):
            self._place(statement, target)

    def _dismissed(self, statement: _Statement) -> bool:
        """The statement says what a line an admin removed said (same section, a duplicate of its
        text) and all its messages were said before the removal: the admin's decision covers it."""
        said_by = max(m.at for m in statement.said)
        return any(d.section == statement.cand.section and said_by <= d.dismissed_at
                   and is_duplicate(statement.info, analyse(d.text)) for d in self.hot.dismissed_lines)

    def _queue(self, cand: Candidate, text: str, evidence: list[str], reason: str, detail: str | None, *,
               role: str | None) -> None:
        _queue(self.result, self.queued, _review(self.hot.project_id, cand, text, evidence, self.day, self.now,
                                                 reason, detail, role))

    def _withdraw(self, statement: _Statement, target: HotMemoryLine | None) -> None:
        """The line the LLM named (an AI line), else the speaker's statement on that subject."""
        bare = bare_withdrawal(statement.text)
        scopes = (statement.role, statement.speaker.user_id)
        if bare and (target is None or target.source == "admin"):
            # "forget the CSV thing", "提前3天那个算了": the line it names, else the line just said
            target = withdrawn_line(self.lines, statement.text, scopes, statement.cand.section,
                                    added=self.result.added) or self._just_said(statement)
            if target is None:
                return  # what was just said is no line (a task, a reminder): nothing of memory to take back
        if target is not None and target.source != "admin":
            self.lines.remove(target)
            _note_removed(self.result, target)
            self.result.withdrawn.extend(statement.evidence)
        else:
            _withdraw(self.result, self.lines, statement.text, scopes, statement.cand.section, statement.evidence)

    def _just_said(self, statement: _Statement) -> HotMemoryLine | None:
        """The AI line a bare withdrawal ("那个算了", "scratch that") takes back: the line made from the
        speaker's message just before it this day; None when that message made no line (a one-off
        task, a reminder). With no earlier message of theirs this day, their newest line of the last
        24 hours."""
        at, speaker = statement.speaker.at, statement.speaker.user_id
        earlier = [m for m in self.day_messages.values() if m.user_id == speaker and m.at < at
                   and m.message_id not in statement.evidence]
        if earlier:
            just = max(earlier, key=lambda m: m.at).message_id
            return next((ln for ln in reversed(self.lines) if ln.source != "admin"
                         and just in (*ln.evidence, *ln.retired_evidence)), None)
        return next((ln for ln in reversed(self.lines) if ln.source != "admin" and ln.stated_by == speaker
                     and ln.stated_at is not None and timedelta(0) <= at - ln.stated_at <= timedelta(days=1)), None)

    def _duplicate(self, statement: _Statement) -> bool:
        """A line (or one added earlier in this merge) says it already, or a System Rule does (the
        statement only forbids what the rule forbids): counted, the line keeps its provenance; a
        down-vote's reason re-confirms an AI line (the rated answers join its evidence)."""
        info = statement.info
        dup = next((ln for ln in self.lines if not changes_value(statement.text, ln.text)
                    and not names_other_sites(statement.text, ln.text) and _closes_risk(
            statement.text) == _closes_risk(ln.text) and (
            is_duplicate(info, analyse(ln.text))
            or _restates(statement.text, statement.role, statement.cand.section, ln, statement.speaker.user_id)
            # a line for everyone says it for the speaker too ("你给我的清单里访视还是写代码" beside "访视一律写代码")
            or (ln.role_tag is None and _restates(statement.text, None, statement.cand.section, ln, None))
            or (restates_value(statement.text, ln.text, same_language=statement.cand.kind == "change") and _same_scope(
                ln, statement.cand.section, statement.role, text=statement.text, speaker=statement.speaker.user_id)))),
            None)
        dup = dup or reinforced_rule(statement.text, self.rules)
        if dup is None:
            return False
        self.result.duplicates += 1
        if statement.feedback:
            _confirm(self.result, self.lines, dup, [m.message_id for m in statement.feedback])
        elif any(e in self.day_messages for e in dup.evidence):
            # said again the day it was said: one statement of the day (a line said on an earlier day
            # and said again today keeps its provenance: no new revision)
            _restate(self.result, self.lines, dup, statement.evidence)
        return True

    def _place(self, statement: _Statement, target: HotMemoryLine | None) -> None:
        """A new line in place of the AI lines holding its subject in its scope, or at the end; a
        change of value with no subject in memory is rejected ``no_subject`` for a preference unless
        it names an output prepared again and again (``DOCUMENT``: "随访提醒改成前一天下午五点发吧" is a
        standing preference; "那就改到周四吧" about a meeting is a plan of the day)."""
        cand, speaker = statement.cand, statement.speaker
        new_line = HotMemoryLine(
            line_id=stable_id("hm", self.hot.project_id, statement.text, *statement.evidence),
            section=cand.section, text=statement.text, source="distilled", role_tag=statement.role,
            created_at=self.now, created_by=DISTILLER, evidence=statement.evidence,
            stated_at=max(m.at for m in statement.said), stated_by=speaker.user_id,
        )
        touched = self.result.touched
        if any(ln.line_id == new_line.line_id and ln.text == new_line.text and ln.role_tag == new_line.role_tag
               for ln in self.lines) or (not statement.feedback and any(
                ln.source != "admin" and ln.line_id not in touched
                and set(statement.evidence) <= {*ln.evidence, *ln.retired_evidence}
                for ln in self.lines)):  # (a rated answer may be cited by several raters' reasons)
            # the same statement, merged already (a re-run of the day, an amended line citing it): no change
            self.result.duplicates += 1
            return
        mind = changed_mind(statement.text, speaker, self.lines, kind=cand.kind) if cand.section == _PREFERENCES else []
        mind = [ln for ln in mind if not names_other_sites(statement.text, ln.text)]
        same = mind if mind and BACK_REFERENCE.search(nfkc(speaker.content)) else [
            ln for ln in self.lines if ln.source != "admin" and (
                (ln is target and _same_scope(ln, cand.section, statement.role, text=statement.text,
                                              speaker=speaker.user_id))
                or same_subject(new_line, ln, change=cand.kind == "change"))]  # "上午说的…" points back: that line
        if len(same) > 1 and cand.section == "User Preferences" and target not in same:
            # one change, several preferences holding a value of its kind: the one it is most about
            # ("随访名单改成前一周周五发我" changes the visit list, not the daily upload list sent on weekends)
            ours = [ln for ln in same if set(ln.evidence) & set(statement.evidence)]  # said in the same message
            others = [ln for ln in same if ln not in ours]
            best = max((len(subject_grams(statement.text) & subject_grams(ln.text)) for ln in others), default=0)
            same = ours + [ln for ln in others if len(subject_grams(statement.text) & subject_grams(ln.text)) == best]
        if len(same) == 1 and cand.section == "User Preferences" and same[0].section == cand.section:
            # a change of mind of the speaker found the line already ("PDF那个算了，还是Word吧"): it needs no subject
            kept = kept_details(statement.text, same[0], known=same[0] in mind)
            if kept != statement.text:
                new_line = new_line.model_copy(update={
                    "text": kept, "line_id": stable_id("hm", self.hot.project_id, kept, *statement.evidence)})
            if same[0] in mind:  # the speaker's own line changed: it keeps its scope
                new_line = new_line.model_copy(update={"role_tag": same[0].role_tag})
        elif not same and cand.section == "User Preferences":
            amended = self._amendment(statement)
            if amended is not None:
                new_line = new_line.model_copy(update={
                    "text": amended.text, "role_tag": amended.target.role_tag,
                    "line_id": stable_id("hm", self.hot.project_id, amended.text, *statement.evidence)})
                same = [amended.target]
        if not same and cand.section == _PREFERENCES:
            same = mind or sole_value_line(statement.text, statement.speaker, self.lines)
            if len(same) == 1:  # the line keeps what the statement does not change, and its scope
                kept = kept_details(statement.text, same[0], known=True)
                new_line = new_line.model_copy(update={"text": kept, "role_tag": same[0].role_tag, "line_id": stable_id(
                    "hm", self.hot.project_id, kept, *statement.evidence)})
        if cand.kind == "change" and not same and cand.section == "User Preferences" and not _recurring_output(
                statement.text):
            self.result.rejected["no_subject"] += 1
            return
        _place(self.result, self.lines, new_line, same)
        self.result.evidence.extend(e for e in statement.evidence if e not in self.result.evidence)

    def _amendment(self, statement: _Statement) -> Amendment | None:
        """The AI line of the statement's scope its message changes without the statement naming its
        subject (:func:`~agent_memory.hot_memory.amend.amendment`)."""
        own = (statement.speaker.user_id, statement.speaker.study_role)
        role = statement.speaker.study_role if statement.cand.scope in (None, "speaker") and statement.role in own \
            else None
        scoped = [ln for ln in self.lines if ln.source != "admin" and (_same_scope(
            ln, statement.cand.section, statement.role, text=statement.text, speaker=statement.speaker.user_id) or (
            role is not None and ln.section == statement.cand.section and ln.role_tag == role))]
        return amendment(statement.text, statement.speaker.content, scoped) if scoped else None


def _recurring_output(text: str) -> bool:
    """``text`` changes an output prepared again and again ("随访提醒改成前一天下午五点发吧"), not one
    copy of it ("这周的提醒里 03-021 的时间改成下午": this week's, a subject's)."""
    norm = nfkc(text)
    return bool(DOCUMENT.search(norm)) and not (ACT_NOW.search(norm) or ONE_OFF.search(norm) or SUBJECT_ID.search(norm))


def _states_preference(reason: str) -> bool:
    """A down-vote's reason states a preference: a directive in it, or a complaint about the
    answer's form that :func:`feedback_preference` turns into one."""
    return feedback_preference(reason) is not None or any(f.kind != "withdraw" for f in find_statements(reason))


def _confirm(result: MergeResult, lines: list[HotMemoryLine], line: HotMemoryLine, evidence: list[str]) -> None:
    """A down-vote's reason says again what AI line ``line`` says: the rated answers join its
    evidence (same id, text and place; admin lines are never touched)."""
    _cite(result, lines, line, [e for e in evidence if e not in line.evidence], result.confirmed)


#: how many message ids a line said again keeps as its evidence (the newest)
_EVIDENCE_KEPT = 20


def _restate(result: MergeResult, lines: list[HotMemoryLine], line: HotMemoryLine, evidence: list[str]) -> None:
    """A user message says again what AI line ``line`` says: its message ids join the line's
    evidence (the last :data:`_EVIDENCE_KEPT`; same id, text and place; admin lines and the System
    Rules a statement only restates are never touched)."""
    if line not in lines:
        return
    new = [e for e in evidence if e not in line.evidence and e not in line.retired_evidence]
    _cite(result, lines, line, new, result.restated, keep=_EVIDENCE_KEPT)


def _cite(result: MergeResult, lines: list[HotMemoryLine], line: HotMemoryLine, new: list[str],
          record: dict[str, list[str]], *, keep: int | None = None) -> None:
    """Add the message ids ``new`` to AI line ``line``'s evidence in place (the newest ``keep``, all
    when None) and note them in ``record`` (line id -> ids) and the result's evidence; nothing for
    an admin line or no new id."""
    if line.source == "admin" or not new:
        return
    evidence = [*line.evidence, *new]
    lines[lines.index(line)] = line.model_copy(update={"evidence": evidence[-keep:] if keep else evidence})
    record.setdefault(line.line_id, []).extend(new)
    result.evidence.extend(e for e in new if e not in result.evidence)


def _rejection(cand: Candidate, text: str, evidence: list[str], day_messages: Mapping[str, FlowLogEntry],
               max_line_tokens: int, by_rater: Mapping[tuple[str, str | None], FlowLogEntry]) -> str | None:
    """Why a candidate cannot be a line at all: ``ungrounded`` (evidence not a user message of the
    day), ``proposes_system_rule`` (admins own that section), ``invalid`` (section, empty, too
    long) or ``language`` (not a language its evidence is written in); None when it can."""
    if not evidence or any(e not in day_messages or day_messages[e].role != "user" for e in evidence):
        return "ungrounded"
    if cand.section == SYSTEM_RULES:
        return "proposes_system_rule"
    if cand.section not in AI_SECTIONS or not text or estimate_tokens(text) > max_line_tokens:
        return "invalid"
    spoken: set[str] = set()
    for e in evidence:
        spoken |= languages_present(by_rater.get((e, cand.speaker), day_messages[e]).content)
    language = analyse(text).language
    return "language" if language != "other" and spoken and language not in spoken else None


#: a System Rule is long: a statement sharing fewer of its words / bigrams only touches its topic
#: ("list protocol deviations by category"); relaxing it by meaning is the guards' judgement
_RULE_CLASH_GRAMS = 3


def _review_text(cand: Candidate, text: str, context: str, rules: list[HotMemoryLine], reason: str, *,
                 asks_output: bool = False) -> str:
    """What the review item shows: the statement, or, when the statement alone relaxes no rule (the
    statement finder kept a harmless part: "发给监查员的周报里。", or a down-vote's reason gave a
    harmless wish beside the relaxation), the message's sentence that relaxes it
    (:func:`relaxation_probe`; ``asks_output`` for a down-vote's reason), so the admin judges what
    was asked."""
    if reason != "relaxes_system_rules" or cand.kind == "relaxes_rule" or relaxes_system_rules(text):
        return text
    if relaxed_rules(text, rules, asks_output=asks_output):
        return text
    return relaxation_probe(context, asks_output=asks_output) or text


def _held_for_admin(
    cand: Candidate, text: str, info: Analysis, lines: list[HotMemoryLine], rules: list[HotMemoryLine],
    target: HotMemoryLine | None, context: str, *, asks_output: bool = False,
) -> tuple[str, str | None] | None:
    """The System Rules guard: ``(reason, line_id)`` when the candidate must wait for an admin.

    The LLM's ``relaxes_rule``, a statement naming the rules and asking to relax them, or one
    relaxing a rule by meaning -> ``relaxes_system_rules`` naming the rule when one is singled out;
    a candidate targeting an admin line -> ``targets_admin_line``; one contradicting an admin line
    or changing its detail -> ``contradicts_admin_line``; a preference doing what a System Rule
    forbids in the rule's own words (:func:`~agent_memory.hot_memory.relaxation.does_what_rule_forbids`)
    -> ``relaxes_system_rules`` naming it. ``asks_output``: the candidate comes
    from a down-vote's reason, a request for how answers look (forbidden content named in it
    without a negation is asked for). A candidate from a message that, read whole, relaxes a rule
    is held too: the statement finder may have kept only part of that message.
    """
    relaxed = rules_relaxed_by(text, rules, context, asks_output=asks_output)
    if cand.kind == "relaxes_rule" or relaxed is not None:
        specific = relaxed and (len(relaxed) < len(rules) or len(rules) == 1)
        return "relaxes_system_rules", relaxed[0].line_id if relaxed and specific else (
            cand.replaces if target is not None else None)
    if target is not None and target.source == "admin":
        return "targets_admin_line", target.line_id
    clash = next((ln for ln in lines if ln.source == "admin" and conflicts(info, analyse(ln.text)) and (
        ln.section != SYSTEM_RULES or len(info.grams & analyse(ln.text).grams) >= _RULE_CLASH_GRAMS)), None)
    if clash is not None:
        return "contradicts_admin_line", clash.line_id
    forbidden = does_what_rule_forbids(text, rules, context) if cand.section == _PREFERENCES else []
    # a project's own rule done in other words
    return ("relaxes_system_rules", forbidden[0].line_id) if forbidden else None


#: how many replaced statements' message ids a line remembers (``HotMemoryLine.retired_evidence``)
_RETIRED_KEPT = 20


def _place(result: MergeResult, lines: list[HotMemoryLine], new_line: HotMemoryLine, same: list[HotMemoryLine]) -> None:
    """Add ``new_line``, or put it in place of the first line of ``same`` (the others removed): a
    line written earlier in this merge is a superseded statement of the day."""
    if not same:
        lines.append(new_line)
        result.added.append(new_line.line_id)
        return
    first = same[0]
    if len(same) == 1 and (first.line_id, first.text, first.role_tag) == (new_line.line_id, new_line.text,
                                                                         new_line.role_tag):
        result.duplicates += 1  # the line it would replace is itself (a re-run): nothing changes
        return
    retired = [e for old in same for e in (*old.retired_evidence, *old.evidence) if e not in new_line.evidence]
    new_line = new_line.model_copy(update={"retired_evidence": list(dict.fromkeys(retired))[-_RETIRED_KEPT:]})
    lines[lines.index(first)] = new_line
    for extra in same[1:]:
        lines.remove(extra)
        result.removed.append(extra.line_id)
    written = set(result.added) | set(result.replaced.values())
    for old in same:
        if old.line_id in written:  # a statement of the same day: the later one wins
            result.superseded.extend(e for e in old.evidence if e not in result.superseded)
    prior = next((k for k, v in result.replaced.items() if v == first.line_id), None)
    if first.line_id in result.added:
        result.added[result.added.index(first.line_id)] = new_line.line_id
    elif prior is not None:
        result.replaced[prior] = new_line.line_id
    else:
        result.replaced[first.line_id] = new_line.line_id
    for extra in same[1:]:
        if extra.line_id in result.added:
            result.added.remove(extra.line_id)
            result.removed.remove(extra.line_id)


def _note_removed(result: MergeResult, line: HotMemoryLine) -> None:
    """Record a removed line: one added earlier in this merge is a superseded statement of the day."""
    if line.line_id in result.added:
        result.added.remove(line.line_id)
        result.superseded.extend(e for e in line.evidence if e not in result.superseded)
    else:
        result.removed.append(line.line_id)


def _withdraw(result: MergeResult, lines: list[HotMemoryLine], text: str, scopes: tuple[str | None, str | None],
              section: str, evidence: list[str]) -> None:
    """Remove what a withdrawal takes back (:func:`~agent_memory.hot_memory.withdrawal.withdrawn_line`)."""
    best = withdrawn_line(lines, text, scopes, section, added=result.added)
    if best is None:
        return
    lines.remove(best)
    _note_removed(result, best)
    result.withdrawn.extend(evidence)


def _queue(result: MergeResult, queued: set[str], item: ReviewItem) -> None:
    """One review item per message: a message already queued in this merge is not queued again."""
    if any(e in queued for e in item.evidence):
        return
    queued.update(item.evidence)
    result.reviews.append(item)


def _review_role(statement: _Statement, shown: str) -> str | None:
    """The role tag of a held preference's review item: the scope the statement would have had as
    a line (:attr:`_Statement.role`: the role it is addressed to, the speaker alone, everyone, else
    the speaker's study role); when the item shows another sentence of the message (the one that
    relaxes), the scope that sentence names (:func:`preference_scope`), else the statement's."""
    if statement.cand.section != "User Preferences":
        return None
    named = preference_scope(shown) if shown != statement.text else None
    if named is None:
        return statement.role
    return named.tag(speaker_id=statement.speaker.user_id) if statement.speaker.user_id else named.role


def _review(
    project_id: str,
    cand: Candidate,
    text: str,
    evidence: list[str],
    day: str,
    now: datetime,
    reason: str,
    detail: str | None,
    role_tag: str | None,
) -> ReviewItem:
    return ReviewItem(
        project_id=project_id,
        review_id=stable_id("rv", text, *evidence),
        day=day,
        text=text,
        section=cand.section,
        role_tag=role_tag,
        evidence=evidence,
        reason=reason,
        detail=detail,
        origin=cand.origin,
        created_at=now,
    )


__all__ = [
    "DISTILLER",
    "Compaction",
    "MergeResult",
    "build_llm_compaction",
    "compact_offline",
    "merge_candidates",
    "same_subject",
    "validate_compaction",
]
