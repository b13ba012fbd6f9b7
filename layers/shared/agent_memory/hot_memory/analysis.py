"""Text analysis the distiller's merge compares with: the language of a text, and a statement's
content core, polarity, subjects and reply-language value, from which duplicates, newer wordings
and contradictions are judged.

Texts are compared after NFKC normalisation, so full-width and half-width characters, punctuation
and missing spaces make no difference. Everything here is deterministic and offline.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

#: between a Han character and a Latin letter ("以后patient问", "due list我")
_HAN_LATIN = re.compile(r"(?<=[\u3400-\u9fff])(?=[A-Za-z])|(?<=[A-Za-z])(?=[\u3400-\u9fff])")


def spaced(text: str) -> str:
    """``text`` with a space between Han characters and Latin letters, so that the English words of
    code-switched text ("以后patient问side effect怎么处理") match as words."""
    return _HAN_LATIN.sub(" ", text)


def nfkc(text: str) -> str:
    """``text`` in Unicode NFKC form (full-width letters and punctuation folded)."""
    return unicodedata.normalize("NFKC", text)


#: a study subject's id (P005, 01-003, AB-1234): a statement about one subject is not a standing
#: preference
SUBJECT_ID = re.compile(r"(?<![A-Za-z0-9-])(?:\d{2}-\d{3}|[A-Z]{1,3}-?\d{3,4}|[A-Z]{1,2}\d{1,2}-\d{3,4})(?![0-9])")

# ------------------------------------------------------------------ languages
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\U00020000-\U0003134f]")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
#: Upper-case codes that say nothing about a text's language (BP, HR, PI, EDC, AE, P001 ...).
_CODE = re.compile(r"^[A-Z]{1,5}$")


def _latin_words(text: str) -> list[str]:
    return [w for w in _LATIN_WORD.findall(text) if not _CODE.match(w)]


def language_of(text: str) -> str:
    """Dominant language of a statement: ``zh`` (Han characters), ``en`` (Latin words) or
    ``other``. Upper-case codes (BP, HR, PI, P001) do not count as English."""
    han = len(_HAN.findall(text))
    words = len(_latin_words(text))
    if han >= 2 and han >= words:
        return "zh"
    if words >= 1:
        return "en"
    return "zh" if han else "other"


def languages_present(text: str) -> set[str]:
    """Languages a message is written in (a mixed message has both): ``zh`` with at least 2
    Han characters, ``en`` with at least 2 Latin words (codes excluded)."""
    out: set[str] = set()
    if len(_HAN.findall(text)) >= 2:
        out.add("zh")
    if len(_latin_words(text)) >= 2:
        out.add("en")
    return out

# ------------------------------------------------------------ text analysis
_NEGATION = re.compile(
    # an A-not-A question ("要不要", "能不能", "用不用") negates nothing
    # "别忘了" (a reminder) and "别光给百分比" / "not just …" (only that is not enough) negate nothing
    r"(?<!要)不要(?![忘光只])|不得|不准|不许|(?<!能)不能|(?<!可)不可|(?<!用)不用|不必|不再|禁止|严禁|切勿|请勿|勿|"
    r"(?<![类区分个特级性识鉴差组告辨])别(?![忘光只])|避免|杜绝|"
    r"不(?=[写发用提输给让做说回列加填录打联])|"
    r"\b(?:do not|don't|dont)\b(?! forget\b)|"
    r"\b(?:never|no longer|avoid|must not|mustn't|should not|shouldn't|stop)\b|\bnot\b(?! (?:just|only)\b)|"
    r"\bno\b(?! (?:need|problem|worries|matter|later|more than|sooner)\b)",
    re.IGNORECASE,
)
_NOISE = re.compile(
    r"系统禁令|以后|今后|往后|从现在起|从现在开始|记住|谢谢|麻烦|[的了都就也吧呢啊呀哦请]|"
    r"\b(?:please|thanks|thank you|from now on|going forward|always|remember(?: that)?|the|a|an)\b",
    re.IGNORECASE,
)
_TOPICS: dict[str, re.Pattern[str]] = {
    "reply_language": re.compile(
        r"(?:回复|回答|答复|作答|交流|沟通|汇报|\breply\b|\breplies\b|\banswer|\brespond|\bwrite\b|\btalk\b|"
        r"\breport to\b).*?"
        r"(?:中文|汉语|英文|英语|日文|日语|\benglish\b|\bchinese\b|\bjapanese\b)|"
        r"(?:中文|汉语|英文|英语|日文|日语|\benglish\b|\bchinese\b|\bjapanese\b).*?"
        r"(?:回复|回答|答复|作答|交流|汇报|\breply\b|\breplies\b|\banswers?\b|\brespond)",
        re.IGNORECASE,
    ),
    "abbreviations": re.compile(r"缩写|全称|\babbreviat|\bacronym", re.IGNORECASE),
    "contact_time": re.compile(
        r"(?:周末|节假日|晚上|夜里|夜间|下班后|午休|\bweekends?\b|\bholidays?\b|\bevenings?\b|\bnights?\b).*?"
        r"(?:发|消息|提醒|联系|打扰|推送|\bmessages?\b|\bnotif|\bremind|\bcontact|\bping)",
        re.IGNORECASE,
    ),
    "patient_identity": re.compile(
        r"身份证|手机号|电话号码|住址|全名|姓名|\bid numbers?\b|\bphone numbers?\b|\bfull names?\b|\baddress",
        re.IGNORECASE,
    ),
}
_LANGUAGE_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("zh", re.compile(r"中文|汉语|普通话|\bchinese\b|\bmandarin\b", re.IGNORECASE)),
    ("en", re.compile(r"英文|英语|\benglish\b", re.IGNORECASE)),
    ("ja", re.compile(r"日文|日语|\bjapanese\b", re.IGNORECASE)),
)
_LANG_NEGATED = re.compile(
    r"(?:别|不要|不用|不再|不|勿|\bnot?\b|\bnever\b|n't|\bstop\b)\s*(?:再\s*)?(?:用|使用|in|use|using|write|answer)?\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Analysis:
    """What the merge compares: the content core (negations and filler removed, NFKC,
    casefold, alphanumerics only), polarity, subjects (topics), reply-language value, language."""

    core: str
    negative: bool
    topics: frozenset[str]
    reply_language: str | None
    language: str
    grams: frozenset[str]
    #: the grams of the clauses holding a negation (what the negation is about)
    negated_grams: frozenset[str] = frozenset()
    #: the site numbers it names (:func:`sites`)
    sites: frozenset[str] = frozenset()


@lru_cache(maxsize=4096)
def analyse(text: str) -> Analysis:
    """Analyse one line or candidate text (cached; pure)."""
    norm = nfkc(text).casefold()
    negative = bool(_NEGATION.search(norm))
    content = _NEGATION.sub(" ", norm)
    content = _NOISE.sub(" ", content)
    core = "".join(ch for ch in content if ch.isalnum())
    topics = frozenset(name for name, pattern in _TOPICS.items() if pattern.search(norm))
    value = _reply_language_value(norm) if "reply_language" in topics else None
    return Analysis(
        core=core,
        negative=negative,
        topics=topics,
        reply_language=value,
        language=language_of(text),
        grams=frozenset(_grams(content)),
        negated_grams=frozenset(g for clause in re.split(r"[，,。；;:：]", norm) if _NEGATION.search(clause)
                                for g in _grams(_NOISE.sub(" ", _NEGATION.sub(" ", clause)))),
        sites=sites(text),
    )


def normalise_core(text: str) -> str:
    """The comparison core of ``text`` (see :class:`Analysis`)."""
    return analyse(text).core


def _grams(content: str) -> Iterable[str]:
    yield from re.findall(r"[a-z][a-z0-9]{2,}|[0-9]+[a-z0-9]*", content)
    for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", content):
        yield from (run[i : i + 2] for i in range(len(run) - 1))


def _reply_language_value(norm: str) -> str | None:
    positive: list[str] = []
    negated: list[str] = []
    for code, pattern in _LANGUAGE_WORDS:
        for m in pattern.finditer(norm):
            (negated if _LANG_NEGATED.search(norm[max(0, m.start() - 8) : m.start()]) else positive).append(code)
    if positive:
        return positive[0]
    if negated:
        return f"not-{negated[0]}"
    return None


def same_topic(a: Analysis, b: Analysis) -> bool:
    """Two texts talk about the same subject: a shared keyed topic (reply language,
    abbreviations, contact hours, patient identity) or at least half of the smaller text's
    content bigrams / words shared."""
    if a.topics & b.topics:
        return True
    small = min(len(a.grams), len(b.grams))
    if small < 3:
        return False
    return len(a.grams & b.grams) / small >= 0.5


#: a site named by its number ("第1中心", "01中心", "S03", "中心3", "site 4"): the number
_SITE = re.compile(r"第\s*([0-9一二三四五六七八九十]+)\s*(?:个)?(?:中心|分中心|家)|"
                   r"(?<![A-Za-z0-9-])([0-9]{1,3})\s*(?:号)?(?:中心|分中心)|"
                   r"(?:中心|分中心)\s*([0-9]{1,3})(?![0-9])|(?<![A-Za-z0-9])S([0-9]{2,3})(?![0-9-])|"
                   r"\bsites?\s+([0-9]{1,3})\b", re.IGNORECASE)
_CN_NUMBER = {c: str(i) for i, c in enumerate("一二三四五六七八九十", start=1)}


def sites(text: str) -> frozenset[str]:
    """The site numbers a text names ("第1中心" -> {"1"}, "S03和05中心" -> {"3", "5"}); empty when none."""
    out = set()
    for m in _SITE.finditer(nfkc(text)):
        raw = next(g for g in m.groups() if g)
        out.add(_CN_NUMBER.get(raw, raw).lstrip("0") or "0")
    return frozenset(out)


def names_other_sites(a: str, b: str) -> bool:
    """Two texts naming different sites (:func:`_other_sites`)."""
    return _other_sites(analyse(a), analyse(b))


def _other_sites(a: Analysis, b: Analysis) -> bool:
    """Both name sites and not the same ones: statements about different sites ("第1中心的QC清单…"
    beside "第2中心的QC清单…") are neither one another's duplicate nor a newer wording of it."""
    return bool(a.sites) and bool(b.sites) and a.sites != b.sites


