"""How the offline provider reads a reminder request in a chat message: the time phrase and the
thing to be reminded of, as the model would pass them to the ``schedule_reminder`` tool.

Only the split is read here; the time phrase itself is parsed by the reminder use case (as it is
for the real model's tool call), so the two agree on what a phrase means.
"""

from __future__ import annotations

import re

#: A number of a time phrase: digits or Chinese numerals (``9``, ``九``, ``十二``).
_NUM = r"(?:[0-9]{1,2}|[零〇一二两三四五六七八九十]{1,3})"
#: The Chinese parts of the day a time may follow (``早上9点``, ``晚上8点半``).
_CN_PART = r"凌晨|清晨|早上|早晨|上午|中午|下午|傍晚|晚上|今晚|明晚|夜里|晚"

_CN_REMIND = re.compile(r"(?:请|帮我|麻烦)?\s*(?:(?:提醒|通知)(?:我们?|一下我?|下我)|叫我)")
_EN_REMIND = re.compile(r"\bremind\s+(?:me|us)\b(?:\s+to\b)?", re.IGNORECASE)


def split_reminder_request(message: str) -> tuple[str, str] | None:
    """``(when phrase, what)`` of a reminder request in a chat message, or None when it asks for no
    reminder: ``每周一早上9点提醒我清理Query`` -> (``每周一早上9点``, ``清理Query``);
    ``remind me on Friday at 4pm to send the weekly report`` -> (``on Friday at 4pm``,
    ``send the weekly report``)."""
    text = " ".join(message.strip().split())
    m = _CN_REMIND.search(text)
    if m:
        before, after = text[: m.start()], text[m.end():]
        what = after.strip(" ，,。.!！?？")
        when = before.strip(" ，,。.!！")
        if not when:  # 提醒我明天10点给P005打电话: the time follows the verb
            at_m = leading_time_span_cn(what)
            if at_m:
                when, what = what[:at_m], what[at_m:].strip(" ，,。")
        return (when, what) if when and what else None
    m = _EN_REMIND.search(text)
    if m:
        rest = text[m.end():].strip()
        before = text[: m.start()].strip(" ,.")
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


__all__ = ["leading_time_span_cn", "split_reminder_request"]
