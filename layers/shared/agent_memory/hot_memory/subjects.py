"""Whether a new hot-memory line holds the subject of an AI line in the same scope (so it replaces
it) or says what it says (a restatement): the scope of a line (section, role tag, the speaker's own
lines) and the kind of an Active Context line (focus, risk, risk closed, state). Used by
:mod:`agent_memory.hot_memory.merge`. Deterministic; nothing is logged.
"""

from __future__ import annotations

import re

from agent_memory.domain.models import HotMemoryLine
from agent_memory.hot_memory.analysis import (
    analyse,
    changes_value,
    contradicts,
    names_other_sites,
    shared_grams,
    supersedes,
)
from agent_memory.hot_memory.statement_lexicon import CONDITIONAL_HEAD, RISK

#: a line naming the current focus, labelled or not ("当前重点：…", "这个月的重点改成…")
FOCUS = re.compile(
    r"^(?:当前重点|重点|current focus|focus)\s*[:：]|"
    r"(?:当前|目前|现在|这个月|本月|这周|本周|近期|接下来|下一步|下阶段|下个阶段|后面)的?(?:工作)?重点(?:是|改成|换成|转到|放在|为)|"
    r"重点(?:改成|换成|转到|转向|放到|调整为|变成)|"
    r"\b(?:current |next )?focus (?:is|now|shifts?|moves?|changes?)\b|\bpriority (?:is|now)\b", re.IGNORECASE)
_RISK_LABEL = re.compile(r"^(?:风险|主要风险|risk)\s*[:：]", re.IGNORECASE)
#: the label an Active Context line opens with ("风险：", "风险解除：", "Current focus: ", "Risk closed: ")
_CONTEXT_LABEL = re.compile(r"^\s*(?:当前重点|重点|风险解除|主要风险|风险|"
                            r"current focus|focus|risk closed|risk)\s*[:：]\s*", re.IGNORECASE)


def closes_risk(text: str) -> bool:
    """A line saying a risk is closed ("风险解除：…"): never a restatement of the risk it closes."""
    return bool(re.match(r"\s*(?:风险解除|risk closed)\s*[:：]", text, re.IGNORECASE))


def context_kind(text: str) -> str:
    """An Active Context line's kind: ``focus`` (the current focus), ``risk`` or ``state``."""
    if FOCUS.search(text):
        return "focus"
    return "risk" if RISK.search(text) else "state"


def restates(text: str, role: str | None, section: str, line: HotMemoryLine, speaker: str | None) -> bool:
    """``text`` says again what ``line`` (same scope) says in other words: at least four content
    words / bigrams shared, covering 60 % of the shorter one's, and no new value of the same kind."""
    if not same_scope(line, section, role, text=text, speaker=speaker) or changes_value(text, line.text):
        return False
    if analyse(text).negative != analyse(line.text).negative:
        return False  # the opposite of the line ("周报里别放曲线图了" against "周报里附上曲线图"): not a restatement
    a, b = analyse(text).grams, analyse(line.text).grams
    shared = len(a & b)
    return shared >= 4 and shared >= 0.6 * min(len(a), len(b))


_FOR_ME = re.compile(r"[发给告]我|我的|给我|\bme\b|\bmy\b", re.IGNORECASE)


def same_scope(line: HotMemoryLine, section: str, role: str | None, *, text: str = "",
                speaker: str | None = None) -> bool:
    """Same section; for preferences the same role (a different role's preference is its own
    line) and, for a preference about the speaker themself ("发我", "send me"), the same user."""
    if line.section != section:
        return False
    if section != "User Preferences":
        return True
    if line.role_tag != role and not (role == speaker and line.stated_by == speaker):
        return False  # a role's, one user's and everyone's preferences are lines of their own; a line the
        # speaker stated themself is theirs to change for themself ("report to me in English")
    personal = bool(_FOR_ME.search(text) or _FOR_ME.search(line.text))
    return not (personal and speaker and line.stated_by and line.stated_by != speaker)


def same_subject(new: HotMemoryLine, line: HotMemoryLine, *, change: bool = False) -> bool:
    """``new`` holds the subject of the AI line ``line`` in the same scope, so it replaces it:
    a new value of the same kind (format, weekday, time, lead days); in Active Context the same
    focus, the same risk when the statement changes it, or the same state (at least three
    shared content words / bigrams); a contradiction or a changed detail of the same statement."""
    if line.source == "admin" or not same_scope(line, new.section, new.role_tag, text=new.text,
                                                 speaker=new.stated_by):
        return False
    if new.section == "User Preferences" and names_other_sites(new.text, line.text):
        return False  # an instruction for another site ("第2中心的QC清单…" beside "第1中心的QC清单…")
    if changes_value(new.text, line.text) and not (CONDITIONAL_HEAD.match(new.text) and not CONDITIONAL_HEAD.match(
            line.text)):
        return True  # a rule for when something happens ("只要…就当天上午发我") is a line of its own
    if new.section == "Active Context":
        if FOCUS.search(new.text) and FOCUS.search(line.text):
            return True  # the project has one current focus
        if context_kind(new.text) != context_kind(line.text):
            return False  # a new focus leaves the risks, a new risk the focus
        if change and _RISK_LABEL.match(new.text) and _RISK_LABEL.match(line.text):
            return True
        if shared_grams(_CONTEXT_LABEL.sub("", new.text), _CONTEXT_LABEL.sub("", line.text)) >= 3:
            return True  # the same focus, risk or state (a risk closed included), its label not counted
    a, b = analyse(new.text), analyse(line.text)
    if a.reply_language and b.reply_language:
        return contradicts(a, b)
    return contradicts(a, b) or supersedes(a, b)


__all__ = ["closes_risk", "context_kind", "restates", "same_scope", "same_subject"]