def is_duplicate(candidate: Analysis, line: Analysis) -> bool:
    """``candidate`` adds nothing to ``line`` (it is counted, not added): the same reply-language
    value, or the same polarity and equal cores, one core contained in the other (at least 4 Han
    characters / 12 letters), or every content bigram / word / number of the candidate already in
    the line."""
    if candidate.reply_language and line.reply_language:
        return _language_values_agree(candidate.reply_language, line.reply_language)
    if candidate.negative != line.negative or _other_sites(candidate, line):
        return False
    if candidate.core == line.core:
        return True
    short, long_ = sorted((candidate.core, line.core), key=len)
    minimum = 4 if _HAN.search(short) else 12
    if len(short) >= minimum and short in long_:
        return True
    return len(candidate.grams) >= 3 and candidate.grams <= line.grams


def supersedes(candidate: Analysis, line: Analysis) -> bool:
    """A newer wording of the same statement that changes a detail (``上午 9 点`` -> ``上午 10 点``):
    same polarity, at least 80 % of the smaller text's bigrams / words / numbers shared, and not
    a duplicate. A newer one replaces an AI line; against an admin line it is held for review."""
    if candidate.negative != line.negative or is_duplicate(candidate, line) or _other_sites(candidate, line):
        return False
    small = min(len(candidate.grams), len(line.grams))
    return small >= 3 and len(candidate.grams & line.grams) / small >= 0.8


