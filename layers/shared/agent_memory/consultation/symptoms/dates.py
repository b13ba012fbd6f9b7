"""Relative and absolute onset dates in symptom reports, resolved in code.

Every date is computed against the LOCAL calendar date of the message (``at_local`` is an aware
datetime in the project's time zone; only its ``.date()`` is used), never against the run date and
never against UTC: a message sent at 2026-03-10 07:30 +08:00 (= 2026-03-09T23:30Z) saying 昨天
means 2026-03-09.

Kinds of phrase (Chinese and English; text is NFKC-normalised and casefolded first):

- a named day: 今天 / 昨天 / 昨晚 / 前天 / 大前天 / today / yesterday / last night -> that date,
  exact;
- an offset: 三天前 / 3天前 / 两三天前 / 一周前 / 半个月前 / 两个月前 / 3 days ago / a week ago ->
  that date, approximate (a fuzzy count such as 两三天 gives a range);
- a duration that dates a symptom: 咳嗽三天了 / 发烧两天 / for 3 days -> the date that many days
  back, approximate;
- a calendar week: 上周 / 上周起 / 上个星期 / last week -> Monday..Sunday of the previous ISO
  week, approximate; 这周 / 本周 / this week -> Monday of this week..the message date;
- a weekday: 上周四 -> that day of last week; 周一 / 星期一 / on monday -> the latest such day not
  after the message date; exact;
- vague recent days: 前几天 / 前两天 / 这几天 / 这两天 / 近几天 / a few days ago -> a range,
  approximate;
- calendar dates: 3月2日 / 3月2号 / 2号 (day of this month, or of last month when it lies ahead)
  / 2026-03-02 / 2026年3月2日 -> exact (a date that would lie in the future rolls back a year or a
  month).

:func:`find_time_phrases` returns every phrase with its span; :func:`resolve_phrase` resolves one
phrase on its own (used to re-date what an LLM extractor quotes).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "俩": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}
_EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fourteen": 14, "couple of": 2,
               "a couple of": 2, "few": 3, "a few": 3, "several": 4}
_WEEKDAYS_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}
_WEEKDAYS_EN = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
                "sunday": 6}

#: A Chinese or Arabic count, including fuzzy pairs (两三, 三四, 2-3) and 十几 / 半.
_NUM_ZH = r"(?:\d+(?:\s*[-~到至]\s*\d+)?|[一二两俩三四五六七八九十半几]+)"
_SUFFIX = r"(?:开始|起|以来|起来|左右|前后|多|就)?"
_UNIT_DAY = r"(?:天|日)"
_UNIT_WEEK = r"(?:周|个星期|星期|个礼拜|礼拜)"
_UNIT_MONTH = r"(?:个月|个多月|月)"


@dataclass(frozen=True)
class ResolvedDate:
    """A resolved onset: ``start``..``end`` (equal for one day), ``approximate``."""

    start: date
    end: date
    approximate: bool

    @property
    def is_range(self) -> bool:
        """True when the phrase names a span of days (上周, 前几天)."""
        return self.start != self.end


@dataclass(frozen=True)
class TimePhrase:
    """A time phrase found in normalised text: span, raw phrase, resolution (``None`` when the
    phrase is only a marker such as 现在 / 最近), and whether it dates a change (today's
    worsening) rather than an onset."""

    start: int
    end: int
    phrase: str
    resolved: ResolvedDate | None


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def cn_number(token: str) -> tuple[float, float] | None:
    """A Chinese / Arabic count as ``(low, high)``: ``三`` -> (3, 3), ``两三`` -> (2, 3),
    ``十几`` -> (11, 19), ``半`` -> (0.5, 0.5), ``2-3`` -> (2, 3), ``几`` -> (2, 5)."""
    token = token.strip()
    if not token:
        return None
    m = re.fullmatch(r"(\d+)\s*[-~到至]\s*(\d+)", token)
    if m:
        return float(m.group(1)), float(m.group(2))
    if token.isdigit():
        return float(token), float(token)
    if token == "半":
        return 0.5, 0.5
    if token.startswith("几十") or token.endswith("几"):
        return _cn_vague_count(token)
    return _cn_exact_count(token)


def _cn_vague_count(token: str) -> tuple[float, float] | None:
    """A count made vague by 几: ``几`` / ``好几`` -> (2, 5), ``几十`` -> (20, 90), ``十几`` ->
    (11, 19), ``二十几`` -> (21, 29); ``None`` for any other head before 几."""
    if token in ("几", "好几"):
        return 2.0, 5.0
    if token.startswith("几十"):
        return 20.0, 90.0
    head = token[:-1]
    if head == "十":
        return 11.0, 19.0
    if head.endswith("十") and head[:-1] in _CN_DIGITS:
        tens = _CN_DIGITS[head[:-1]] * 10
        return float(tens + 1), float(tens + 9)
    return None


def _cn_exact_count(token: str) -> tuple[float, float] | None:
    """Chinese digits: a fuzzy pair of adjacent digits (两三, 三四), a tens number (十五, 二十,
    三十二) or digits read in place (二〇 -> 20); ``None`` when ``token`` is none of these."""
    # Two adjacent digits that are not a tens number: a fuzzy pair (两三, 三四).
    if len(token) == 2 and all(c in _CN_DIGITS for c in token) and "十" not in token:
        a, b = _CN_DIGITS[token[0]], _CN_DIGITS[token[1]]
        if b == a + 1:
            return float(a), float(b)
    if "十" in token:
        return _cn_tens(token)
    if all(c in _CN_DIGITS for c in token):
        value = 0
        for c in token:
            value = value * 10 + _CN_DIGITS[c]
        return float(value), float(value)
    return None


def _cn_tens(token: str) -> tuple[float, float] | None:
    """A number written with 十 (十 / 十五 / 二十 / 三十二), or ``None``."""
    left, _, right = token.partition("十")
    tens = _CN_DIGITS.get(left, 1) if left else 1
    if left and left not in _CN_DIGITS:
        return None
    ones = 0
    if right:
        if right not in _CN_DIGITS:
            return None
        ones = _CN_DIGITS[right]
    value = tens * 10 + ones
    return float(value), float(value)


def _day_span(today: date, low: float, high: float, unit_days: int, approximate: bool = True) -> ResolvedDate:
    """``low``..``high`` units back from ``today`` (earliest first)."""
    start = today - timedelta(days=round(high * unit_days))
    end = today - timedelta(days=round(low * unit_days))
    return ResolvedDate(start=start, end=end, approximate=approximate)


def _week_monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _latest_weekday(today: date, weekday: int) -> date:
    return today - timedelta(days=(today.weekday() - weekday) % 7)


def _calendar(today: date, month: int | None, day: int, year: int | None = None) -> ResolvedDate | None:
    try:
        if year is not None and month is not None:
            return _exact(date(year, month, day))
        if month is not None:
            candidate = date(today.year, month, day)
            if candidate > today:
                candidate = date(today.year - 1, month, day)
            return _exact(candidate)
        candidate = date(today.year, today.month, day)
        if candidate > today:
            prev_month_last = today.replace(day=1) - timedelta(days=1)
            candidate = date(prev_month_last.year, prev_month_last.month, day)
        return _exact(candidate)
    except ValueError:
        return None


def _exact(day: date) -> ResolvedDate:
    return ResolvedDate(start=day, end=day, approximate=False)


# Each rule: (pattern, resolver(match, today) -> ResolvedDate | None). Overlapping matches are
# settled in find_time_phrases: the longest wins.


_Resolver = Callable[[re.Match[str], date], "ResolvedDate | None"]


#: The date phrases, by kind (a data table): a pattern and how it resolves against the date it
#: is read on (``t``), in the order they are tried.
_RULE_TABLE: list[tuple[str, _Resolver]] = [
    # Absolute dates.
    (r"(\d{4})\s*[-/年.]\s*(\d{1,2})\s*[-/月.]\s*(\d{1,2})\s*[日号]?" + _SUFFIX,
     lambda m, t: _calendar(t, int(m.group(2)), int(m.group(3)), int(m.group(1)))),
    (r"(\d{1,2}|[一二三四五六七八九十]+)\s*月\s*(\d{1,2}|[一二三四五六七八九十]+)\s*[日号]" + _SUFFIX,
     lambda m, t: _calendar(t, _int(m.group(1)), _int(m.group(2)))),
    (r"(?<![\d.月])(\d{1,2})\s*[日号](?!\s*[-~到至前])" + _SUFFIX,
     lambda m, t: _calendar(t, None, int(m.group(1)))),
    (r"(?<![\d.月一二三四五六七八九十第])([一二三四五六七八九十]{1,3})\s*号" + _SUFFIX,
     lambda m, t: _calendar(t, None, _int(m.group(1)))),
    # Named days.
    (r"大前天(?:早上|上午|中午|下午|晚上|夜里|凌晨|半夜)?" + _SUFFIX, lambda m, t: _exact(t - timedelta(days=3))),
    (r"前(?:天|日|晚|夜)(?:早上|上午|中午|下午|晚上|夜里|凌晨|半夜)?" + _SUFFIX,
     lambda m, t: _exact(t - timedelta(days=2))),
    (r"(?:昨天|昨日|昨晚|昨夜|昨儿)(?:早上|上午|中午|下午|晚上|夜里|凌晨|半夜)?" + _SUFFIX,
     lambda m, t: _exact(t - timedelta(days=1))),
    (r"(?:今天|今日|今早|今晨|今晚|今儿|今天早上)(?:早上|上午|中午|下午|晚上|凌晨)?" + _SUFFIX,
     lambda m, t: _exact(t)),
    # Weeks.
    (r"(?:上|上个)(?:周|星期|礼拜)([一二三四五六日天末])" + _SUFFIX,
     lambda m, t: _exact(_week_monday(t) - timedelta(days=7) + timedelta(days=_WEEKDAYS_ZH[m.group(1)]))),
    (r"(?:上周|上个?星期|上个?礼拜)" + _SUFFIX,
     lambda m, t: ResolvedDate(_week_monday(t) - timedelta(days=7), _week_monday(t) - timedelta(days=1), True)),
    (r"(?:这周|本周|这个?星期|这个?礼拜|本星期)(?![一二三四五六日天末])" + _SUFFIX,
     lambda m, t: ResolvedDate(_week_monday(t), t, True)),
    (r"(?:这|本)?(?:周|星期|礼拜)([一二三四五六日天])" + _SUFFIX,
     lambda m, t: _exact(_latest_weekday(t, _WEEKDAYS_ZH[m.group(1)]))),
    # Offsets: N 天/周/月 前.
    (r"(" + _NUM_ZH + r")\s*" + _UNIT_DAY + r"(?:之前|以前|前)" + _SUFFIX,
     lambda m, t: _offset(t, m.group(1), 1)),
    (r"(" + _NUM_ZH + r")\s*" + _UNIT_WEEK + r"(?:之前|以前|前)" + _SUFFIX,
     lambda m, t: _offset(t, m.group(1), 7)),
    (r"(" + _NUM_ZH + r")\s*" + _UNIT_MONTH + r"(?:之前|以前|前)" + _SUFFIX,
     lambda m, t: _offset(t, m.group(1), 30)),
    (r"半个?月(?:之前|以前|前)" + _SUFFIX, lambda m, t: _day_span(t, 0.5, 0.5, 30)),
    # Vague recent days.
    (r"前(?:两|二|俩)天" + _SUFFIX, lambda m, t: _day_span(t, 2, 3, 1)),
    (r"前几天" + _SUFFIX, lambda m, t: _day_span(t, 2, 6, 1)),
    (r"(?:这|近|最近)(?:两|二|俩)天" + _SUFFIX, lambda m, t: _day_span(t, 0, 2, 1)),
    (r"(?:这|近|最近)几天" + _SUFFIX, lambda m, t: _day_span(t, 0, 5, 1)),
    (r"前(?:段|阵子|一阵子|一段)时间?" + _SUFFIX, lambda m, t: _day_span(t, 7, 30, 1)),
    # English.
    (r"\bthe day before yesterday\b", lambda m, t: _exact(t - timedelta(days=2))),
    (r"\b(?:since |from |starting )?(?:yesterday|last night)\b", lambda m, t: _exact(t - timedelta(days=1))),
    (r"\b(?:since |from |starting )?(?:today|this morning|tonight|this afternoon|this evening)\b",
     lambda m, t: _exact(t)),
    (r"\b(?:since |from |starting )?last week\b",
     lambda m, t: ResolvedDate(_week_monday(t) - timedelta(days=7), _week_monday(t) - timedelta(days=1), True)),
    (r"\b(?:since |from |starting )?this week\b", lambda m, t: ResolvedDate(_week_monday(t), t, True)),
    (r"\b(?:since |from |starting |on )?last (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
     lambda m, t: _exact(_week_monday(t) - timedelta(days=7) + timedelta(days=_WEEKDAYS_EN[m.group(1)]))),
    (r"\b(?:since |from |starting |on )(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
     lambda m, t: _exact(_latest_weekday(t, _WEEKDAYS_EN[m.group(1)]))),
    (r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fourteen|a couple of|"
     r"couple of|a few|few|several)\s+(days?|weeks?|months?)\s+ago\b",
     lambda m, t: _en_offset(t, m.group(1), m.group(2))),
    (r"\bfor (?:the (?:last|past) )?(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|"
     r"a few|several)\s+(days?|weeks?|months?)\b",
     lambda m, t: _en_offset(t, m.group(1), m.group(2))),
    (r"\b(?:a few|several|a couple of) days\b", lambda m, t: _day_span(t, 2, 5, 1)),
]


#: Durations ("咳嗽三天了", "发烧两天"): they date the symptom they follow, approximately.
_DURATION = re.compile(
    r"(?<![第每这那前近几])(?:已经|已|有|快|近|将近)?(" + _NUM_ZH + r")\s*(?:多|来)?\s*"
    r"(天|周|个星期|星期|个礼拜|礼拜|个多月|个月)(?:多|左右)?(?:了|啦)?(?!前|之前|以前|后|以后)"
)


def _int(token: str) -> int:
    got = cn_number(token)
    if got is None:
        raise ValueError(token)
    return int(got[0])


def _offset(today: date, count: str, unit_days: int) -> ResolvedDate | None:
    got = cn_number(count)
    if got is None:
        return None
    low, high = got
    return _day_span(today, low, high, unit_days)


def _en_offset(today: date, count: str, unit: str) -> ResolvedDate | None:
    count = count.strip()
    if count.isdigit():
        n = float(count)
        low, high = n, n
    elif count in ("a few", "few", "several", "a couple of", "couple of"):
        low, high = (2.0, 3.0) if "couple" in count else (2.0, 5.0)
    else:
        n = float(_EN_NUMBERS.get(count, 1))
        low, high = n, n
    unit_days = 1 if unit.startswith("day") else 7 if unit.startswith("week") else 30
    return _day_span(today, low, high, unit_days)


_RULES = [(re.compile(p), f) for p, f in _RULE_TABLE]


def find_time_phrases(text: str, at_local: datetime | date, *, normalised: bool = False) -> list[TimePhrase]:
    """Every onset-capable time phrase in ``text`` (left to right, non-overlapping, longest first
    at a position), resolved against the local date of ``at_local``.

    Args:
        text: message text (normalised with NFKC + casefold unless ``normalised``).
        at_local: the message time in the project's time zone (aware datetime) or its date.
    """
    today = at_local.date() if isinstance(at_local, datetime) else at_local
    norm = text if normalised else _norm(text)
    found: list[tuple[int, int, ResolvedDate | None]] = []
    for pattern, resolver in _RULES:
        for m in pattern.finditer(norm):
            try:
                resolved = resolver(m, today)
            except ValueError:
                resolved = None
            if resolved is not None:
                found.append((m.start(), m.end(), resolved))
    found.sort(key=lambda f: (-(f[1] - f[0]), f[0]))
    taken: list[tuple[int, int, ResolvedDate | None]] = []
    occupied = [False] * (len(norm) + 1)
    for cand in found:
        if not any(occupied[cand[0] : cand[1]]):
            taken.append(cand)
            for k in range(cand[0], cand[1]):
                occupied[k] = True
    taken.sort(key=lambda f: f[0])
    return [TimePhrase(s, e, norm[s:e].strip(), r) for s, e, r in taken]


def find_durations(text: str, at_local: datetime | date) -> list[TimePhrase]:
    """Durations such as ``三天了`` / ``两天`` / ``一个多月`` (normalised text): the onset that many
    units back, approximate. The caller decides which symptom a duration dates (the one it
    directly follows)."""
    today = at_local.date() if isinstance(at_local, datetime) else at_local
    out: list[TimePhrase] = []
    for m in _DURATION.finditer(text):
        got = cn_number(m.group(1))
        if got is None:
            continue
        unit = m.group(2)
        unit_days = 1 if unit == "天" else 30 if "月" in unit else 7
        low, high = got
        if "多" in m.group(0) and low == high:
            high = low + (0.5 if unit_days > 1 else 0)
        out.append(TimePhrase(m.start(), m.end(), m.group(0), _day_span(today, low, high, unit_days)))
    return out


def resolve_phrase(phrase: str, at_local: datetime | date) -> ResolvedDate | None:
    """Resolve one quoted phrase (e.g. what an LLM copied from the text): the first time phrase
    found in it, else a duration; ``None`` when nothing in it can be dated."""
    norm = _norm(phrase)
    phrases = [p for p in find_time_phrases(norm, at_local, normalised=True) if p.resolved is not None]
    if phrases:
        return phrases[0].resolved
    durations = find_durations(norm, at_local)
    if durations:
        return durations[0].resolved
    return None


__all__ = ["ResolvedDate", "TimePhrase", "cn_number", "find_durations", "find_time_phrases", "resolve_phrase"]
