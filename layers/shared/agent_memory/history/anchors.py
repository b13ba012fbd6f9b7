"""Time anchors of history questions -> the ISO-week range of the history book they name.

A question's period is resolved deterministically, in the project's time zone, from kinds of
wording (Chinese, English, code-switched), never from sample sentences:

- relative: 上周 / last week, 上上周, 最近 / 过去 / 近 / 前 N 周 (past N weeks), N 周前 (N weeks ago),
  上个月 / last month, 最近 N 个月 (past N months), N 个月前, 上季度 / last quarter, 本季度, 上半年 /
  下半年 / first or second half (of this or last year), 今年以来 / so far this year, 去年 / last
  year, 去年这个时候 / this time last year, and a month's 上旬 / 中旬 / 下旬 (月初, 月底);
- absolute: a month (三月份, in March, 去年11月), a quarter (一季度, Q1, 2025年第三季度), an ISO week
  or a range of them (第46周, week 46, W46, wk 15, 2026-W10 到 W14, weeks 8-11), dates and date
  ranges (3月1日到15日, between March 2 and March 20, 2026-02-02 to 2026-02-20);
- around an event (:mod:`agent_memory.history.anchor_events`): a Chinese festival from the
  ``holidays`` calendar library, Christmas, or a project milestone whose date a hot-memory line
  gives, with 前后 / around, 前 / before, 后 / after, 以来 / since, 那周 / during;
- two periods compared (W23 和 W30, 春节前后和国庆前后比, 上个月和这个月比, Q3 vs Q1): each of any kind
  above, or the current month so far; only their weeks are loaded.

The rules (docs/architecture.md, "History"): a period of days covers every ISO week holding one of
its days; a range ends at the last complete week (the history book has no report of the current
week) and a period that has not begun by then is no anchor; a month, quarter, week or festival
without a year is its latest occurrence that has begun; 前后 / around is ± 7 days, 前 / before and
后 / after the 14 days before or after, 以来 / since runs to now. Future and current-period words
(下周, next month, 这周) are no history anchor: the caller keeps its default (the newest weeks).
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from agent_memory.history.anchor_events import event_period, has_event_word

#: One number, in digits or Chinese numerals (两, 十二, 二十三), or a few.
NUM = r"(?:\d{1,3}|[一二两三四五六七八九十]{1,3}|几)"
_CN = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_EN_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3, "several": 3}
_EN_NUMBER = r"(?:\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of|few|several)"
MONTHS_EN = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
             "november", "december")
_MONTH_EN = (r"(?:" + "|".join(m[:3] + f"(?:{m[3:]})?" for m in MONTHS_EN if m not in ("march", "may"))
             + r"|(?:" + "|".join(f"(?<={w})" for w in ("in ", "by ", "of ", "since ", "early ", "until ", "during ",
                                                         "mid-", "mid ", "late ", "from ", "to "))
             + r")(?:march|may)|(?:march|may)(?=\s+\d))(?![a-z])")
_MONTH_ZH = r"(?:1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"


def number(text: str) -> int | None:
    """``12`` / ``十二`` / ``两`` / ``two`` / ``几`` (3) -> int; None when not a number."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    if text in _EN_NUM:
        return _EN_NUM[text]
    if text == "几":
        return 3
    if not text or any(ch not in _CN for ch in text):
        return None
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_CN[tens] if tens else 1) * 10 + (_CN[ones] if ones else 0)
    return _CN[text] if len(text) == 1 else None


def iso_week(day: date) -> str:
    """``YYYY-Www`` of a date (ISO 8601 week-numbering year)."""
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


