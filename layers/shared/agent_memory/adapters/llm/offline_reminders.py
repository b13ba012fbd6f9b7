"""How the offline provider reads a reminder request in a chat message: the time phrase and the
thing to be reminded of, as the model would pass them to the ``schedule_reminder`` tool.

Only the split is read here; the time phrase itself is parsed by the reminder use case (as it is
for the real model's tool call), so the two agree on what a phrase means.

A reminder verb is a request only when the user asks for it now (:func:`asks_for_reminder`):
reported speech ("你上次说以后会每天提醒我…", "you said you'd remind me …"), a question about an
earlier promise ("你不是说会提醒我吗？", "didn't you promise to remind me …?") and a complaint about
a reminder ("你之前说会提醒我，结果没提醒", "you forgot to remind me …") ask for none.
"""

from __future__ import annotations

import re

#: A number of a time phrase: digits or Chinese numerals (``9``, ``九``, ``十二``).
_NUM = r"(?:[0-9]{1,2}|[零〇一二两三四五六七八九十]{1,3})"
#: The Chinese parts of the day a time may follow (``早上9点``, ``晚上8点半``).
_CN_PART = r"凌晨|清晨|早上|早晨|上午|中午|下午|傍晚|晚上|今晚|明晚|夜里|晚"

_CN_REMIND = re.compile(r"(?:请|帮我|麻烦)?\s*(?:(?:提醒|通知)(?:我们?|一下我?|下我)|叫我)")
_EN_REMIND = re.compile(r"\bremind\s+(?:me|us)\b(?:\s+to\b)?", re.IGNORECASE)

#: Where a sentence ends; where a clause ends.
_SENTENCE_END = re.compile(r"[。！？；;!?]|\.(?=\s|$)")
_CLAUSE_END = re.compile(r"[，,、：:]|" + _SENTENCE_END.pattern)
#: The clause before a reminder verb tells of it rather than asks for it: someone said or promised
#: it (reported speech), it was not done or forgotten, or the assistant's doing is asked about
#: (你会 / 你不是 / 你怎么 …: a question about the reminder, not a request for one).
_TOLD = re.compile(
    r"说(?!明)|讲|答应|承诺|保证|约好|"
    r"(?:没有?|没再|(?<!别)(?<!不要)忘(?:记)?了?)\S{0,2}$|"
    r"(?:你|您|助手)\S{0,8}?(?:会|应该|本来|不是|怎么|为什么|为啥|咋)|"
    r"\b(?:said|say|says|told|promised?|agreed|supposed to|meant to|going to|were to|did|didn'?t|never|"
    r"(?<!don't )(?<!do not )forg[eo]t\w*|haven'?t|hasn'?t|wasn'?t|weren'?t|why(?! don'?t)|how come)\b",
    re.IGNORECASE,
)
#: A question asked as a request ("能不能每周一提醒我…？", "…提醒我填日志好吗？", "could you remind me …?")
_ASKS = re.compile(r"能不能|可不可以|能否|可以|帮我|请|麻烦|记得|好吗|好不好|行吗|行不行|"
                   r"\b(?:can|could|would|will) you\b|\bplease\b|\bpls\b|\b(?:ok|okay)\W*$", re.IGNORECASE)
_QUESTION_END = re.compile(r"(?:[吗么呢]\s*[。.]?|[?？])\s*$")


