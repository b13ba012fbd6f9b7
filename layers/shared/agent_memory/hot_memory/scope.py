"""Whom a standing preference is for (its scope), read from the sentence that states it.

docs/architecture.md, "Hot memory": a User Preferences line is tagged with the study role it
applies to (``[DM]``), with a user id when it is one user's own (``[u-wang]``), or untagged when
it is the whole team's. The tag is decided by MEANING, by the kind of reference the sentence
makes, not by its speaker alone:

- a study role as the AUDIENCE of the preference (role words of the field in Chinese and English,
  plurals included): the role a reply, a list or a report goes to ("给CRC的", "发给监查员", "for
  the DM", "reply to the CRA", "answers to any PI"), the role that asks or receives ("DM问…时",
  "When the CRCs ask", "Sub-Is should get", "所有CRC拿到的"), or the role in topic position at
  the head of the statement ("CRC的随访提醒…", "PI要的汇报…", "数据管理员那边…", "咱们统计组…")
  -> that role; a role named as the content of the line ("由PI确认", "PI签字后") is not one;
- the speaker as the receiver ("给我", "发我", "回复我", "提醒我", "my", "me") -> the speaker
  alone; the speaker as the subject ("我以后只看…", "I want…"; not an opinion such as "我觉得",
  "I think") -> the speaker alone when no other scope is named;
- the whole team (大家, 所有人, 各位, 全组, 整个项目组, 不管谁 / 谁问…都, 任何人, everyone,
  anyone, the whole team, all team members) -> everyone;
- none of these -> the speaker's study role (the preference of someone in that role).

Precedence: a named role, then the speaker as receiver, then the team, then the speaker as
subject. Deterministic and offline; nothing is logged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from agent_memory.hot_memory.analysis import nfkc

_I = re.IGNORECASE

ScopeKind = Literal["role", "speaker", "everyone"]

#: Role words of each study role (the values of ``StudyRole``), Chinese and English.
ROLE_WORDS: dict[str, str] = {
    "PI": r"«PIs?»|主要研究者|项目负责人|«principal investigators?»",
    "Sub-I": r"«Sub-?Is?»|研究医生|分研究者|协作研究者|«sub-?investigators?»",
    "CRC": r"«CRCs?»|研究协调员|协调员|«(?:study |research )?coordinators?»",
    "DM": r"«DMs?»|数据管理员|数据管理(?=那边|这边|组|部门)|«data managers?»",
    "CRA": r"«CRAs?»|监查员|监察员|«monitors»|(?<=the )monitor»|«clinical research associates?»",
    "Statistician": r"«(?:bio)?statisticians?»|统计师|统计(?=那边|这边|组|部门|人员)",
}
#: ASCII word edges: a Latin word beside a Han character ("给CRC的") still ends there
_EDGES = (("«", r"(?<![A-Za-z0-9])"), ("»", r"(?![A-Za-z0-9])"))


def _ascii_edges(pattern: str) -> str:
    for mark, edge in _EDGES:
        pattern = pattern.replace(mark, edge)
    return pattern


_ROLE = "|".join(f"(?P<r{i}>{_ascii_edges(p)})" for i, p in enumerate(ROLE_WORDS.values()))
_ROLES = tuple(ROLE_WORDS)
_QUANT_ZH = r"(?:所有|全部|各位?|每个|每位|任何)?的?"
_QUANT_EN = r"(?:the |any |all |every |each |our |us |the other )?"

#: the role as the audience of the preference (see the module docstring)
_AUDIENCE = (
    re.compile(rf"(?:给|发给|交给|回答|回复|答复|跟|对|为|帮)\s*{_QUANT_ZH}\s*(?:{_ROLE})", _I),
    re.compile(rf"(?:{_ROLE})们?(?:的时候|问|要|查|看|拿到|收到|需要|那边|这边|组)", _I),
    re.compile(rf"\b(?:for|to|reply(?:ing)? to|replies to|answers? to|respond(?:ing)? to|responses to|"
               rf"write to|talk(?:ing)? to){{1}}\s+{_QUANT_EN}(?:{_ROLE})", _I),
    # a verb of address with the role as its object ("answer the data managers", "remind CRCs")
    re.compile(rf"\b(?:answer|reply|respond|write|e-?mail|message|remind|tell|brief|update|notify|ping)(?:s|ing)?"
               rf"\s+{_QUANT_EN}(?:{_ROLE})", _I),
    re.compile(rf"(?:{_ROLE})(?:'s|s')?\s+(?:should|get|gets|ask|asks|want|wants|need|needs|request|requests|"
               rf"receive|receives|see|sees)\b", _I),
)
#: the head of a statement before its topic: lead words, a durable cue, "we", a quantifier
_HEAD = re.compile(
    r"^(?:[\s，,：:、]|对了|另外|还有|然后|所以|那么?|好的?|以后|今后|往后|从现在起|从现在开始|从今天起|从今往后|"
    r"我们|咱们|所有|全部|各|也|都|going forward|from now on|in future|also|so|and|please|our|the)*", _I)
_TOPIC = re.compile(rf"(?:{_ROLE})们?(?:的|要|那边|这边|组|以后|今后|从现在起|问|拿|收|看|查)", _I)

_RECEIVER_ZH = re.compile(r"(?:给|发|跟|对|回答|回复|答复|提醒|告诉|通知|帮|问|找)我(?!们)|我的|我这边|我负责")
_RECEIVER_EN = re.compile(r"(?<![A-Za-z'])(?:me|my|mine)(?![A-Za-z])", _I)
#: the speaker as the subject of a clause ("我要看时间线"); not of an opinion, a wish or a complaint about
#: themself ("我老事忘", "我没空看"): those give a reason, not the audience
_SUBJECT_ZH = re.compile(r"(?<![自])我(?!们|觉得|认为|建议|希望|想|说|看还是|看就|老|总|记不住|想不起|忘|没空|顾不上)")
_SUBJECT_EN = re.compile(r"\bI(?:'d|'m)?\b(?! (?:think|believe|suggest|guess|feel|propose|mean|reckon)\b)")
_EVERYONE = re.compile(
    r"大家|所有人|所有成员|全体|全组|全队|整个(?:项目)?组|项目组(?:所有|全体|每)|团队(?:里)?(?:每|所有|全)|各位|每个人|每位成员|"
    r"任何人|不管谁|无论谁|谁问|谁要|谁的[^，,。]{0,20}都|所有(?:的)?(?:回复|回答|答复|报告|汇报|提醒|导出)|"
    r"\b(?:everyone|everybody|anyone|anybody|whoever|all of us|all users|every user|team-?wide)\b|"
    r"\b(?:all|every|each) (?:team )?members?\b|\bthe (?:whole|entire) (?:team|study team|group)\b|"
    r"\bfor the team\b|\ball (?:replies|answers|reports|exports|reminders)\b",
    _I,
)


@dataclass(frozen=True)
class Scope:
    """A preference's scope: ``kind`` and, for ``role``, the study role."""

    kind: ScopeKind
    role: str | None = None

    def tag(self, *, speaker_id: str) -> str | None:
        """The line's role tag: the role, the speaker's user id, or None (everyone)."""
        if self.kind == "role":
            return self.role
        return speaker_id if self.kind == "speaker" else None