@dataclass(frozen=True)
class WeekRange:
    """The history a question names.

    Attributes:
        first / last: ISO weeks ``YYYY-Www``, inclusive, ``first <= last``; ``last`` is at most the
            last complete week before the question (local time).
        start / end: the local days the phrase named, ``end`` already cut at that week's Sunday.
        label: what the context view shows: the phrase, its days and its weeks.
    """

    first: str
    last: str
    start: date
    end: date
    label: str
    #: two or more periods named apart and compared ("W23 和 W30 比较一下"): their days, oldest
    #: first, each already cut at the last complete week; empty: the one period ``start..end``.
    parts: tuple[tuple[date, date], ...] = ()

    def weeks(self) -> list[str]:
        """Every ISO week of the range (of its ``parts`` only, when it has them), oldest first."""
        out: list[str] = []
        for start, end in self.parts or ((self.start, self.end),):
            monday = start - timedelta(days=start.weekday())
            while monday <= end:
                if iso_week(monday) not in out:
                    out.append(iso_week(monday))
                monday += timedelta(days=7)
        return sorted(out)


@dataclass(frozen=True)
class Today:
    """The local calendar a question is read in: ``day`` (local date) and the last complete week's Sunday."""

    day: date

    @property
    def last_sunday(self) -> date:
        return self.day - timedelta(days=self.day.weekday() + 1)

    @property
    def monday(self) -> date:
        return self.day - timedelta(days=self.day.weekday())


Period = tuple[date, date]


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _shift_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _latest_year(month: int, day: int, today: date) -> int:
    """The latest year in which ``month``/``day`` is not after ``today``."""
    return today.year if (month, day) <= (today.month, today.day) else today.year - 1


def _month_word(text: str) -> int | None:
    if text[:3] in {m[:3] for m in MONTHS_EN}:
        return [m[:3] for m in MONTHS_EN].index(text[:3]) + 1
    value = number(text)
    return value if value is not None and 1 <= value <= 12 else None


def _year_prefix(text: str, at: int, today: date) -> int | None:
    """A year written just before position ``at`` (2025年, 去年, 今年, 前年), else None."""
    before = text[max(0, at - 6): at]
    m = re.search(r"(\d{4})\s*年\s*$|(去年|今年|前年)\s*$", before)
    if m is None:
        return None
    if m.group(1):
        return int(m.group(1))
    return today.year - {"今年": 0, "去年": 1, "前年": 2}[m.group(2)]


# ------------------------------------------------------------------ ISO weeks
_ISO_WEEK = re.compile(
    r"(?:(?P<y1>\d{4})\s*-?\s*)?(?:第\s*(?P<n1>" + NUM + r")\s*(?:周|个?星期)"
    r"|(?<![a-z])w(?:ee)?ks?\s*(?P<m1>\d{1,2})(?!\d)"
    r"|(?<![a-z0-9])w\s?(?P<k1>\d{1,2})(?![\d.]))"
    r"(?:\s*(?:到|至|和|与|~|-|–|to|and|through|until)\s*(?:(?P<y2>\d{4})\s*-?\s*)?"
    r"(?:第\s*(?P<n2>" + NUM + r")\s*(?:周|个?星期)|\bw(?:ee)?k?s?\s*(?P<m2>\d{1,2})\b|w?\s?(?P<k2>\d{1,2})(?![\d.])))?"
)


def _week_monday(year: int, week: int) -> date | None:
    try:
        return date.fromisocalendar(year, week, 1)
    except ValueError:
        return None


def _latest_complete_week(week: int, today: Today) -> int | None:
    """The ISO year whose week ``week`` is the latest one complete by ``today``."""
    for year in (today.day.isocalendar()[0], today.day.isocalendar()[0] - 1):
        monday = _week_monday(year, week)
        if monday is not None and monday + timedelta(days=6) <= today.last_sunday:
            return year
    return None