def _language_values_agree(new: str, old: str) -> bool:
    """A new reply-language statement adds nothing to ``old``: equal values, or the new one
    only says "not X" while the old one names another language."""
    if new == old:
        return True
    return new.startswith("not-") and not old.startswith("not-") and new[4:] != old


def conflicts(candidate: Analysis, line: Analysis) -> bool:
    """Same subject, different content: a contradiction or a changed detail (newer wins)."""
    return contradicts(candidate, line) or supersedes(candidate, line)


def contradicts(candidate: Analysis, line: Analysis) -> bool:
    """Same subject with the opposite polarity, or a different reply language (the newer
    statement wins)."""
    if candidate.reply_language and line.reply_language:
        return not _language_values_agree(candidate.reply_language, line.reply_language)
    if candidate.negative == line.negative or not same_topic(candidate, line):
        return False
    negated, other = (candidate, line) if candidate.negative else (line, candidate)
    # the negation is about what the other text says, not a detail of its own ("…，测的话别吃东西")
    return bool(negated.topics & other.topics) or len(negated.negated_grams & other.grams) >= 3


__all__ = [
    "SUBJECT_ID",
    "names_other_sites",
    "sites",
    "VALUE_PATTERNS",
    "Analysis",
    "analyse",
    "changes_value",
    "restates_value",
    "conflicts",
    "contradicts",
    "is_duplicate",
    "language_of",
    "negated_values",
    "languages_present",
    "nfkc",
    "normalise_core",
    "output_kinds",
    "same_topic",
    "shared_grams",
    "spaced",
    "specific_grams",
    "subject_grams",
    "supersedes",
    "values",
]


