"""When a reminder fires, read from a time phrase: a deterministic parser of Chinese and English.

A ``when`` is either ONE local date-time (``明天上午10点``, ``on Friday at 4pm``, ``in 2 hours``,
``2026-12-04T16:00``) or a recurrence (``每周一早上9点``, ``every Monday 09:00``, ``每天下午5点``,
``every weekday at 8:30``, ``每月1号``). Times are wall-clock times of the project's zone; a
phrase without a time of day means 09:00. The parser knows kinds of phrases (relative days,
weekdays, calendar dates, offsets, recurrences, parts of the day), never particular sentences.
The result is a :class:`~agent_memory.domain.when.When`; the scheduler adapter writes it as a
schedule expression.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta

from agent_memory.domain.when import Recurrence, When

#: The time of day of a phrase that names a day but no time.
DEFAULT_TIME = time(9, 0)

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9, "十": 10}
_CN_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}
_EN_WEEKDAY = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
_EN_MONTH = {m: i + 1 for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}


def _cn_number(text: str) -> int | None:
    """``9`` / ``九`` / ``十二`` / ``二十三`` -> int (None when not a number)."""
    if text.isdigit():
        return int(text)
    if not text or any(ch not in _CN_DIGITS for ch in text):
        return None
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_CN_DIGITS[tens] if tens else 1) * 10 + (_CN_DIGITS[ones] if ones else 0)
    value = 0
    for ch in text:
        value = value * 10 + _CN_DIGITS[ch]
    return value


# ----------------------------------------------------------------------------- time of day
_NUM = r"(?:[0-9]{1,2}|[零〇一二两三四五六七八九十]{1,3})"
_CN_PART = r"凌晨|清晨|早上|早晨|上午|中午|下午|傍晚|晚上|今晚|明晚|夜里|晚"
_CN_TIME = re.compile(
    rf"(?P<part>{_CN_PART})?\s*(?P<h>{_NUM})\s*(?:点|點|时|:|：)\s*"
    rf"(?:(?P<half>半)|(?P<quarter>一刻|三刻)|(?P<m>[0-9]{{1,2}}|[零〇一二三四五六七八九十]{{1,3}})\s*分?)?"
)
_CJK_TEXT = re.compile(r"[\u4e00-\u9fff]")
_CN_PART_ONLY = re.compile(rf"(?P<part>{_CN_PART})")
_EN_TIME = re.compile(
    r"\b(?:at\s+)?(?P<h>[0-9]{1,2})(?::(?P<m>[0-9]{2}))?\s*(?P<ampm>a\.?m\.?|p\.?m\.?)?(?![0-9/-])",
    re.IGNORECASE,
)
_EN_NAMED = re.compile(r"\b(noon|midday|midnight)\b", re.IGNORECASE)
_EN_PART = re.compile(r"\b(?:in the\s+)?(morning|afternoon|evening|tonight|night)\b", re.IGNORECASE)
_PART_DEFAULT = {"凌晨": 6, "清晨": 7, "早上": 9, "早晨": 9, "上午": 9, "中午": 12, "下午": 15, "傍晚": 18,
                 "晚上": 20, "今晚": 20, "明晚": 20, "夜里": 22, "晚": 20,
                 "morning": 9, "afternoon": 15, "evening": 19, "tonight": 20, "night": 21}
_PM_PARTS = {"下午", "傍晚", "晚上", "今晚", "明晚", "夜里", "晚", "afternoon", "evening", "tonight", "night"}


def _apply_part(hour: int, part: str | None) -> int:
    if part in _PM_PARTS and hour < 12:
        return hour + 12
    if part == "中午" and hour < 6:
        return hour + 12
    return hour


def _time_of_day(text: str) -> tuple[time | None, bool]:
    """The time of day in ``text`` and whether one was found. Raises ValueError for 25点 / 13pm."""
    m = _CN_TIME.search(text)
    if m and not m.group("part") and ":" in m.group(0) and not _CJK_TEXT.search(text):
        m = None  # "2:15 pm": an English time, read below with its am/pm
    if m:
        hour = _cn_number(m.group("h"))
        minute = 30 if m.group("half") else 15 if m.group("quarter") == "一刻" else 45 if m.group("quarter") else (
            _cn_number(m.group("m")) if m.group("m") else 0)
        if hour is None or minute is None:
            raise ValueError("unreadable time of day")
        hour = _apply_part(hour, m.group("part"))
        return _checked(hour, minute), True
    named = _EN_NAMED.search(text)
    if named:
        return (time(0, 0) if named.group(1).lower() == "midnight" else time(12, 0)), True
    for m in _EN_TIME.finditer(text):
        has_at = m.group(0).lower().startswith("at")
        if not (m.group("m") or m.group("ampm") or has_at):
            continue
        hour, minute = int(m.group("h")), int(m.group("m") or 0)
        ampm = (m.group("ampm") or "").lower().replace(".", "")
        if ampm:
            if hour > 12 or hour == 0:
                raise ValueError("an hour of 1-12 goes with am/pm")
            hour = hour % 12 + (12 if ampm == "pm" else 0)
        else:
            part = _EN_PART.search(text)
            hour = _apply_part(hour, part.group(1).lower() if part else None)
        return _checked(hour, minute), True
    part_match = _CN_PART_ONLY.search(text) or _EN_PART.search(text)
    if part_match:
        return time(_PART_DEFAULT[part_match.group(1).lower()], 0), True
    return None, False


def _checked(hour: int, minute: int) -> time:
    if not (0 <= hour <= 23 and 0 <= minute <= 59):
        raise ValueError("no such time of day")
    return time(hour, minute)


# ----------------------------------------------------------------------------- recurrences
_CN_EVERY_WEEK = re.compile(r"每(?:个)?(?:周|星期|礼拜)(?P<days>[一二三四五六日天末、,，和及与至到\-~]+)")
_CN_EVERY_DAY = re.compile(r"每(?:一)?天|每日|天天|每晚|每早")
_CN_WORKDAYS = re.compile(r"(?:每个?)?工作日")
_CN_EVERY_MONTH = re.compile(rf"每(?:个)?月(?P<d>{_NUM})(?:号|日)")
_EN_EVERY = re.compile(
    r"\bevery\s+(?P<what>day|morning|evening|night|weekday|workday|business day|"
    r"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*(?:\s*(?:,|and|&)\s*)?)+)",
    re.IGNORECASE,
)
_EN_DAILY = re.compile(r"\b(?:daily|each day)\b", re.IGNORECASE)
_EN_WEEKDAYS = re.compile(r"\b(?:on\s+)?weekdays\b", re.IGNORECASE)
_EN_MONTHLY = re.compile(r"\bevery month on the\s+(?P<d>[0-9]{1,2})(?:st|nd|rd|th)?\b|\bmonthly on the\s+"
                         r"(?P<d2>[0-9]{1,2})(?:st|nd|rd|th)?\b", re.IGNORECASE)


def _cn_days(spec: str) -> tuple[int, ...]:
    """``一`` / ``一、三、五`` / ``一至五`` / ``末`` -> weekday numbers."""
    if spec.startswith("末"):
        return (5, 6)
    range_match = re.fullmatch(r"([一二三四五六日天])[至到\-~]([一二三四五六日天])", spec)
    if range_match:
        lo, hi = _CN_WEEKDAY[range_match.group(1)], _CN_WEEKDAY[range_match.group(2)]
        return tuple(range(lo, hi + 1))
    return tuple(dict.fromkeys(_CN_WEEKDAY[ch] for ch in spec if ch in _CN_WEEKDAY))


def _recurrence(text: str, at: time) -> Recurrence | None:
    if m := _CN_EVERY_MONTH.search(text):
        day = _cn_number(m.group("d"))
        if day is None or not 1 <= day <= 31:
            raise ValueError("no such day of the month")
        return Recurrence(at.hour, at.minute, day_of_month=day)
    if m := _EN_MONTHLY.search(text):
        day = int(m.group("d") or m.group("d2"))
        if not 1 <= day <= 31:
            raise ValueError("no such day of the month")
        return Recurrence(at.hour, at.minute, day_of_month=day)
    if m := _CN_EVERY_WEEK.search(text):
        days = _cn_days(m.group("days"))
        if days:
            return Recurrence(at.hour, at.minute, weekdays=days)
    if _CN_WORKDAYS.search(text) and ("每" in text or text.strip().startswith("工作日")):
        return Recurrence(at.hour, at.minute, weekdays=(0, 1, 2, 3, 4))
    if _CN_EVERY_DAY.search(text):
        return Recurrence(at.hour, at.minute)
    if m := _EN_EVERY.search(text):
        what = m.group("what").lower()
        if what in ("day", "morning", "evening", "night"):
            return Recurrence(at.hour, at.minute)
        if what in ("weekday", "workday", "business day"):
            return Recurrence(at.hour, at.minute, weekdays=(0, 1, 2, 3, 4))
        days = tuple(dict.fromkeys(_EN_WEEKDAY[d[:3]] for d in re.findall(r"(mon|tue|wed|thu|fri|sat|sun)", what)))
        return Recurrence(at.hour, at.minute, weekdays=days)
    if _EN_DAILY.search(text):
        return Recurrence(at.hour, at.minute)
    if _EN_WEEKDAYS.search(text) and re.search(r"\b(?:every|on)\b", text, re.IGNORECASE):
        return Recurrence(at.hour, at.minute, weekdays=(0, 1, 2, 3, 4))
    return None


# ----------------------------------------------------------------------------- one-time dates
_ISO = re.compile(r"(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})(?:[T ](?P<h>\d{1,2}):(?P<mi>\d{2})(?::\d{2})?)?")
_CN_DATE = re.compile(rf"(?:(?P<y>\d{{4}})年)?(?P<mo>{_NUM})月(?P<d>{_NUM})(?:日|号)")
_CN_DAY_OF_MONTH = re.compile(rf"(?<![月\d])(?P<d>{_NUM})(?:号)")
_CN_NEXT_MONTH_DAY = re.compile(rf"下个?月(?P<d>{_NUM})(?:号|日)")
_EN_DAY_OF_MONTH = re.compile(r"\bon the\s+(?P<d>[0-9]{1,2})(?:st|nd|rd|th)\b", re.IGNORECASE)
_NEXT_WEEK = re.compile(r"下(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天])|\bnext week\b", re.IGNORECASE)
_CN_REL_DAY = {"前天": -2, "昨天": -1, "昨晚": -1, "今天": 0, "今日": 0, "今晚": 0,
               "明天": 1, "明日": 1, "明早": 1, "明晚": 1, "后天": 2,
               "大后天": 3}
_CN_WEEKDAY_REF = re.compile(r"(?P<which>下下|下个?|这个?|本)?(?:周|星期|礼拜)(?P<d>[一二三四五六日天])")
_CN_OFFSET = re.compile(rf"(?P<n>{_NUM}|半)\s*(?P<unit>分钟|小时|个小时|个半小时|天|周|星期|个星期)(?:之?后|以后)")
_EN_OFFSET = re.compile(r"\bin\s+(?P<n>an?|\d+)\s+(?P<unit>minute|min|hour|hr|day|week)s?\b", re.IGNORECASE)
_EN_REL_DAY = re.compile(r"\b(yesterday|today|tonight|tomorrow|the day after tomorrow)\b", re.IGNORECASE)
_EN_WEEKDAY_REF = re.compile(r"\b(?:(?P<which>next|this|on|coming)\s+)?(?P<d>mon|tue|wed|thu|fri|sat|sun)[a-z]*\b",
                             re.IGNORECASE)
_EN_DATE = re.compile(
    r"\b(?:(?P<mon1>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?P<d1>\d{1,2})(?:st|nd|rd|th)?"
    r"|(?P<d2>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon2>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*)"
    r"(?:,?\s+(?P<y>\d{4}))?\b",
    re.IGNORECASE,
)


def _weekday_date(today: date, weekday: int, which: str | None) -> date:
    """The date of ``weekday`` (0 = Monday): ``next``/``下`` = in next week; ``this``/``这``/``本`` = in
    this week; none = the next one from today (today itself when still ahead)."""
    monday = today - timedelta(days=today.weekday())
    if which and which.startswith("下下"):
        return monday + timedelta(days=14 + weekday)
    if which and (which.startswith("下") or which.lower() == "next"):
        return monday + timedelta(days=7 + weekday)
    if which and (which.startswith(("这", "本")) or which.lower() == "this"):
        return monday + timedelta(days=weekday)
    ahead = (weekday - today.weekday()) % 7
    return today + timedelta(days=ahead)


def _year_for(month: int, day: int, now: datetime) -> int:
    """This year, or next year when that date has passed."""
    try:
        candidate = date(now.year, month, day)
    except ValueError:
        return now.year + 1
    return now.year if candidate >= now.date() else now.year + 1


def _offset(text: str, now: datetime, at: time | None) -> datetime | None:
    """``30分钟后`` / ``in 2 hours`` / ``3天后``: now plus the offset (a day offset keeps ``at``)."""
    if m := _CN_OFFSET.search(text):
        n_text, unit = m.group("n"), m.group("unit")
        count = 0.5 if n_text == "半" else _cn_number(n_text)
        if count is None:
            raise ValueError("unreadable offset")
        if "半" in unit:
            count = float(count) + 0.5
        delta = (timedelta(minutes=1) if unit.startswith("分") else timedelta(days=1) if unit == "天"
                 else timedelta(hours=1) if "小时" in unit else timedelta(weeks=1))
        by_day = unit in ("天", "周", "星期", "个星期")
    elif m := _EN_OFFSET.search(text):
        count = 1 if m.group("n").lower() in ("a", "an") else int(m.group("n"))
        word = m.group("unit").lower()
        delta = {"minute": timedelta(minutes=1), "min": timedelta(minutes=1), "hour": timedelta(hours=1),
                 "hr": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}[word]
        by_day = word in ("day", "week")
    else:
        return None
    moment = now + delta * count
    if by_day and at is not None:
        return datetime.combine(moment.date(), at)
    return moment.replace(second=0, microsecond=0)


def _calendar_date(text: str, now: datetime) -> tuple[date | None, time | None]:
    """An explicit date (ISO, ``12月10日``, ``Dec 5``) and the ISO form's time, if any."""
    if m := _ISO.search(text):
        at = _checked(int(m.group("h")), int(m.group("mi"))) if m.group("h") is not None else None
        return date(int(m.group("y")), int(m.group("mo")), int(m.group("d"))), at
    if m := _CN_DATE.search(text):
        month, dom = _cn_number(m.group("mo")), _cn_number(m.group("d"))
        if month is None or dom is None:
            raise ValueError("unreadable date")
        return date(int(m.group("y")) if m.group("y") else _year_for(month, dom, now), month, dom), None
    if m := _EN_DATE.search(text):
        month = _EN_MONTH[(m.group("mon1") or m.group("mon2")).lower()[:3]]
        dom = int(m.group("d1") or m.group("d2"))
        return date(int(m.group("y")) if m.group("y") else _year_for(month, dom, now), month, dom), None
    return None, None


