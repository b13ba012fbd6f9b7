"""Which existing line a speaker's new preference is about, when the preference names no scope of its
own: the speaker's own line on the subject, the line of their study role whose current value the
message names, or the line they stated earlier the same day (a change of mind). Used by
:mod:`agent_memory.hot_memory.merge` before it places a statement. Deterministic; nothing is logged.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from agent_memory.domain.jobs import AI_SECTIONS, Candidate, FlowLogEntry
from agent_memory.domain.models import HotMemoryLine
from agent_memory.hot_memory.amend import names_current_value
from agent_memory.hot_memory.analysis import (
    analyse,
    changes_value,
    is_duplicate,
    negated_values,
    nfkc,
    output_kinds,
    restates_value,
    subject_grams,
    values,
)
from agent_memory.hot_memory.sentences import only_values
from agent_memory.hot_memory.statement_lexicon import ACT_NOW, BACK_REFERENCE, DOCUMENT, ONE_OFF
from agent_memory.hot_memory.subjects import same_subject

#: the section a preference is a line of
PREFERENCES = AI_SECTIONS[0]  # "User Preferences"


def _probe(text: str, tag: str | None, speaker: str | None, now: datetime) -> HotMemoryLine:
    """The statement as a line tagged ``tag``, to compare with the lines of hot memory."""
    return HotMemoryLine(line_id="", section=PREFERENCES, text=text, source="distilled", role_tag=tag,
                         created_at=now, created_by="distiller", stated_by=speaker)


def speaker_own_subject(cand: Candidate, text: str, speaker: FlowLogEntry, lines: Sequence[HotMemoryLine],
                        now: datetime) -> bool:
    """A preference naming no scope, on the subject of a line of the speaker alone (tagged with
    their user id): the speaker speaks of their own preference again ("随访提醒提前3天发我" then
    "随访提醒以后提前1天发就够了").

    Args:
        cand: the candidate (its section, scope and kind are read).
        text: its normalised text.
        speaker: the flow-log record of the message it was found in.
        lines: the hot memory's lines as the merge holds them.
        now: the merge's time (UTC).
    """
    if cand.section != PREFERENCES or cand.scope is not None:
        return False
    own = speaker.user_id
    probe = _probe(text, own, own, now)
    return any(ln.role_tag == own and (same_subject(probe, ln, change=cand.kind == "change")
                                      or is_duplicate(analyse(text), analyse(ln.text))
                                      or restates_value(text, ln.text, same_language=True))
               for ln in lines if ln.source != "admin")


def speaker_role_subject(cand: Candidate, text: str, speaker: FlowLogEntry, lines: Sequence[HotMemoryLine],
                         now: datetime) -> bool:
    """A preference of the speaker alone or naming no scope that changes the value of a line of
    the speaker's study role (``same_subject`` with a new value of the same kind) whose current
    value the message names ("早上8点那份名单…改成中午12点发我"); a holder of the role who only
    says how they want it themself ("以后访视提醒发我邮箱就行") gets a line of their own.

    Args: as :func:`speaker_own_subject`.
    """
    role = speaker.study_role
    if cand.section != PREFERENCES or cand.scope not in (None, "speaker") or not role:
        return False
    probe = _probe(text, role, speaker.user_id, now)
    return any(ln.role_tag == role and changes_value(text, ln.text) and same_subject(
        probe, ln, change=cand.kind == "change") and names_current_value(text, speaker.content, ln.text)
        for ln in lines if ln.source != "admin")


def changed_mind(text: str, speaker: FlowLogEntry, lines: Sequence[HotMemoryLine], *,
                 kind: str = "change") -> list[HotMemoryLine]:
    """The speaker's own line of the last 24 hours (by ``stated_at``) that a change of theirs is
    about: two content words / bigrams shared, or one and the message says no to the line's value
    ("每周一把失访的人拉个名单发我邮箱" then "失访名单还是别发邮箱了…企业微信私聊发我Excel就行"): a change
    of mind, in place of that line. ``[]`` when there is none or the message asks for something now
    or for one day ("这周五之前先把04中心的清单给我吧"), or when a statement that is no ``change``
    (``kind``) does not point back to what was said ("上午说的…").

    Returns:
        ``[line]`` (the newest such line) or ``[]``.
    """
    said = nfkc(speaker.content)
    if ACT_NOW.search(said) or ONE_OFF.search(said) or (kind != "change" and not BACK_REFERENCE.search(said)):
        return []
    grams, refused = subject_grams(text), negated_values(said)
    mine = [ln for ln in lines if ln.source != "admin" and ln.stated_by == speaker.user_id
            and ln.stated_at is not None and timedelta(0) <= speaker.at - ln.stated_at <= timedelta(days=1)
            and (len(grams & subject_grams(ln.text)) >= 2
                 or (grams & subject_grams(ln.text) and _refuses(refused, ln))
                 or (only_values(text.rstrip("。.")) and _new_value_of(text, ln)))]  # "算了还是提前10天吧"
    return mine[-1:]


def sole_value_line(text: str, speaker: FlowLogEntry, lines: Sequence[HotMemoryLine]) -> list[HotMemoryLine]:
    """The one preference of the speaker (their study role's or their own) that holds another value
    of a kind the change sets, when the change names no output of its own and the message names
    that line's kind of output ("Monday那个imaging due list…能不能以后先按中心分组、组内再按due date排？"
    beside the role's one sorted list); ``[]`` when none or several.
    """
    if DOCUMENT.search(nfkc(text)):
        return []
    said, message = values(text), nfkc(speaker.content).casefold()
    mine = [ln for ln in lines if ln.source != "admin" and ln.section == PREFERENCES
            and ln.role_tag in (speaker.study_role, speaker.user_id) and ln.role_tag is not None
            and any(said[f] != v for f, v in values(ln.text).items() if f in said)
            and output_kinds(message) & output_kinds(ln.text)]
    return mine if len(mine) == 1 else []


def _new_value_of(text: str, line: HotMemoryLine) -> bool:
    """``text`` sets another value of a kind ``line`` sets (and no other kind)."""
    said, current = values(text), values(line.text)
    return bool(said) and said.keys() <= current.keys() and any(said[f] != current[f] for f in said)


def _refuses(refused: dict[str, frozenset[str]], line: HotMemoryLine) -> bool:
    """The message says no to a value the line sets ("失访名单还是别发邮箱了" against "…发我邮箱")."""
    current = values(line.text)
    return any(refused[family] & current.get(family, frozenset()) for family in refused)


__all__ = ["PREFERENCES", "changed_mind", "sole_value_line", "speaker_own_subject", "speaker_role_subject"]