# ------------------------------------------------------------ values of a subject
_NEG_BEFORE = re.compile(
    # "不" of a question form (能不能, 可不可以, 要不要) is no negation
    r"(?:别|不要|不用|不再|(?<![能可要行好是])不(?![能可行])|勿|\bno\b|\bnot\b|\bnever\b|n't|\binstead of\b|"
    r"\brather than\b)"
    r"\s*\S{0,3}\s*$",
    re.IGNORECASE,
)
_FAMILIES: dict[str, tuple[re.Pattern[str], dict[str, str]]] = {
    # a file format; an extension inside a file name ("ae_2026-09-15.csv") sets none
    "format": (re.compile(r"(?<![a-z0-9_])(?<![a-z0-9_]\.)"  # ".xlsx文件" is a format, "report.xlsx" a file name
                          r"(?:excel|xlsx|xls|pdf|csv|docx|markdown|txt|(?<![a-z])word(?![a-z])|"
                          r"(?:sas|stata|spss|sav|dta|xpt|json|xml|pptx?|powerpoint)(?![a-z]))", re.IGNORECASE),
               {"xlsx": "excel", "xls": "excel", "docx": "word"}),
    "weekday": (re.compile(r"(?:周|星期|礼拜)([一二三四五六日天末])|\b(mon|tues|wednes|thurs|fri|satur|sun)days?\b|"
                           r"\b(weekends?)\b", re.IGNORECASE), {}),
    "clock": (re.compile(r"(\d{1,2})\s*(?:点|:\d\d|\s?[ap]\.?m\b)|(十一|十二|[一二两三四五六七八九十])点",
                         re.IGNORECASE),
              {"一": "1", "二": "2", "两": "2", "三": "3", "四": "4", "五": "5", "六": "6", "七": "7", "八": "8",
               "九": "9", "十": "10", "十一": "11", "十二": "12"}),
    # how long before: a number and a unit (提前2天, 提前一周, 3 days ahead, a week before)
    "lead_time": (re.compile(r"提前\s*([0-9一二三两四五六七八九十半]+\s*(?:个)?\s*"
                             r"(?:天|日|周|星期|礼拜|小时|工作日|月|days?|weeks?|hours?|(?:business|working) days?|"
                             r"months?))|"
                             # before an event, heading what is sent ("监查之前3个工作日，把…", "MV 前一周把…发我",
                             # "访视前三天才提醒"); "术后前3天的评估" (the first days after) is no lead time
                             r"(?<!提)(?:之|以)?前\s*([0-9一二三两四五六七八九十半]+\s*(?:个)?\s*"
                             r"(?:天|日|周|星期|礼拜|小时|工作日|月))(?=\s*(?:[，,（(把发给就先要才再提]|$))|"
                             # a weekday of the week before ("随访那周的前一周周五发我")
                             r"(?:那|当)周的?(前一周的?(?:周|星期|礼拜)[一二三四五六日天])|"
                             r"\b([0-9]+|one|two|three|four|five|six|seven|a|an)\s*(days?|weeks?|hours?|"
                             r"(?:business|working) days?|months?)\s+(?:before|ahead|in advance|early|prior)",
                             re.IGNORECASE), {}),
    # how often (每周 / weekly / every two weeks); "the weekly query report" names a report, not a frequency
    "frequency": (re.compile(r"\b(every (?:other|second) (?:week|monday|tuesday|wednesday|thursday|friday))\b|"
                             r"(每天|每日|每周|每星期|每两周|每隔一周|隔周|每个?月|每季度|每年|一周一次|一月一次|两周一次|一天一次|"
                             r"\b(?:daily|weekly|fortnightly|bi-?weekly|monthly|quarterly|yearly|annually)\b"
                             r"(?=\s*(?:$|[,.;!?)]|\b(?:on|at|by|in|and|instead|rather|from|to|please|then|now)\b))|"
                             r"\bevery (?:day|week|(?:other|second) week|two weeks|month|quarter|year)\b|"
                             r"\bonce a (?:day|week|month)\b)",
                             re.IGNORECASE), {}),
    # the channel a message goes by (发微信, 改用邮件, by email, over WeCom, email me …); "电话随访" is a
    # visit type
    "channel": (re.compile(r"(?:用|发|通过|走|改成|改用|换成|改发|改走|以)\s*(?:我|给我)?\s*"
                           r"(企业微信|企微|微信|短信|邮件|电子邮件|邮箱|电话|钉钉|飞书)|"
                           r"(企业微信|企微|微信|短信|邮件|邮箱|钉钉|飞书)\s*(?:私聊|私信|单聊|群里|上)?\s*(?:发|通知|提醒|联系|推送)|"
                           r"\b(?:by|via|over|through|on|in|as an?|per|go(?:es)? (?:to|into)(?: the| our)?)\s+"
                           r"(e-?mail|wecom|wechat|sms|text(?: message)?|"
                           r"phone|slack|teams|dingtalk)\b|"
                           r"\b(e-?mail|wecom|wechat|slack)(?:ed)?\s+(?:me|us|them|it|the|those|these)\b|"
                           r"\b(?:to|into) (?:my|our|the) (e-?mail|wecom|wechat|slack|inbox)\b",
                           re.IGNORECASE), {}),
    # the form of a text (a table, prose, bullet points, a chart); an added chart is content, not a form
    "form": (re.compile(r"(?<!加)(?<!附)(?<!添)(?<!加一张)(?<!加个)(表格|段落|一段话|成段|纯文字|纯文本|要点|分点|图表|"
                        r"\btables?\b|\btabular\b|\bparagraphs?\b|\bprose\b|\bbullet(?:ed)?(?: points?| lists?)?\b|"
                        r"\bbullets\b|\bplain text\b)", re.IGNORECASE), {}),
    "daypart": (re.compile(r"上午|下午|早上|晚上|中午|\bmornings?\b|\bafternoons?\b|\bevenings?\b", re.IGNORECASE), {}),
    # how a list is arranged: the key it is sorted, grouped or broken down by
    "arrangement": (re.compile(
        r"按(?:照)?\s*([^，,。；;按]{1,12}?)\s*(?:排序|排列|倒序|正序|升序|降序|顺序|排|分组|分开|分|列出|列|归类|汇总)|"
        r"\b(?:sort|order|group|arrang|list|split|break)\w*\b[^,.;]{0,30}?\bby ([a-z][a-z -]{1,25}?)"
        r"(?=\s+(?:rather|instead|not|and|then|with|in|for)\b|[,.;]|$)|"
        r"\bper (form|visit|site|centre|center|subject|patient|week|month|arm|investigator)s?\b",
        re.IGNORECASE), {}),
    # how much an answer says
    "detail": (re.compile(r"(详细|详尽|展开说|简短|简洁|简单点|精简|只给结论|一句话|\bdetailed\b|\bin detail\b|"
                          r"\bbrief\b|\bshort\b|\bconcise\b|\bjust the conclusion)", re.IGNORECASE), {}),
    # how a list is delivered: a file attached, or pasted in the message
    "delivery": (re.compile(r"(附件|\battach\w*|\bas a file\b|贴在|直接贴|贴到|正文里|\binline\b|\bin the chat\b|"
                            r"\bpaste\w*|压缩包|打包|打成一个\s*zip|\bzip\b|共享盘|共享文件夹|网盘|链接|\blinks?\b|"
                            r"\bshared (?:drive|folder)\b)", re.IGNORECASE), {}),
    "date_format": (re.compile(r"(?<![A-Za-z])([YMD]{2,4}[-/.][YMD]{1,2}[-/.][YMD]{2,4})(?![A-Za-z])|"
                               # a date given as the example of the form ("keep dates in the 2027-06-14 form")
                               r"(?<!\d)(\d{4}-\d{1,2}-\d{1,2})(?=\s*(?:form|format|style|这种|的?(?:格式|写法|形式)))",
                               re.IGNORECASE), {}),
    "month_day": (re.compile(r"每月\s*(\d{1,2})\s*[号日]|每月的?(最后一个工作日|最后一天|月底|月初|第一个工作日)|"
                             r"\b(\d{1,2})(?:st|nd|rd|th) of (?:each|every|the) month|"
                             r"\b(last (?:working |business )?day) of (?:each|every|the) month", re.IGNORECASE), {}),
}
#: the pattern of each value family (where a value stands in a text)
VALUE_PATTERNS: dict[str, re.Pattern[str]] = {family: pattern for family, (pattern, _) in _FAMILIES.items()}
#: one value under several names (the arrangement keys, the detail and delivery values)
_SAME_VALUE: dict[str, str] = {
    "中心": "site", "centre": "site", "center": "site", "site": "site", "各中心": "site",
    "受试者编号": "subject", "受试者": "subject", "编号": "subject", "subject number": "subject", "subject": "subject",
    "详细": "detailed", "详尽": "detailed", "展开说": "detailed", "in detail": "detailed",
    "简短": "brief", "简洁": "brief", "简单点": "brief", "精简": "brief", "只给结论": "brief", "一句话": "brief",
    "short": "brief", "concise": "brief", "just the conclusion": "brief",
    "附件": "attachment", "as a file": "attachment", "贴在": "inline", "直接贴": "inline", "贴到": "inline",
    "正文里": "inline", "in the chat": "inline",
    "压缩包": "archive", "打包": "archive", "zip": "archive", "共享盘": "link", "共享文件夹": "link", "网盘": "link",
    "链接": "link", "link": "link", "shared drive": "link", "shared folder": "link",
    "每天": "day", "每日": "day", "daily": "day", "every day": "day", "once a day": "day",
    "每周": "week", "每星期": "week", "weekly": "week", "every week": "week", "once a week": "week", "一周一次": "week",
    "两周一次": "2week", "一天一次": "day",
    "每两周": "2week", "每隔一周": "2week", "隔周": "2week", "fortnightly": "2week", "biweekly": "2week",
    "bi-weekly": "2week", "every other week": "2week", "every two weeks": "2week",
    "每月": "month", "每个月": "month", "monthly": "month", "every month": "month", "once a month": "month",
    "一月一次": "month", "每季度": "quarter", "quarterly": "quarter", "every quarter": "quarter",
    "每年": "year", "yearly": "year", "annually": "year", "every year": "year",
    "企业微信": "wecom", "企微": "wecom", "微信": "wechat", "短信": "sms", "text": "sms", "text message": "sms",
    "邮件": "email", "电子邮件": "email", "邮箱": "email", "e-mail": "email", "电话": "phone", "钉钉": "dingtalk",
    "表格": "table", "tabular": "table", "段落": "prose", "一段话": "prose", "成段": "prose", "纯文字": "prose",
    "纯文本": "prose", "paragraph": "prose", "plain text": "prose", "要点": "bullets", "分点": "bullets",
    "bullet": "bullets", "bullet point": "bullets", "bullet list": "bullets", "bulleted list": "bullets",
    "bulleted": "bullets", "bullet points": "bullets", "图表": "chart",
    "powerpoint": "ppt", "pptx": "ppt", "sav": "spss", "dta": "stata",
}
#: value words taken out before comparing subjects; an arrangement keeps its verb and subject
#: ("sort the deviation log by type"): only its key goes
_VALUE_WORDS = re.compile("|".join(f"(?:{p.pattern})" for f, (p, _) in _FAMILIES.items() if f != "arrangement")
                          + r"|每", re.IGNORECASE)