def _relative_day(text: str, today: date) -> tuple[date | None, time | None]:
    """``明天`` / ``tomorrow`` / ``下周三`` / ``on Friday`` / ``15号`` and the evening of ``今晚``/``tonight``."""
    for word in sorted(_CN_REL_DAY, key=len, reverse=True):
        if word in text:
            return today + timedelta(days=_CN_REL_DAY[word]), time(20, 0) if word in ("今晚", "明晚") else None
    if m := _EN_REL_DAY.search(text):
        word = m.group(1).lower()
        day = today + timedelta(days={"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}.get(word, 2))
        return day, time(20, 0) if word == "tonight" else None
    if m := _CN_WEEKDAY_REF.search(text):
        return _weekday_date(today, _CN_WEEKDAY[m.group("d")], m.group("which")), None
    if m := _EN_WEEKDAY_REF.search(text):
        return _weekday_date(today, _EN_WEEKDAY[m.group("d").lower()], m.group("which")), None
    if m := _CN_NEXT_MONTH_DAY.search(text):
        dom = _cn_number(m.group("d"))
        year, month = (today.year + 1, 1) if today.month == 12 else (today.year, today.month + 1)
        if dom is None or not 1 <= dom <= 31:
            raise ValueError("no such day of the month")
        return date(year, month, dom), None
    if _NEXT_WEEK.search(text):  # next week, no day named: its Monday
        return _weekday_date(today, 0, "next"), None
    if m := (_CN_DAY_OF_MONTH.search(text) or _EN_DAY_OF_MONTH.search(text)):
        dom = _cn_number(m.group("d"))
        if dom is None or not 1 <= dom <= 31:
            raise ValueError("no such day of the month")
        month, year = today.month, today.year
        if dom < today.day:
            month, year = (1, year + 1) if month == 12 else (month + 1, year)
        return date(year, month, dom), None
    return None, None


def _one_time(text: str, now: datetime, at: time | None) -> datetime | None:
    moment = _offset(text, now, at)
    if moment is not None:
        return moment
    day, day_at = _calendar_date(text, now)
    if day is None:
        day, day_at = _relative_day(text, now.date())
        unqualified = (_CN_WEEKDAY_REF.search(text) or _EN_WEEKDAY_REF.search(text))
        if (day is not None and day == now.date() and unqualified and not unqualified.group("which")
                and datetime.combine(day, at or day_at or DEFAULT_TIME) <= now):
            day += timedelta(days=7)  # "星期三 8点" said on a Wednesday afternoon: next Wednesday
    at = at or day_at
    if day is None:
        if at is None:
            return None
        # A time alone: today at that time, or tomorrow when it has passed.
        candidate = datetime.combine(now.date(), at)
        return candidate if candidate > now else candidate + timedelta(days=1)
    return datetime.combine(day, at or DEFAULT_TIME)


def parse_when(text: str, now_local: datetime) -> When | None:
    """Parse a ``when`` phrase (Chinese or English, or ISO ``YYYY-MM-DDTHH:MM``) against the naive
    local ``now_local``.

    Returns:
        A :class:`When`, or None when ``text`` names no time at all.

    Raises:
        ValueError: a phrase that names an impossible time (``25点``, ``13pm``, ``2月30日``).
    """
    text = " ".join(text.split())
    at, has_time = _time_of_day(text)
    recurrence = _recurrence(text, at or DEFAULT_TIME)
    if recurrence is not None:
        return When(recurrence=recurrence)
    moment = _one_time(text, now_local, at if has_time else None)
    return When(at=moment) if moment is not None else None


__all__ = ["DEFAULT_TIME", "parse_when"]
