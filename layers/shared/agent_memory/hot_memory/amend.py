"""A statement that changes a line without naming the line's subject itself: the subject and the
line's current value are named earlier in the same message, as a complaint ("晚上8点那个依从性提醒我
老是错过。改到下午5点半吧", "The SAS files keep bouncing off the mail filter. Going forward just drop
the listings into the shared drive"), or the statement adds fields to the line and says the rest
stays ("AE汇总就名字和日期太少了。以后每例再加上严重程度和处理措施，其他不变").

Used by :mod:`agent_memory.hot_memory.merge`: :func:`amendment` where the statement's own words
find no line of its scope, :func:`kept_details` for every new value of a line's subject. The new
line is the old one with the new value put in place of the old value, or, where that cannot be
done cleanly, with the change said after it ("…；改为：…"), so the details the speaker did not
change stay in memory (docs/architecture.md, "Hot memory": a replacement keeps what the speaker
left as it was). Deterministic; nothing is logged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_memory.domain.models import HotMemoryLine
from agent_memory.hot_memory.analysis import (
    VALUE_PATTERNS,
    changes_value,
    language_of,
    nfkc,
    output_kinds,
    specific_grams,
    subject_grams,
    values,
)
from agent_memory.hot_memory.statement_lexicon import COMPLAINT, FALLS_SHORT

#: how an output reaches its reader: a new channel answers a complaint about a delivery and back
#: ("附件老被拦" -> "放共享盘"; "by email" -> "into the shared drive")
_ROUTE = frozenset({"channel", "delivery"})
#: the statement adds fields or content to what the line already lists
_ADDS = re.compile(r"加上|再加|也加|添上|补上|(?<!提醒我)(?<!提醒)(?<!记得)(?<!让她们)(?<!让他们)带上|多加|增加|"
                   r"加一[列项栏个行]|写上|标上|\badd\b|"
                   r"\balso (?:include|show|list|give)\b|\binclude\b", re.IGNORECASE)
#: the speaker keeps the rest of the line as it is
_REST_STAYS = re.compile(r"(?:其[他它余]|别的)\S{0,2}(?:不变|照旧|不动|一样|不用动|不要动|别动|不用改|不改)|"
                         r"其他都?照旧|"
                         r"\b(?:everything else|the rest|otherwise)\b[^.]{0,20}\b(?:same|as is|stays?|unchanged)\b",
                         re.IGNORECASE)


#: a value of the line said to stay ("提前两周这个不变", "the 9 am time stays"): the message changes the rest
_VALUE_STAYS = re.compile(r"(?:这个|这条|这点|那个)?(?:不变|照旧|不动|保持不变|还是一样)|"
                          r"\b(?:stays?|remains?|unchanged)\b", re.IGNORECASE)


def _keeps_a_value_of(message: str, line: str) -> bool:
    """The message says one of ``line``'s current values stays as it is ("…。提前两周这个不变")."""
    current = values(line)
    for m in _VALUE_STAYS.finditer(message):
        said = values(message[max(0, m.start() - 12): m.start()])
        if any(said[f] & current[f] for f in said.keys() & current.keys()):
            return True
    return False


@dataclass(frozen=True)
class Amendment:
    """A line a statement changes and the line that takes its place.

    Attributes:
        target: the AI line the statement changes (same scope).
        text: the new line's text: the old line with the new value in place, or the old line and
            then what changes ("…；改为：…", "… Now: …", an addition after "；").
    """

    target: HotMemoryLine
    text: str


def _before(statement: str, message: str, *, unfound: str | None = None) -> str:
    """The part of ``message`` before ``statement`` (its first four word characters located in the
    NFKC text); ``unfound`` when the statement cannot be located (the whole message when None)."""
    norm, key = nfkc(message), re.sub(r"\W", "", nfkc(statement))[:4]
    at = re.search(r"\W*".join(map(re.escape, key)), norm) if key else None
    if at is None:
        return norm if unfound is None else unfound
    return norm[: at.start()]


def _names_current_value(context: str, line: str) -> set[str]:
    """The value families whose current value in ``line`` the context names ("晚上8点那个提醒…")."""
    said, current = values(context), values(line)
    return {family for family in said.keys() & current.keys() if said[family] & current[family]}


def names_current_value(statement: str, message: str, line: str) -> bool:
    """The part of ``message`` before ``statement`` names a current value of ``line`` ("早上8点那份
    名单我没法看。改成中午12点发我"): the message speaks of that line."""
    context = _before(statement, message, unfound="")
    return bool(context) and not _PRAISED.search(context) and bool(_names_current_value(context, line))


def _changes(statement: str, line: str, named: set[str]) -> bool:
    """``statement`` sets a new value for a family the line sets (or a new route where the context
    complained about the route or the file)."""
    new, current = values(statement), values(line)
    if any(new[f] != current[f] for f in new.keys() & current.keys()):
        return True
    return bool(new.keys() & _ROUTE) and bool(current.keys() & (_ROUTE | {"format"})) and bool(named)