def _without_values(norm: str) -> str:
    """``norm`` without its value words and arrangement keys."""
    keys = _FAMILIES["arrangement"][0]
    kept = keys.sub(lambda m: m.group().replace(next((g for g in m.groups() if g), ""), " "), norm)
    return _VALUE_WORDS.sub(" ", kept)


def _value(raw: str, aliases: dict[str, str]) -> str:
    """One value's canonical name (aliases, shared names, plural and "the" dropped)."""
    key = re.sub(r"^(?:the|each|every)\s+", "", raw.strip().casefold())
    key = aliases.get(key, _SAME_VALUE.get(key, key))
    if key.startswith("attach"):
        return "attachment"
    if key.startswith(("every other ", "every second ")):
        return "2week"
    if key.startswith("打成一个"):
        return "archive"
    if key.startswith("paste") or key == "inline":
        return "inline"
    return key[:-1] if key.endswith("s") and len(key) > 3 and key.isascii() else key


_NUMBERS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
            "半": 0.5, "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
#: a lead time's unit in hours; working days are a unit of their own
_UNIT_HOURS = (("工作日", None), ("business", None), ("working", None), ("小时", 1), ("hour", 1), ("天", 24),
               ("日", 24), ("day", 24), ("周", 168), ("星期", 168), ("礼拜", 168), ("week", 168), ("月", 720),
               ("month", 720))


