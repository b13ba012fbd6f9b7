"""The project's team as the distillation's merge reads it: which study roles have a single holder,
and which member a preference names as its audience by name.

A preference the speaker states for themself ("发我邮箱", "I'd like …") is the preference of their
study role when they are its only holder (the project's one PI or statistician: the role's lines
are theirs), else of the speaker alone (tagged with their user id). A preference addressed to a
member by name ("给林医生做的AE汇总", "for Priya", "小刘问入组进度的时候") is that member's: their
study role when they hold it alone, else their user id. Names are staff display names from the member list, never a
patient's; nothing is logged.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent_memory.domain.models import Member

#: titles after a Chinese surname ("林医生", "周老师")
_ZH_TITLES = "医生|大夫|老师|主任|博士|教授|总|姐|哥|工"
#: words that make the name the audience ("给林医生…", "发给 Priya", "for Dr. Novak")
_TO = r"(?:给|发给|交给|转给|for|to)\s*(?:the\s+)?"


def _variants(name: str) -> list[str]:
    """Ways a colleague is called: the full name; a Chinese name's surname with a title and its
    given name; an English name's first name, last name and "Dr./Prof. <last>"."""
    name = " ".join(name.split())
    if not name:
        return []
    if re.fullmatch(r"[\u4e00-\u9fff]{2,4}", name):
        surname, given = name[0], name[1:]
        called = [re.escape(name), f"{re.escape(surname)}(?:{_ZH_TITLES})", f"[小老]{re.escape(surname)}"]
        return [*called, re.escape(given)] if len(given) >= 2 else called
    words = name.split()
    out = [re.escape(name)]
    if len(words) >= 2:
        out += [re.escape(words[0]), rf"(?:dr|prof)\.?\s*{re.escape(words[-1])}", re.escape(words[-1])]
    return out


@dataclass(frozen=True)
class Team:
    """The members of one project (``members``: as the member list gives them; empty: unknown, and
    every preference for oneself is the speaker's alone, as before the team was read)."""

    members: Sequence[Member] = ()
    _patterns: list[tuple[re.Pattern[str], Member]] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        for m in self.members:
            names = _variants(m.display_name)
            if names:
                pattern = re.compile(rf"{_TO}(?:{'|'.join(names)})(?![A-Za-z])|"
                                     rf"(?:{'|'.join(names)})(?:问|要|找你要|看)[^，,。]{{0,12}}的时候", re.IGNORECASE)
                self._patterns.append((pattern, m))

    @property
    def sole_roles(self) -> frozenset[str]:
        """The study roles exactly one member holds ("Other" excluded)."""
        counts = Counter(m.study_role for m in self.members)
        return frozenset(role for role, n in counts.items() if n == 1 and role != "Other")

    def own_tag(self, user_id: str | None, study_role: str | None) -> str | None:
        """The role tag of a preference ``user_id`` states for themself: their study role when they
        hold it alone, else their user id."""
        holder = any(m.user_id == user_id and m.study_role == study_role for m in self.members)
        return study_role if holder and study_role in self.sole_roles else user_id

    def named_audience(self, text: str, *, speaker: str | None) -> str | None:
        """The role tag of the member ``text`` names as the audience, or None; a speaker naming
        themself ("给王芳的提醒…" by 王芳) speaks of their own preference (``speaker``: their user id)."""
        for pattern, member in sorted(self._patterns, key=lambda p: p[1].user_id == speaker):
            if pattern.search(text):
                return self.own_tag(member.user_id, member.study_role)
        return None


__all__ = ["Team"]