def iso_weeks(text: str, today: Today) -> Period | None:
    """第46周 / week 46 / W46 / 2026-W10 到 W14 / weeks 8-11: the days of those ISO weeks."""
    m = _ISO_WEEK.search(text)
    if m is None:
        return None
    first = number(m["n1"] or m["m1"] or m["k1"] or "")
    last = number(m["n2"] or m["m2"] or m["k2"] or "") if (m["n2"] or m["m2"] or m["k2"]) else first
    if first is None or last is None or not (1 <= first <= 53 and 1 <= last <= 53):
        return None
    year2 = int(m["y2"] or m["y1"] or 0) or _latest_complete_week(last, today)
    if year2 is None:
        return None
    year1 = int(m["y1"]) if m["y1"] else (year2 if first <= last else year2 - 1)
    start, end = _week_monday(year1, first), _week_monday(year2, last)
    if start is None or end is None or start > end:
        return None
    return start, end + timedelta(days=6)


# ------------------------------------------------------------------ dates and months
_DATE_ISO = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:\s*(?:到|至|~|-|–|to|until|and)\s*(\d{4})-(\d{1,2})-(\d{1,2}))?")
_DAY_ZH = r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})"
_DATE_ZH = re.compile(
    r"(?<![\d十])(?P<m1>" + _MONTH_ZH + r")\s*月\s*(?P<d1>" + _DAY_ZH + r")\s*[日号]"
    r"(?:\s*(?:到|至|~|-|–)\s*(?:(?P<m2>" + _MONTH_ZH + r")\s*月\s*)?(?P<d2>" + _DAY_ZH + r")\s*[日号])?"
)
_DATE_EN = re.compile(
    r"(?<![a-z])(?P<m1>" + _MONTH_EN + r")\s+(?P<d1>\d{1,2})(?:st|nd|rd|th)?"
    r"(?:\s*(?:to|and|until|through|-|–)\s*(?:(?P<m2>" + _MONTH_EN + r")\s+)?(?P<d2>\d{1,2})(?:st|nd|rd|th)?\b)?"
)


def dates(text: str, today: Today) -> Period | None:
    """2026-02-02 to 2026-02-20 / 3月1日到15日 / between March 2 and March 20 / 4月7号."""
    m = _DATE_ISO.search(text)
    if m is not None:
        start = date(int(m[1]), int(m[2]), int(m[3]))
        return start, date(int(m[4]), int(m[5]), int(m[6])) if m[4] else start
    m = _DATE_ZH.search(text) or _DATE_EN.search(text)
    if m is None:
        return None
    month1, day1 = _month_word(m["m1"]), number(m["d1"])
    month2 = _month_word(m["m2"]) if m["m2"] else month1
    day2 = number(m["d2"]) if m["d2"] else day1
    if not (month1 and day1 and month2 and day2):  # unreadable, or a day 0
        return None
    year = _year_prefix(text, m.start(), today.day) or _latest_year(month1, day1, today.day)
    start = date(year, month1, day1)
    end = date(year + (month2 < month1), month2, day2)
    return (start, end) if start <= end else None


_PART = r"(?P<part>上旬|中旬|下旬|初|底|末|\s*(?:early|mid|late))?"
_PART_DAYS = {"上旬": (1, 10), "初": (1, 10), "early": (1, 10), "中旬": (11, 20), "mid": (11, 20),
              "下旬": (21, 31), "底": (21, 31), "末": (21, 31), "late": (21, 31)}
_REL_MONTH = re.compile(r"(?P<back>上上个?月|上个?月|last month|the month before last)" + _PART)
#: the start (January) or the end (December) of a year: 年初 / 去年年底 / the end of last year
_YEAR_END = re.compile(r"(?P<y>去年|今年|前年)?\s*(?P<w>年初|年底|年末|年尾)"
                       r"|(?P<e>start|beginning|end) of (?P<ey>this|last) year")
_NAMED_MONTH = re.compile(
    r"(?<![\d上下个第])(?P<m>" + _MONTH_ZH + r")\s*月份?(?![\d日号])" + _PART
    + r"|(?P<p>early |mid-?|late )?(?<![a-z])(?P<e>" + _MONTH_EN + r")(?!\s+\d)"
)