def _lead_time(m: re.Match[str]) -> str:
    """A lead time's canonical value: hours ("48h"), or working days ("2wd")."""
    text = "".join(g for g in m.groups() if g)
    if text.startswith("前一周"):
        return f"prior-week-{text[-1]}"  # a weekday of the week before the event's week
    number = re.match(r"\s*([0-9]+|[一二两三四五六七八九十半]|an?|one|two|three|four|five|six|seven)", text,
                      re.IGNORECASE)
    n = float(number.group(1)) if number and number.group(1).isdigit() else _NUMBERS.get(
        (number.group(1) if number else "").casefold(), 1)
    hours = next((h for unit, h in _UNIT_HOURS if unit in text.casefold()), 24)
    return f"{n:g}wd" if hours is None else f"{n * hours:g}h"


#: where an amended line gives its new value (:mod:`agent_memory.hot_memory.amend`: "A；改为：B", "A. Now: B")
_AMENDED = re.compile(r"；改为：|\. Now: ")


def values(text: str) -> dict[str, frozenset[str]]:
    """The values a statement sets, by family (file format, weekday, clock hour, lead days, part of
    the day, arrangement key, level of detail, delivery, date format, day of the month); a negated
    value ("别用 xlsx", "rather than PDF", "not per form") is not a value the statement sets."""
    parts = _AMENDED.split(text)
    if len(parts) > 1:  # an amended line ("A；改为：B"): a value B sets stands for A's of that kind
        merged: dict[str, frozenset[str]] = {}
        for part in parts:
            merged.update(values(part))
        return merged
    return _values(nfkc(text).casefold(), negated=False)