def _role_of(match: re.Match[str]) -> str:
    index = next(int(name[1:]) for name, value in match.groupdict().items() if value is not None)
    return _ROLES[index]


def named_role(sentence: str) -> str | None:
    """The study role ``sentence`` names as the audience of a preference, or None."""
    norm = nfkc(sentence)
    for pattern in _AUDIENCE:
        m = pattern.search(norm)
        if m is not None:
            return _role_of(m)
    head = _HEAD.match(norm)
    topic = _TOPIC.match(norm, head.end() if head else 0)
    return _role_of(topic) if topic is not None else None


def preference_scope(sentence: str) -> Scope | None:
    """The scope ``sentence`` names (see the module docstring), or None when it names none (the
    speaker's study role applies). ``sentence``: the sentence stating the preference, before any
    cleaning (lead words such as 大家 or "For the whole team:" carry the scope)."""
    role = named_role(sentence)
    if role is not None:
        return Scope("role", role)
    norm = _NOT_JUST_ME.sub(" ", nfkc(sentence))
    if _RECEIVER_ZH.search(norm) or _RECEIVER_EN.search(norm):
        return Scope("speaker")
    if _EVERYONE.search(norm):
        return Scope("everyone")
    if any(_SUBJECT_ZH.search(c) or _SUBJECT_EN.search(c) for c in _stating_clauses(norm)):
        return Scope("speaker")
    return None


#: a clause stating a standing preference (not a reason given after it: "…，我要看时间线")
_STANDING = re.compile(r"以后|今后|往后|从现在起|从今天起|每次|一律|总是|\bfrom now on\b|\bgoing forward\b|\balways\b|"
                       r"\bin future\b|\bfrom today\b", _I)


#: "not just me" widens the audience; it names no receiver
_NOT_JUST_ME = re.compile(r"\bnot (?:just|only)(?: for)? me\b|不只是我|不光是我|不止我", _I)


def _stating_clauses(norm: str) -> list[str]:
    """The clauses of ``norm`` that may state the preference: those with a standing cue or an
    instruction word (else the first); the speaker as the subject of another clause gives a reason
    or a circumstance ("周五下午我在外院，周报还是放周四上午吧"), not the scope."""
    clauses = [c for c in re.split(r"[，,。；;!?！？]", norm) if c.strip()]
    stating = [c for c in clauses if _STANDING.search(c) or _INSTRUCTS.search(c)]
    return stating or clauses[:1]


#: an instruction word in a clause (what the preference asks to be done)
_INSTRUCTS = re.compile(r"发|放|按|用|写|列|改|排|加|附|标|只|别|不要|不用|喜欢|偏好|习惯|希望|想要|"
                        r"\b(?:send|put|use|write|list|sort|add|keep|prefer|like|want|"
                        r"show|give|make|include|only|don'?t|never|always)\b", _I)


def scope_tag(sentence: str, *, speaker_role: str | None, speaker_id: str) -> str | None:
    """The role tag of a preference stated in ``sentence`` by ``speaker_id`` (study role
    ``speaker_role``): the named scope's tag, else the speaker's study role."""
    scope = preference_scope(sentence)
    return scope.tag(speaker_id=speaker_id) if scope is not None else speaker_role


__all__ = ["ROLE_WORDS", "Scope", "ScopeKind", "named_role", "preference_scope", "scope_tag"]
