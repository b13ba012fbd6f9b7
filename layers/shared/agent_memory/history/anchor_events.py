"""Event anchors of history questions: a festival or a project milestone, and the days around it.

- Festivals: Chinese statutory holidays (春节 with 除夕, 元旦, 清明, 劳动节 / 五一, 端午, 中秋, 国庆 /
  十一) are the days the ``holidays`` calendar library names for them (China, in-lieu days named for
  the festival included; the swapped rest days are not part of the festival); Christmas and
  Thanksgiving come from its United States calendar, Easter (Good Friday to Easter Monday) from its
  Australian one, which names both days nationally. The library is imported only when a festival
  is named (its import costs a third of a second), never a hand list of dates.
- Milestones: a hot-memory line that dates an event ("首例受试者于2025年10月28日入组", "SIV at site
  01 on 2025-09-22"); the clause of the line sharing the most words with the question's event
  phrase names it.
- The days around the event (docs/architecture.md, "History"): 前后 / around = ± 7 days; 前 /
  before = the 14 days before (前两周: the N weeks before); 后 / after = the 14 days after; 以来 /
  since = to today; 那周 / 期间 / during / the week of, or nothing = the event's own days.
A festival without a year is its latest occurrence that has begun; 去年 / 今年 / 前年 choose one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from datetime import date, timedelta

Period = tuple[date, date]

_NUM = r"(?:\d{1,2}|[一二两三四五六七八九十])"
#: surface pattern -> (calendar country, words the calendar's names for the festival contain)
_FESTIVALS: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = tuple(
    (re.compile(p), country, keys) for p, country, keys in (
        (r"春节|过年|除夕|大年|(?:chinese|lunar) new year|spring festival", "CN", ("春节", "除夕")),
        (r"国庆|(?<![\d一二三四五六七八九十第])十一(?![月\d号日点周个])|national day|golden week", "CN", ("国庆",)),
        (r"中秋|mid-?autumn", "CN", ("中秋",)),
        (r"清明|qingming|tomb[- ]sweeping", "CN", ("清明",)),
        (r"劳动节|(?<![\d一二三四五六七八九十第])五一(?![月\d号日点周个])|labou?r day|may day", "CN", ("劳动节",)),
        (r"端午|dragon boat", "CN", ("端午",)),
        (r"元旦|new year'?s day", "CN", ("元旦",)),
        (r"圣诞|christmas|xmas", "US", ("Christmas",)),
        (r"感恩节|thanksgiving", "US", ("Thanksgiving",)),
        # Easter: Good Friday to Easter Monday, both named nationally by the Australian calendar
        (r"复活节|\beaster\b", "AU", ("Good Friday", "Easter Monday")),
    )
)
#: a modifier right after an event (Chinese)
_ZH_MOD = re.compile(
    r"^\s*节?\s*(?P<mod>前后|左右|前\s*(?P<n>" + _NUM + r")\s*(?:个)?(?:周|星期|礼拜)|之前|以前|前|之后|以后|过后|后"
    r"|以来|至今|到现在|期间|那周|那一周|那几周|那几天|那段时间|那阵子?|当周|的时候|那会儿?)"
)
#: a modifier right before an event (English)
_EN_MOD = re.compile(
    r"(?P<mod>around|about|before|ahead of|in the run-up to|after|following|since|during|over|the week of|"
    r"the weeks? around)\s+(?:the\s+|our\s+)?$"
)
_ZH_MOD_ANY = re.compile(r"(?P<mod>前后|之前|以前|之后|以后|以来|那周|那一周|当周|期间|前\s*" + _NUM
                         + r"\s*(?:个)?(?:周|星期)|(?<!以)前(?!\s*" + _NUM + r")|(?<![以之过])后)")
_EN_MOD_ANY = re.compile(r"\b(?P<mod>around|before|ahead of|after|following|since|during|the week of)\s+"
                         r"(?:the\s+|our\s+)?(?P<name>[a-z0-9][\w .&/-]{1,40})")
_KIND = {"前后": "around", "左右": "around", "around": "around", "about": "around", "the week around": "around",
         "the weeks around": "around", "之前": "before", "以前": "before", "前": "before", "before": "before",
         "ahead of": "before", "in the run-up to": "before", "之后": "after", "以后": "after", "过后": "after",
         "后": "after", "after": "after", "following": "after", "以来": "since", "至今": "since",
         "到现在": "since", "since": "since"}
_WORD = re.compile(r"[a-z][a-z0-9.]+|[a-z0-9]*\d[a-z0-9.]*")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_STOP = frozenset({"the", "of", "on", "at", "in", "site", "and", "for", "was", "is", "to", "we", "what", "did",
                   "were", "main", "issues", "came", "up", "week", "decide", "中心", "完成", "什么", "哪些", "问题",
                   "我们", "出了", "做了", "定了", "遇到", "决定", "那周"})
_DATE_PATTERNS = (
    re.compile(r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"),
    re.compile(r"(?P<y>\d{4})\s*年\s*(?P<m>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*[日号]"),
    re.compile(r"(?<!\d)(?P<m>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*[日号]"),
)


@functools.lru_cache(maxsize=128)
def festival_days(country: str, keys: tuple[str, ...], year: int) -> tuple[date, ...]:
    """The days the ``holidays`` calendar of ``country`` names for a festival in ``year`` (a name
    containing one of ``keys``; "observed" days of the US calendar left out), oldest first."""
    import holidays  # lazy: imported only when a festival is named (docs/architecture.md, "Cold start")

    calendar = holidays.country_holidays(country, years=year)
    return tuple(sorted(day for day, name in calendar.items()
                        if any(k in name for k in keys) and "observed" not in name.casefold()))


def _festival_year(text: str, at: int, country: str, keys: tuple[str, ...], today: date) -> tuple[date, ...]:
    """The festival's days in the year the question means: 去年 / 今年 / 前年 just before it, else the
    latest occurrence that has begun by ``today`` (empty when none)."""
    qualifier = re.search(r"(去年|今年|前年|last year'?s?|this year'?s?)\s*(?:的)?\s*$", text[max(0, at - 14): at])
    if qualifier is not None:
        word = qualifier.group(1)
        back = 1 if word.startswith(("去年", "last")) else 2 if word == "前年" else 0
        return festival_days(country, keys, today.year - back)
    for year in (today.year, today.year - 1):
        days = festival_days(country, keys, year)
        if days and days[0] <= today:
            return days
    return ()


def _around(kind: str, first: date, last: date, today: date, weeks: int | None) -> Period:
    if kind == "around":
        return first - timedelta(days=7), last + timedelta(days=7)
    if kind == "before":
        return first - timedelta(days=7 * weeks if weeks else 14), first - timedelta(days=1)
    if kind == "after":
        return last + timedelta(days=1), last + timedelta(days=7 * weeks if weeks else 14)
    if kind == "since":
        return first, today
    return first, last


def _count(text: str | None) -> int | None:
    if not text:
        return None
    if text.isdigit():
        return int(text)
    return dict(zip("一两二三四五六七八九十", (1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10), strict=True)).get(text)


def _modifier_after(text: str, end: int) -> tuple[str, int | None]:
    m = _ZH_MOD.match(text[end:])
    if m is None:
        return "during", None
    mod = re.sub(r"\s+", "", m["mod"])
    if m["n"]:
        return "before", _count(m["n"])
    return _KIND.get(mod, "during"), None


def festival_period(text: str, today: date) -> tuple[str, Period] | None:
    """The period of the first festival named in ``text`` (normalised), with its modifier."""
    for pattern, country, keys in _FESTIVALS:
        m = pattern.search(text)
        if m is None:
            continue
        days = _festival_year(text, m.start(), country, keys, today)
        if not days:
            return None
        before = _EN_MOD.search(text[: m.start()])
        kind, weeks = (_KIND.get(before["mod"], "during"), None) if before else _modifier_after(text, m.end())
        return f"{keys[0]} {kind}", _around(kind, days[0], days[-1], today, weeks)
    return None


def _tokens(text: str) -> set[str]:
    """Latin words and CJK character bigrams of ``text``, without stop words."""
    out = {w.strip(".") for w in _WORD.findall(text)}
    for run in _CJK_RUN.findall(text):
        out.update(run[i: i + 2] for i in range(len(run) - 1))
    return {t for t in out if len(t) >= 2} - _STOP


def _clause_date(clause: str, today: date) -> date | None:
    for pattern in _DATE_PATTERNS:
        m = pattern.search(clause)
        if m is not None:
            month, day = int(m["m"]), int(m["d"])
            year = int(m["y"]) if "y" in pattern.groupindex and m["y"] else (
                today.year if (month, day) <= (today.month, today.day) else today.year - 1)
            try:
                return date(year, month, day)
            except ValueError:
                return None
    return None


def milestones_of(lines: Sequence[str], today: date) -> list[tuple[set[str], date]]:
    """(words, date) of every dated clause of the hot-memory lines."""
    out = []
    for line in lines:
        for clause in re.split(r"[，,；;。]|\.\s", line.casefold()):
            day = _clause_date(clause, today)
            if day is not None:
                out.append((_tokens(re.sub(r"\d{4}-\d{1,2}-\d{1,2}|\d+\s*[年月日号]", " ", clause)), day))
    return out


def milestone_period(text: str, today: date, lines: Sequence[str]) -> tuple[str, Period] | None:
    """The period around a milestone of ``lines`` that ``text`` names next to a modifier."""
    known = milestones_of(lines, today)
    if not known:
        return None
    phrases: list[tuple[str, str, int | None]] = []
    for m in _ZH_MOD_ANY.finditer(text):
        mod = re.sub(r"\s+", "", m["mod"])
        n = re.search(_NUM, mod) if mod.startswith("前") and len(mod) > 1 else None
        kind = "before" if n else _KIND.get(mod, "during")
        phrases.append((text[max(0, m.start() - 10): m.start()], kind, _count(n.group(0)) if n else None))
    for m in _EN_MOD_ANY.finditer(text):
        phrases.append((m["name"], _KIND.get(m["mod"], "during"), None))
    best: tuple[int, str, date, int | None] | None = None
    for phrase, kind, weeks in phrases:
        words = _tokens(phrase)
        for clause_words, day in known:
            shared = len(words & clause_words)
            if shared and (best is None or shared > best[0]):
                best = (shared, kind, day, weeks)
    if best is None:
        return None
    _, kind, day, weeks = best
    return f"milestone {kind}", _around(kind, day, day, today, weeks)


def has_event_word(text: str, milestones: Sequence[str]) -> bool:
    """True when ``text`` names a festival, or there are milestones and an event modifier."""
    return any(p.search(text) for p, _, _ in _FESTIVALS) or bool(
        milestones and (_ZH_MOD_ANY.search(text) or _EN_MOD_ANY.search(text)))


def event_period(text: str, today: date, milestones: Sequence[str]) -> tuple[str, Period] | None:
    """A festival's period, else a milestone's; None when neither is named."""
    return festival_period(text, today) or milestone_period(text, today, milestones)


__all__ = ["event_period", "festival_days", "festival_period", "has_event_word", "milestone_period", "milestones_of"]