def negated_values(text: str) -> dict[str, frozenset[str]]:
    """The values ``text`` says no to ("还是别发邮箱了" -> channel email), by family as :func:`values`."""
    return _values(nfkc(text).casefold(), negated=True)


def _values(norm: str, *, negated: bool) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for family, (pattern, aliases) in _FAMILIES.items():
        found = set()
        for m in pattern.finditer(norm):
            if bool(_NEG_BEFORE.search(norm[: m.start()])) is not negated:
                continue
            if family == "lead_time":
                found.add(_lead_time(m))
                continue
            raw = next((g for g in m.groups() if g), m.group()) if m.groups() else m.group()
            if family == "date_format" and raw[:1].isdigit():
                raw = "yyyy-mm-dd"  # the example's form
            found.add(_value(raw, aliases))
        if found:
            out[family] = frozenset(found)
    return out


def changes_value(candidate: str, line: str) -> bool:
    """``candidate`` gives a new value to the subject of ``line``: both set a value of the same
    family (format, weekday, clock hour, lead days, part of the day), the values differ, and the
    texts share a word or bigram once the values are taken out ("周报改成周五下午发" vs
    "每周一上午9点前发周报"; "query清单导PDF" vs "query清单导出为Excel")."""
    a, b = values(candidate), values(line)
    if not any(a[f] != b[f] for f in a.keys() & b.keys()):
        return False
    outputs_a, outputs_b = (_subjects(nfkc(t).casefold()) & _OUTPUTS for t in (candidate, line))
    if outputs_a and outputs_b and not outputs_a & outputs_b:
        return False  # two outputs ("随访前一天下午提醒我…" and "名单每天中午发我"): each keeps its own time
    return _shares_specific_subject(candidate, line)


#: characters of the words every preference line is made of (lists, sites, subjects, roles, sending,
#: days): a bigram of two of them ("清单", "中心", "受试") names no particular subject
_GENERIC_HAN = frozenset("清单名表汇总报列发给按分组开排标中心社区受试者病人患每周天日月工作的了和与及在从到把我你她"
                         "他们一份个次条位再都也就上下午早晚前后内里送出这那本该其此")
_GENERIC_WORDS = frozenset({"crc", "cra", "pi", "sub", "list", "report", "summary", "site", "center", "centre",
                            "subject", "patient", "send", "weekly", "daily", "the", "and", "for", "with", "per",
                            "every", "each", "all", "please"})


def _specific(gram: str) -> bool:
    """A word or bigram naming a particular subject ("采血", "上传", "query"), not one every line has."""
    if gram.isascii():
        return gram not in _GENERIC_WORDS
    return not set(gram) <= _GENERIC_HAN


def specific_grams(text: str) -> frozenset[str]:
    """The words / bigrams of ``text`` (values and scope words out) that name a particular subject
    ("送检", "样本", "query"), not the words every preference line is made of ("清单", "中心")."""
    return frozenset(g for g in subject_grams(text) if _specific(g))