def _sentence_at(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` holding ``text[start:end]`` (the sentence end kept)."""
    begun = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    after = _SENTENCE_END.search(text, end)
    return text[begun: after.end() if after else len(text)]


def _asked(text: str, verb: re.Match[str]) -> bool:
    """The reminder verb ``verb`` of ``text`` is asked for now (see the module docstring)."""
    clause = _CLAUSE_END.split(text[: verb.start()])[-1]
    if _TOLD.search(clause):
        return False
    sentence = _sentence_at(text, verb.start(), verb.end())
    return not _QUESTION_END.search(sentence) or bool(_ASKS.search(sentence))


def _first_asked(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    return next((m for m in pattern.finditer(text) if _asked(text, m)), None)


def asks_for_reminder(message: str) -> bool:
    """True when ``message`` asks the assistant to remind the user (提醒我 / remind me), not when it
    reports, asks about or complains of a reminder (see the module docstring)."""
    text = " ".join(message.strip().split())
    return _first_asked(_CN_REMIND, text) is not None or _first_asked(_EN_REMIND, text) is not None


def _clause_before(text: str, at: int) -> str:
    """The last non-empty clause of the sentence before ``at`` ("上次的事别漏了，每周五下午4点" ->
    "每周五下午4点")."""
    begun = max((m.end() for m in _SENTENCE_END.finditer(text, 0, at)), default=0)
    clauses = [c for c in _CLAUSE_END.split(text[begun:at]) if c.strip()]
    return clauses[-1] if clauses else ""


def split_reminder_request(message: str) -> tuple[str, str] | None:
    """``(when phrase, what)`` of a reminder request in a chat message, or None when it asks for no
    reminder: ``每周一早上9点提醒我清理Query`` -> (``每周一早上9点``, ``清理Query``);
    ``remind me on Friday at 4pm to send the weekly report`` -> (``on Friday at 4pm``,
    ``send the weekly report``). Only a verb the message asks for counts (:func:`asks_for_reminder`):
    ``你上次说以后会每天提醒我填日志`` -> None."""
    text = " ".join(message.strip().split())
    m = _first_asked(_CN_REMIND, text)
    if m:
        before, after = _clause_before(text, m.start()), text[m.end():]
        what = after.strip(" ，,。.!！?？")
        when = before.strip(" ，,。.!！")
        if not when:  # 提醒我明天10点给P005打电话: the time follows the verb
            at_m = leading_time_span_cn(what)
            if at_m:
                when, what = what[:at_m], what[at_m:].strip(" ，,。")
        return (when, what) if when and what else None
    m = _first_asked(_EN_REMIND, text)
    if m:
        rest = text[m.end():].strip()
        before = _clause_before(text, m.start()).strip(" ,.")
        to = re.search(r"\bto\b", rest)
        if to and rest[: to.start()].strip():
            when, what = rest[: to.start()].strip(" ,"), rest[to.end():].strip(" ,.")
        elif to is None or to.start() > 0:
            what, when = rest, before
            tail = re.search(r"\s+(?:at|on|in|every|tomorrow|today|tonight|next)\b.*$", rest, re.IGNORECASE)
            if tail and not when:
                what, when = rest[: tail.start()].strip(" ,."), tail.group(0).strip()
        else:
            what = rest[to.end():].strip(" ,.")
            when = before
            tail = re.search(r"\s+(?:at|on|in|every|tomorrow|today|tonight|next)\b.*$", what, re.IGNORECASE)
            if tail and not when:
                what, when = what[: tail.start()].strip(" ,."), tail.group(0).strip()
        when = re.sub(r"^(?:please|pls)\b[, ]*", "", when, flags=re.IGNORECASE).strip()
        what = what.strip(" ,.!?")
        return (when, what) if when and what else None
    return None


def leading_time_span_cn(text: str) -> int:
    """Length of the leading time phrase of ``text`` (``明天上午10点给P005打电话`` -> 7), 0 when none."""
    m = re.match(
        rf"(?:(?:每(?:个)?(?:周|星期|礼拜)[一二三四五六日天、,和]+|每天|每日|每月{_NUM}[号日]|工作日|今天|明天|后天|大后天|今晚|明晚"
        rf"|(?:下下|下个?|这个?|本)?(?:周|星期|礼拜)[一二三四五六日天]|{_NUM}月{_NUM}[日号]|{_NUM}(?:分钟|小时|天)[之以]?后)\s*)*"
        rf"(?:(?:{_CN_PART})?\s*(?:{_NUM})\s*(?:点|:|：)\s*(?:半|[0-9]{{1,2}}分?|[一二三四五六七八九十]{{1,3}}分)?)?",
        text,
    )
    return m.end() if m and m.end() > 0 else 0


__all__ = ["asks_for_reminder", "leading_time_span_cn", "split_reminder_request"]