def _part_period(year: int, month: int, part: str | None) -> Period:
    start, end = date(year, month, 1), _month_end(year, month)
    if part:
        first, last = _PART_DAYS[part.strip().rstrip("-")]
        start, end = date(year, month, first), min(end, date(year, month, min(last, end.day)))
    return start, end


def months(text: str, today: Today) -> Period | None:
    """上个月(底) / last month / 三月份 / 9月中旬 / in March / 去年11月: that calendar month (or part)."""
    m = _REL_MONTH.search(text)
    if m is not None:
        back = 2 if m["back"].startswith("上上") or "before last" in m["back"] else 1
        first = _shift_months(today.day.replace(day=1), -back)
        return _part_period(first.year, first.month, m["part"])
    m = _YEAR_END.search(text)
    if m is not None:
        january = m["w"] == "年初" or m["e"] in ("start", "beginning")
        back = {"去年": 1, "前年": 2, "last": 1}.get(m["y"] or m["ey"] or "", 0)
        year = today.day.year - back if back or january else today.day.year - 1
        return (date(year, 1, 1), date(year, 1, 31)) if january else (date(year, 12, 1), date(year, 12, 31))
    m = _NAMED_MONTH.search(text)
    if m is None:
        return None
    month = _month_word(m["m"] or m["e"])
    if month is None:
        return None
    year = _year_prefix(text, m.start(), today.day) or _latest_year(month, 1, today.day)
    part = m["part"] if m["m"] else (m["p"] or "").strip().rstrip("-") or None
    return _part_period(year, month, part)


# ------------------------------------------------------------------ quarters, halves, years
_QUARTER = re.compile(
    r"(?P<rel>上上个?季度|上个?季度?|上一季度?|本季度|这个?季度|last quarter|previous quarter|this quarter)"
    r"|(?:(?P<y>\d{4})\s*年\s*)?第?(?P<n>[一二三四1-4])\s*季度|(?<![a-z0-9])q(?P<q>[1-4])(?![a-z0-9])(?:\s*(?P<qy>\d{4}))?"
)


def quarters(text: str, today: Today) -> Period | None:
    """上季度 / last quarter / 本季度 / 一季度 / Q1 / 2025年第三季度: that calendar quarter."""
    m = _QUARTER.search(text)
    if m is None:
        return None
    current = (today.day.month - 1) // 3
    if m["rel"]:
        back = 0 if m["rel"].startswith(("本", "这", "this")) else 2 if m["rel"].startswith("上上") else 1
        index = today.day.year * 4 + current - back
        year, quarter = divmod(index, 4)
    else:
        quarter = (number(m["n"]) if m["n"] else int(m["q"])) - 1  # type: ignore[operator]
        explicit = m["y"] or m["qy"]
        year = int(explicit) if explicit else _year_prefix(text, m.start(), today.day) or (
            today.day.year if quarter <= current else today.day.year - 1)
    return date(year, quarter * 3 + 1, 1), _month_end(year, quarter * 3 + 3)


_HALF = re.compile(
    r"(?P<zh>上半年|前半年|下半年|后半年)"
    r"|(?P<en>first|second) half(?: of)?(?: (?P<which>this|last|the) year)?|(?<![a-z0-9])h(?P<h>[12])(?![a-z0-9])"
    r"|(?P<whose>this|last) year'?s (?P<en2>first|second) half"
)


def halves(text: str, today: Today) -> Period | None:
    """上半年 / 去年下半年 / first half of this year / second half of last year / H1."""
    m = _HALF.search(text)
    if m is None:
        return None
    first_half = (m["zh"] or "") in ("上半年", "前半年") or m["en"] == "first" or m["h"] == "1" or m["en2"] == "first"
    last_year = m["which"] == "last" or m["whose"] == "last" or bool(re.search(r"last year", text[m.end():][:12]))
    year = (_year_prefix(text, m.start(), today.day) or today.day.year) - (1 if last_year else 0)
    return (date(year, 1, 1), date(year, 6, 30)) if first_half else (date(year, 7, 1), date(year, 12, 31))