def _about(context: str, line: str, least: int = 1) -> bool:
    """The context and the line share ``least`` particular words / bigrams or named outputs once
    their values are out (the subject of the complaint, not "周四下午" of another meeting nor "这周"
    or "清单", which every line has)."""
    named_outputs = (output_kinds(context) & output_kinds(line)) - {"list"}  # "周报", "reminders"
    return len(specific_grams(context) & specific_grams(line)) + len(named_outputs) >= least


#: the words of a request ("能不能…"), a standing cue and a change verb ("改到…")
_REQUEST_WORDS = r"能不能|可不可以|能否"
_CUE_WORDS = r"以后|今后"
_CHANGE_VERBS = r"改到|改成|改为|换成|挪到|调到"
#: how a change or a request opens ("改到…", "能不能…", "以后…"): not kept after "改为："
_OPENING = re.compile(rf"^(?:{_CUE_WORDS}|之后|往后|{_REQUEST_WORDS}|麻烦|就|再|都)*(?:{_CHANGE_VERBS}|改)?")
#: change words around a new value ("能不能改到…吧", "make it … instead"): no content of their own
_CHANGE_WORDS = re.compile(rf"{_CUE_WORDS}|{_REQUEST_WORDS}|麻烦|{_CHANGE_VERBS}|提前到|还是|直接|就|再|都|"
                           r"吧|呢|吗|啊|哈|"
                           r"\b(?:from now on|going forward|please|make it|make them|instead|switch to|change to|"
                           r"move to|actually|could|would|can|come|go out|arrive|send (?:it|them)|the)\b",
                           re.IGNORECASE)
#: a request's form ("能不能…？", "可不可以…"): not kept in the line it becomes
_ASKING = re.compile(rf"{_REQUEST_WORDS}|[吗？?]+$")


#: a part of an output said to be of no use ("写了也白写", "nobody reads it"): the statement says what replaces it
_USELESS = re.compile(r"白写|没用|用不上|没人看|不看的|划过去|跳过去|"
                      r"\bnobody reads\b|\buseless\b|\bskip (?:it|that part)\b", re.IGNORECASE)


#: the line's output praised or acknowledged before the statement ("中午那份名单刚收到了，挺好。然后…"):
#: what follows is a new instruction, not a change of that line
_PRAISED = re.compile(r"挺好|很好|不错|好用|收到了|没问题|\b(?:great|thanks|works (?:well|fine)|looks good)\b",
                      re.IGNORECASE)


#: the kinds of value that say when together (a day, a part of the day, an hour)
_WHEN = frozenset({"weekday", "daypart", "clock"})


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """Where ``pattern`` stands in ``text`` (a clock hour with its half or minutes: "5点半")."""
    out = []
    for m in pattern.finditer(nfkc(text).casefold()):
        end = m.end()
        tail = re.match(r"半|[0-9]{1,2}分", text[end:])
        out.append((m.start(), end + (tail.end() if tail else 0)))
    return out


def _same_verb(old: str, new: str) -> bool:
    """Two values whose words carry their verb open with the same verb ("发邮件" / "发企业微信", "by
    email" / "by WeCom"): one can stand in the other's place."""
    first = (lambda v: v[:1]) if language_of(old) == "zh" else (lambda v: (v.split() or [""])[0].casefold())
    return bool(first(old)) and first(old) == first(new)


def _substituted(line: str, statement: str) -> str | None:
    """``line`` with each value ``statement`` changes put in place of the old one ("给CRC的访视提醒提前3天发，
    用中文写" + "访视提醒改成提前一周发" -> "给CRC的访视提醒提前一周发，用中文写"), when each changed kind stands
    once in both and the statement says nothing else; else None."""
    if len(nfkc(line)) != len(line) or len(nfkc(statement)) != len(statement):
        return None  # the value patterns read the NFKC text: its offsets must be the text's
    new, old = values(statement), values(line)
    changed = [f for f in new.keys() & old.keys() if new[f] != old[f]]
    verb_laden = {"channel", "delivery"} | ({"arrangement"} if language_of(line) != "zh" else set())
    bare = _CHANGE_WORDS.sub(" ", statement)
    if not changed or len(subject_grams(bare) - subject_grams(line)) > 1:
        return None
    if set(changed) & _WHEN and (old.keys() & _WHEN) - new.keys():
        return None  # "周一上午9点前" -> "周日晚上": the old hour would stay with the new day
    edits = []
    for family in changed:
        was, said = _spans(VALUE_PATTERNS[family], line), _spans(VALUE_PATTERNS[family], statement)
        if len(was) != 1 or len(said) != 1:
            return None
        value = statement[said[0][0]: said[0][1]]
        if family in verb_laden and not _same_verb(line[was[0][0]: was[0][1]], value):
            return None  # their words carry the verb ("通过微信" / "发我邮箱"): said after the line
        if value.endswith("s") and value.isascii() and not line[was[0][0]: was[0][1]].endswith("s"):
            value = value[:-1]  # "on Thursday mornings" in place of "every Friday afternoon": one of them
        edits.append((was[0], value))
    text = line
    for (start, end), value in sorted(edits, reverse=True):
        text = text[:start] + value + text[end:]
    return text