def _shares_specific_subject(candidate: str, line: str) -> bool:
    """The texts share a particular word or bigram, or a named output other than a plain list
    ("周报", "reminders"), once their values are out: "这周新开的query清单" and "到采血时间点的受试者
    清单" share only what every list has."""
    ca, cb = (_SCOPE_WORDS.sub(" ", _without_values(nfkc(t).casefold())) for t in (candidate, line))
    if {g for g in _stems(_grams(ca)) & _stems(_grams(cb)) if _specific(g)}:
        return True
    return bool((_subjects(ca) & _subjects(cb)) - {"list"})


def restates_value(candidate: str, line: str, *, same_language: bool = False) -> bool:
    """``candidate`` says again the value ``line`` sets: the same values in every family both set,
    and a shared subject. Only across languages ("以后回复简短一点" beside "Keep replies short.")
    unless ``same_language`` (a value said as a wish: "随访清单按访视时间排哈" beside the line)."""
    if not same_language and language_of(candidate) == language_of(line):
        return False
    a, b = values(candidate), values(line)
    shared = a.keys() & b.keys()
    return bool(shared) and all(a[f] == b[f] for f in shared) and _shares_subject(candidate, line)


def subject_grams(text: str) -> frozenset[str]:
    """The content words / bigrams of ``text`` once its values, value keys and scope words ("给我",
    "me") are out: what it is about, not what it sets."""
    return frozenset(_stems(_grams(_SCOPE_WORDS.sub(" ", _without_values(nfkc(text).casefold())))))


def _shares_subject(candidate: str, line: str) -> bool:
    """The texts share a word, bigram or subject (in either language) once their values are out."""
    ca, cb = (_SCOPE_WORDS.sub(" ", _without_values(nfkc(t).casefold())) for t in (candidate, line))
    if _stems(_grams(ca)) & _stems(_grams(cb)):
        return True
    return bool(_subjects(ca) & _subjects(cb))


#: whom a preference is for and who says it ("给我", "发我", "for me"): no part of its subject
_SCOPE_WORDS = re.compile(r"发给我|给我|发我|告诉我|提醒我|我的|[我你]|\b(?:for|to) me\b|\bme\b|\bmy\b|\byou\b",
                          re.IGNORECASE)

#: subjects a preference is about, in Chinese and English, so that a statement in one language
#: finds the line in the other ("回复" / "replies", "随访提醒" / "visit reminders")
_SUBJECTS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.IGNORECASE) for name, pattern in (
        ("reply", r"回复|回答|答复|\brepl(?:y|ies)\b|\banswers?\b|\bresponses?\b"),
        ("weekly_report", r"周报|\bweekly reports?\b"), ("monthly_report", r"月报|\bmonthly reports?\b"),
        ("reminder", r"提醒|\breminders?\b"), ("export", r"导出|\bexports?\b"),
        ("query", r"质疑|\bquer(?:y|ies)\b"), ("deviation", r"偏离|\bdeviations?\b"),
        ("adverse_event", r"不良事件|(?<![a-z])s?aes?(?![a-z])|\badverse events?\b"), ("visit", r"访视|\bvisits?\b"),
        ("enrolment", r"入组|\benrol"), ("qc", r"质控|(?<![a-z])qc(?![a-z])|\bquality control\b"),
        ("summary", r"汇总|总结|\bsummar(?:y|ies)\b"), ("list", r"清单|名单|\blist(?:s|ing|ings)?\b"),
    )
}


#: the subjects that are outputs the assistant sends (a change of one never changes another)
_OUTPUTS = frozenset({"weekly_report", "monthly_report", "reminder", "export", "summary", "list"})


def output_kinds(text: str) -> set[str]:
    """The kinds of output ``text`` names, in either language ("周报" / "weekly report", "名单" /
    "list"): ``{"weekly_report", "list", ...}``."""
    return _subjects(spaced(nfkc(text)).casefold()) & _OUTPUTS  # "due list我" is "due list 我"


def _subjects(text: str) -> set[str]:
    return {name for name, pattern in _SUBJECTS.items() if pattern.search(text)}


def _stems(grams: Iterable[str]) -> set[str]:
    """Words without a plural -s ("deviations" and "deviation" are one subject)."""
    return {g[:-1] if g.endswith("s") and len(g) > 3 and g.isascii() else g for g in grams}


def shared_grams(a: str, b: str) -> int:
    """How many content bigrams / words / numbers two texts share."""
    return len(analyse(a).grams & analyse(b).grams)