_YEAR = re.compile(
    r"(?P<same>去年(?:这个|同一?)?(?:时候|时间|会儿|同期)|this time last year|(?P<ago>" + NUM + r"|a|one|two|three)\s*"
    r"(?:个)?(?:年|years?)\s*(?:前|以前|之前|ago))"
    r"|(?P<since>今年(?:以来|到现在)?|(?:so far )?this year(?: so far)?|year to date|since (?:the start of )?january)"
    r"|(?P<from>去年|前年|last year|the year before)\s*(?:以来|至今|到现在|until now|to date)"
    r"|since (?P<from_en>last year|the start of last year|the year before last)"
    r"|(?P<last>去年(?:全年|一整年|一年)?|last year|前年)|(?P<explicit>\d{4})\s*年(?!\s*\d)"
)


def years(text: str, today: Today) -> Period | None:
    """去年这个时候 (± 7 days) / 今年以来 / this year / 去年以来, since last year (to now) / 去年 /
    last year / 前年 / 2025年."""
    m = _YEAR.search(text)
    if m is None:
        return None
    if m["same"]:
        center = _shift_months(today.day, -12 * ((number(m["ago"]) or 1) if m["ago"] else 1))
        return center - timedelta(days=7), center + timedelta(days=7)
    if m["since"]:
        return date(today.day.year, 1, 1), today.day
    start = m["from"] or m["from_en"]
    if start:  # 去年以来 / since last year: from its first day to now
        back = 2 if start in ("前年", "the year before", "the year before last") else 1
        return date(today.day.year - back, 1, 1), today.day
    year = int(m["explicit"]) if m["explicit"] else today.day.year - (2 if m["last"] == "前年" else 1)
    return date(year, 1, 1), date(year, 12, 31)


# ------------------------------------------------------------------ relative weeks and spans
_SPAN = re.compile(
    r"(?P<zh>(?:最近|过去|近|前|这)\s*(?P<n>" + NUM + r"|半)\s*(?:个)?(?P<u>周|星期|礼拜|月|年|天|日))"
    r"|(?P<en>(?:past|last|previous|recent)\s+(?P<en_n>" + _EN_NUMBER + r")\s+(?P<en_u>weeks?|months?|days?))"
)
_AGO = re.compile(
    r"(?P<n>" + NUM + r")\s*(?:个)?(?P<u>周|星期|礼拜|月|天)(?:前|以前|之前)"
    r"|\b(?P<en_n>" + _EN_NUMBER + r")\s+(?P<en_u>weeks?|months?|days?)\s+ago\b"
)
_LAST_WEEK = re.compile(r"上上(?:个)?(?:周|星期|礼拜)|the week before last|上(?:个|一)?(?:周|星期|礼拜)|\blast week\b")


def _unit(unit: str) -> str:
    """``week`` / ``month`` / ``year`` / ``day`` of a unit word."""
    if unit[0] in "周星礼w":
        return "week"
    return "year" if unit == "年" else "day" if unit[0] in "天日d" else "month"


def _back(n: int | None, half: bool, unit: str, today: Today) -> Period | None:
    """The days of the last ``n`` units (``half``: half of one unit) up to ``today``."""
    if unit == "week" and not half and n:
        return today.monday - timedelta(days=7 * n), today.last_sunday
    if unit == "day" and n:
        return today.day - timedelta(days=n), today.day
    if half:  # 半年 = six months, 半个月 = 15 days, 半周 = 3 days
        start = {"year": _shift_months(today.day, -6), "month": today.day - timedelta(days=15)}.get(
            unit, today.day - timedelta(days=3))
        return start, today.day
    months_back = {"year": 12, "month": 1}.get(unit, 0) * (n or 0)
    return (_shift_months(today.day, -months_back), today.day) if months_back else None


