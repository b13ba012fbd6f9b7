"""Quiet times from hot memory: when a user's preferences rule out being messaged.

Pure functions of the user's id, study role and the hot memory's lines (no store, no clock). A line
applies to a user when it is in System Rules or User Preferences and either has no role tag, has
the user's study role as its tag (``[PI]``), or names the user's id. Two kinds of rule are read,
in Chinese and English:

- no messages at weekends (``周末别发消息``, ``双休日不要打扰``, ``no messages on weekends``): a
  reminder falling on a Saturday or Sunday moves to the next Monday at :data:`MORNING`;
- quiet hours (``晚上10点后别发消息``, ``早上8点前不要打扰``, ``don't message me after 8pm``,
  ``下班后别发消息``): a reminder inside them moves to the end of the quiet period (the next
  morning at :data:`MORNING`, or the hour the rule names).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, time, timedelta

from agent_memory.domain.models import HotMemoryLine
from agent_memory.domain.when import Recurrence

#: The first allowed time of a day when a rule names none (09:00 local).
MORNING = time(9, 0)
#: Sections whose lines can rule out a time.
_SECTIONS = frozenset({"System Rules", "User Preferences"})
_NEGATION = r"(?:别|不要|不用|勿|不准|禁止|不|no|don'?t|do not|never|avoid|without)"
_CONTACT = (r"(?:发|消息|信息|打扰|提醒|通知|联系|找我|推送|message|messag|notif|remind|disturb|contact|ping|text|"
            r"email|send)")
_WEEKEND = re.compile(r"周末|双休|休息日|星期[六日天]|周[六日]|礼拜[六日天]|weekends?|saturdays?|sundays?",
                      re.IGNORECASE)
_AFTER_CN = re.compile(r"(?P<part>晚上|下午|夜里|夜间)?\s*(?P<h>\d{1,2})\s*点\s*(?:以|之)?后")
_BEFORE_CN = re.compile(r"(?P<part>早上|上午|早晨|凌晨)?\s*(?P<h>\d{1,2})\s*点\s*(?:以|之)?前")
_AFTER_EN = re.compile(r"\bafter\s+(?P<h>\d{1,2})(?::\d{2})?\s*(?P<ampm>am|pm)?", re.IGNORECASE)
_BEFORE_EN = re.compile(r"\bbefore\s+(?P<h>\d{1,2})(?::\d{2})?\s*(?P<ampm>am|pm)?", re.IGNORECASE)
_AFTER_WORK = re.compile(r"下班(?:以|之)?后|after (?:work|hours|office hours)|out of office hours", re.IGNORECASE)


@dataclass(frozen=True)
class QuietRules:
    """What a user's applicable lines rule out: weekends, and the hours ``[after, 24)`` and
    ``[0, before)`` (None: no such bound). ``sources`` are the lines' texts (for the reply)."""

    weekends: bool = False
    after: int | None = None
    before: int | None = None
    sources: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return self.weekends or self.after is not None or self.before is not None


def _applies(line: HotMemoryLine, user_id: str, study_role: str | None) -> bool:
    if line.section not in _SECTIONS:
        return False
    if line.role_tag is None or line.role_tag == user_id:
        return True  # everyone's line, or the user's own (tagged with their user id)
    if study_role is not None and line.role_tag.strip().lower() == study_role.strip().lower():
        return True
    return bool(user_id) and user_id in line.text


def _hour(h: str, ampm: str | None, part: str | None, *, evening: bool) -> int | None:
    hour = int(h)
    if ampm:
        hour = hour % 12 + (12 if ampm.lower() == "pm" else 0)
    elif part in ("晚上", "下午", "夜里", "夜间") or (evening and part is None and hour < 12 and hour >= 5):
        hour = hour + 12 if hour < 12 else hour
    return hour if 0 <= hour <= 24 else None


def quiet_rules(user_id: str, study_role: str | None, lines: Sequence[HotMemoryLine]) -> QuietRules:
    """The quiet times the hot-memory ``lines`` set for ``user_id`` (see the module docstring)."""
    rules = QuietRules()
    for line in lines:
        if not _applies(line, user_id, study_role):
            continue
        text = line.text
        if not (re.search(_NEGATION, text, re.IGNORECASE) and re.search(_CONTACT, text, re.IGNORECASE)):
            continue
        found = False
        if _WEEKEND.search(text):
            rules, found = replace(rules, weekends=True), True
        after = _AFTER_CN.search(text) or _AFTER_EN.search(text)
        if after:
            hour = _hour(after.group("h"), after.groupdict().get("ampm"), after.groupdict().get("part"), evening=True)
            if hour is not None:
                rules = replace(rules, after=hour if rules.after is None else min(rules.after, hour))
                found = True
        elif _AFTER_WORK.search(text):
            rules = replace(rules, after=18 if rules.after is None else min(rules.after, 18))
            found = True
        before = _BEFORE_CN.search(text) or _BEFORE_EN.search(text)
        if before:
            hour = _hour(before.group("h"), before.groupdict().get("ampm"), before.groupdict().get("part"),
                         evening=False)
            if hour is not None:
                rules = replace(rules, before=hour if rules.before is None else max(rules.before, hour))
                found = True
        if found:
            rules = replace(rules, sources=(*rules.sources, text))
    return rules


def _morning(rules: QuietRules) -> time:
    return time(max(MORNING.hour, rules.before or 0), 0)


def next_allowed(local: datetime, rules: QuietRules) -> datetime:
    """``local`` (naive local date-time) when the rules allow it, else the next allowed time: the
    next Monday's morning for a weekend, the end of the quiet hours otherwise."""
    at = local
    for _ in range(21):
        if rules.weekends and at.weekday() >= 5:
            at = datetime.combine(at.date() + timedelta(days=7 - at.weekday()), _morning(rules))
            continue
        if rules.after is not None and at.hour >= rules.after:
            at = datetime.combine(at.date() + timedelta(days=1), _morning(rules))
            continue
        if rules.before is not None and at.hour < rules.before:
            at = datetime.combine(at.date(), _morning(rules))
            continue
        return at
    return at


def shift_recurrence(rec: Recurrence, rules: QuietRules) -> Recurrence:
    """``rec`` moved out of the quiet times: weekend days dropped (a weekend-only recurrence moves to
    Monday morning, an every-day one to weekdays); a time of day inside quiet hours moves to the
    morning. Unchanged when nothing is ruled out."""
    out = rec
    if rules.weekends and rec.day_of_month is None:
        days = rec.weekdays or tuple(range(7))
        kept = tuple(d for d in days if d < 5)
        if not kept:
            morning = _morning(rules)
            out = Recurrence(morning.hour, morning.minute, weekdays=(0,))
        elif kept != days:
            out = replace(out, weekdays=kept)
    hour = out.hour
    if (rules.after is not None and hour >= rules.after) or (rules.before is not None and hour < rules.before):
        morning = _morning(rules)
        out = replace(out, hour=morning.hour, minute=morning.minute)
    return out


__all__ = ["MORNING", "QuietRules", "next_allowed", "quiet_rules", "shift_recurrence"]