def _joined(line: str, statement: str, *, added: bool) -> str:
    """The old line with the change said after it, in the line's language; an earlier change of the
    same kinds of value is dropped ("A；改为：周一发" then "周三发" -> "A；改为：周三发")."""
    if not added:
        clean = _substituted(line, statement)
        if clean is not None:
            return clean
    for mark in ("；改为：", ". Now: "):
        base, _, earlier = line.partition(mark)
        if earlier and not added and values(earlier).keys() <= values(statement).keys():
            line = base
    if language_of(line) == "zh":
        said = _OPENING.sub("", statement.strip()).rstrip("？?") or statement.strip()
        return f"{line.rstrip('。. ')}；{'' if added else '改为：'}{said}"
    return f"{line.rstrip('. ')}. {'Also' if added else 'Now'}: {statement.strip()}"


def kept_details(statement: str, line: HotMemoryLine, *, known: bool = False) -> str:
    """The text of the line that takes the place of ``line`` when ``statement`` gives its subject a
    new value: the line with the new value in place of the old one when that can be done cleanly
    (:func:`_substituted`); else the statement itself (its request form "能不能…？" dropped) when it
    touches every clause of the line, else the old line with the change after it (so "周报改成周一上午
    8点前发" keeps "按中心列出入组数…" of the line it changes).

    ``known``: the caller found ``line`` as the statement's subject already (a change of mind of the
    same day, the speaker's one line of that kind), so the statement need not name it.

    Returns:
        The new line's text.
    """
    if not known and not changes_value(statement, line.text):
        return statement
    clean = _substituted(line.text, statement)
    if clean is not None:
        return clean
    if not subject_grams(_CHANGE_WORDS.sub(" ", statement)):
        # a bare new value ("发企业微信", "Send them on Mondays instead"): the line keeps its subject
        return _joined(line.text, statement, added=False)
    statement = _ASKING.sub("", statement.rstrip("。. ")) + ("。" if language_of(statement) == "zh" else ".")
    said = subject_grams(statement)
    clauses = [subject_grams(c) for c in re.split(r"[，,；;。.]\s*", nfkc(line.text)) if c.strip()]
    if len(clauses) < 2 or all(len(c & said) * 2 >= len(c) or len(c) < 2 for c in clauses):
        return statement  # every clause of the line is said again (or there is one): nothing to keep
    return _joined(line.text, statement, added=False)


def amendment(statement: str, message: str, lines: Sequence[HotMemoryLine]) -> Amendment | None:
    """The line among ``lines`` (AI lines of the statement's scope, oldest first) that ``statement``
    changes though its own words name no subject of a line: the part of ``message`` before it names
    the line's current value and the statement sets another value of that kind (or another route);
    or it complains the line says too little (or says the rest stays) and the statement adds to it.

    Args:
        statement: the cleaned statement (a candidate's text).
        message: the whole user message it was found in.
        lines: candidate lines, already filtered to the statement's section and scope.

    Returns:
        The newest such line and the text of the line replacing it, or None.
    """
    context, whole = _before(statement, message), nfkc(message)
    adds = bool(_ADDS.search(nfkc(statement))) and bool(
        _REST_STAYS.search(whole) or FALLS_SHORT.search(whole) or COMPLAINT.search(whole))
    for line in reversed(lines):
        if line.source == "admin":
            continue
        named = _names_current_value(context, line.text) if context.strip() and not _PRAISED.search(context) else set()
        # the value named with the line's subject or its kind of output ("早上8点那份名单…")
        about = _about(context, line.text) or bool(output_kinds(context) & output_kinds(line.text))
        if named and about and _changes(statement, line.text, named):
            return Amendment(line, _joined(line.text, statement, added=False))
        if _USELESS.search(context) and _about(context, line.text, least=2):
            # "表后面那段进展说明我每次都直接划过去，写了也白写。以后就给我那张表": that part goes
            return Amendment(line, _joined(line.text, statement, added=False))
        rest_stays = bool(_REST_STAYS.search(whole)) or _keeps_a_value_of(whole, line.text)
        if (adds or rest_stays) and _about(whole, line.text, least=1 if adds and rest_stays else 2):
            return Amendment(line, _joined(line.text, _REST_STAYS.sub("", statement).rstrip("，,。. "), added=True))
    return None


__all__ = ["Amendment", "amendment", "kept_details", "names_current_value"]