def spans(text: str, today: Today) -> Period | None:
    """最近两周 / past 3 weeks (the N weeks before this one) / 近三个月 / past 2 months (from the same
    date N months back) / N 周前, N weeks ago (that week) / N 个月前 (that month) / 上周 / 上上周."""
    m = _SPAN.search(text)
    if m is not None:
        period = _back(number(m["n"] or m["en_n"]), m["n"] == "半", _unit(m["u"] or m["en_u"]), today)
        if period is not None:
            return period
    m = _AGO.search(text)
    if m is not None:
        n = number(m["n"] or m["en_n"])
        unit = _unit(m["u"] or m["en_u"])
        if n and unit == "day":
            day = today.day - timedelta(days=n)
            return day, day
        if n:
            if unit == "week":
                monday = today.monday - timedelta(days=7 * n)
                return monday, monday + timedelta(days=6)
            first = _shift_months(today.day.replace(day=1), -n)
            return first, _month_end(first.year, first.month)
    m = _LAST_WEEK.search(text)
    if m is not None:
        back = 2 if m[0].startswith("上上") or "before last" in m[0] else 1
        monday = today.monday - timedelta(days=7 * back)
        return monday, monday + timedelta(days=6)
    return None


# ------------------------------------------------------------------ resolve
_FINDERS: tuple[tuple[str, Callable[[str, Today], Period | None]], ...] = (
    ("weeks", iso_weeks), ("dates", dates), ("halves", halves), ("quarters", quarters), ("months", months),
    ("spans", spans), ("years", years),
)


def _find(finder: Callable[[str, Today], Period | None], text: str, today: Today) -> Period | None:
    """``finder``'s period, or None when the words name a day no calendar has (2026-02-30, 13月1日,
    2027-02-29): such a phrase anchors nothing, it is never an error of the turn."""
    try:
        return finder(text, today)
    except (ValueError, OverflowError):
        return None


def normalise(text: str) -> str:
    """NFKC + casefold + single spaces (full-width digits and letters become ASCII)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


#: The reference day :func:`names_period` reads a phrase against: every period a phrase can name
#: (a month, a week, a festival of a recent year) lies before it, so only the wording decides.
_REFERENCE_DAY = Today(date(2100, 6, 30))


def names_period(text: str) -> bool:
    """True when ``text`` names a past period of any kind the resolver reads (relative, absolute,
    a festival), whatever the date: the intent classifier's time-anchor detection. Milestones need
    the project's hot memory and are left to :func:`resolve_anchor`; future and current-period
    words (下周, next month, 这周) name none."""
    norm = normalise(text)
    if has_event_word(norm, ()):
        return True
    return any(_find(finder, norm, _REFERENCE_DAY) is not None for _, finder in _FINDERS)


#: the word between two periods a question compares or names together ("上半年和下半年比", "Q1 vs Q2",
#: "compare week 23 with week 30")
_BETWEEN = re.compile(r"和|与|跟|同|对比|相比|\bvs\.?|\bversus\b|\bcompared (?:to|with)\b|\band\b|\bwith\b")
#: words that make two named ends one span ("between March 2 and March 20", "从W23到W30之间")
_SPAN_WORDS = re.compile(r"\bbetween\b|\bfrom\b|之间|从")


#: the current month or quarter so far, a period only when compared with a past one ("上个月和这个月比",
#: "last month vs this month"): alone it is no history anchor (the module docstring)
_CURRENT = re.compile(r"这个月|本月|\bthis month\b")


def _side_period(side: str, today: Today, milestones: Sequence[str]) -> Period | None:
    """The period one side of a comparison names: an event or a milestone, else the first finder
    that reads one, else the current month so far (:data:`_CURRENT`); None: none."""
    if has_event_word(side, milestones):
        event = event_period(side, today.day, milestones)
        if event is not None:
            return event[1]
    period = next((p for _, finder in _FINDERS if (p := _find(finder, side, today)) is not None), None)
    if period is None and _CURRENT.search(side):
        period = today.day.replace(day=1), today.day
    return period


def _compared(text: str, today: Today, milestones: Sequence[str] = ()) -> tuple[str, tuple[Period, ...]] | None:
    """Two periods a question compares or names together, each on its own side of "和 / vs / and /
    with" (the first such word with a period on both sides: "入组和脱落在春节前后与国庆前后比" splits at
    与): the two periods, oldest first (only they are loaded: "W23 和 W30" is two weeks, not the eight
    from W23 to W30; "春节前后和国庆前后比" the weeks around each festival); with a span word
    ("between ... and ...", 从 / 之间) the one span from the first's start to the second's end. A side
    may name an event, a milestone, any period the finders read, or the current month so far. None
    unless both sides of one such word name a period."""
    for between in _BETWEEN.finditer(text):
        first = _side_period(text[: between.start()], today, milestones)
        second = _side_period(text[between.end():], today, milestones) if first is not None else None
        if first is None or second is None:
            continue
        if _SPAN_WORDS.search(text):
            return "range", ((min(first[0], second[0]), max(first[1], second[1])),)
        return "compare", tuple(sorted((first, second)))
    return None


def resolve_anchor(question: str, now: datetime, time_zone: str,
                   milestones: Sequence[str] = ()) -> WeekRange | None:
    """The ISO-week range a history question names, or None when it names no past period.

    Args:
        question: the user's message (any language; never logged).
        now: when it was asked, timezone-aware (any zone; read in ``time_zone``).
        time_zone: the project's IANA zone: weeks and days are the project's local ones.
        milestones: hot-memory lines (their text) that may date a project milestone named in the
            question ("首例入组：2025-10-28", "SIV on 2025-09-22").

    Returns:
        A :class:`WeekRange` ending no later than the last complete week, or None: no anchor, a
        future or current-period phrase, or a period that has not begun before the current week.
        Deterministic; no I/O (the festival calendar is a library, imported only when a festival
        is named).

    Raises:
        ValueError: ``now`` is naive. ``zoneinfo.ZoneInfoNotFoundError``: unknown ``time_zone``.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    today = Today(now.astimezone(ZoneInfo(time_zone)).date())
    text = normalise(question)
    found = _named_periods(text, today, milestones)
    if found is None:
        return None
    name, named = found
    parts = tuple((start, min(end, today.last_sunday)) for start, end in named)
    parts = tuple(p for p in parts if p[0] <= p[1])
    if not parts:
        return None
    start, end = parts[0][0], max(p[1] for p in parts)
    first, last = iso_week(start), iso_week(end)
    days = ", ".join(f"{a.isoformat()}..{b.isoformat()}" for a, b in parts)
    return WeekRange(first=first, last=last, start=start, end=end, label=f"{name}: {days} ({first}..{last})",
                     parts=parts if len(parts) > 1 else ())


def _named_periods(text: str, today: Today, milestones: Sequence[str]) -> tuple[str, tuple[Period, ...]] | None:
    """The kind and the period(s) of days normalised ``text`` names, in the order of precedence: two
    periods compared (events, milestones and relative periods included), an event or milestone, then
    the first finder that reads one; None: none."""
    compared = _compared(text, today, milestones)
    if compared is not None:
        return compared
    if has_event_word(text, milestones):
        event = event_period(text, today.day, milestones)
        if event is not None:
            return event[0], (event[1],)
    for name, finder in _FINDERS:
        period = _find(finder, text, today)
        if period is not None:
            return name, (period,)
    return None


__all__ = ["WeekRange", "iso_week", "names_period", "normalise", "number", "resolve_anchor"]
