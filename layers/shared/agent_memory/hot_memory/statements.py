"""Durable statements in user messages: the offline rule extractor and the text analysis the
merge uses (duplicates, subjects, polarity, language, attempts to relax admin rules).

Seed 000 section 2.1: "每天凌晨，AI 扫描昨日对话，如果发现用户说了"以后别..."，自动追加到这里". A
statement is durable when a clause starts with a standing-instruction cue: Chinese 以后 / 今后 /
往后 / 从现在起 / 从今天起 / 记住 / 请记住 / 下次别..., English "from now on", "going forward",
"remember (that)", "always", "never". Cues are matched after NFKC normalisation, so full-width and
half-width punctuation and missing spaces make no difference (case B04).

Everything here is deterministic and offline; nothing is logged.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from agent_memory.domain.jobs import Candidate, FlowLogEntry

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


# -------------------------------------------------------------------- cues
_FILLER = re.compile(
    r"^(?:好的?|好吧|嗯|对了|另外|还有|然后|所以|那|那么|收到|明白|谢谢|ok(?:ay)?|also|and|so|btw|thanks|got it|sure|yes)$",
    re.IGNORECASE,
)
_ZH_TRIGGER = re.compile(
    r"^(?:那么?|所以|另外|还有)?\s*"
    r"(?:我们|咱们|你们|你|大家|各位|请你|麻烦你|麻烦|请)?\s*"
    r"(?:要|得|一定要|务必)?\s*"
    r"(?P<cue>以后|今后|往后|此后|从现在起|从现在开始|从今天起|从今天开始|从今往后|从今以后|请记住|记住|牢记|"
    r"下次(?=别|不要|注意|一定|记得))"
)
_EN_TRIGGER = re.compile(
    r"^(?:(?:ok(?:ay)?|also|and|so|btw|note|please note)\b[,:]?\s*)?(?:please\s+)?"
    r"(?:(?P<cue>from now on|going forward|from today on|from today onwards|in (?:the )?future|"
    r"remember(?: that)?|keep in mind(?: that)?)\b[,:]?\s*"
    r"|(?P<keep>(?:always|never)\b(?!\s+mind)))",
    re.IGNORECASE,
)
_LESSON_CUE = re.compile(
    r"教训|踩坑|踩过的坑|吸取|吃过亏|经验|下次|曾经|上次.{0,12}(?:失败|出错|错误|搞错)|因为.{0,20}(?:失败|出错|错误)|"
    r"\blessons?\b|\blearned\b|\bmistakes?\b|\blast time\b|\bthe hard way\b|\bincident\b",
    re.IGNORECASE,
)
_CONTEXT_CUE = re.compile(
    r"当前|目前|现在(?!起|开始)|本周|本月|这个月|这周|近期|最近|重点|阶段|冲刺|风险|关注|截止|依从性|"
    r"(?<![A-Za-z])P\d{3}(?!\d)|\bcurrently\b|\bright now\b|\bthis (?:week|month)\b|\bfocus\b|\bpriority\b|"
    r"\bdeadline\b|\bphase\b|\brisk\b|\bat the moment\b",
    re.IGNORECASE,
)
_ROLE_IN_TEXT = re.compile(r"(?:作为|我是|我们是|身为|\bas (?:the|a|an)\b)\s*(PI|CRC|CRA|DM|PM)\b", re.IGNORECASE)
_ROLE_TAG_PREFIX = re.compile(r"^\s*[\[【]\s*(PI|CRC|CRA|DM|PM)\s*[\]】]\s*[:：]?\s*", re.IGNORECASE)
_ROLES = ("PI", "CRC", "CRA", "DM", "PM")
_ROLE_ONLY = re.compile(r"^(?:作为|我是|我们是|身为|as (?:the|a|an))?\s*(?:PI|CRC|CRA|DM|PM)$", re.IGNORECASE)

#: Statements that would relax or override the admin's System Rules (case B09).
_RELAX_VERB = re.compile(
    r"忽略|无视|理会|理睬|别管|不用管|不要管|不必遵守|不用遵守|不再遵守|别遵守|不要遵守|绕过|跳过|取消|解除|废除|删掉|删除|"
    r"放宽|放开|违反|突破|不算数|作废|"
    r"\b(?:ignore|disregard|override|overrule|bypass|skip|relax|lift|remove|drop|delete|forget|break|violate|"
    r"no longer (?:follow|apply|obey|respect))\b",
    re.IGNORECASE,
)
_RELAX_OBJECT = re.compile(
    r"管理员的?(?:禁令|禁止|规定|规则|限制|要求)|系统禁令|系统规则|禁止事项|禁令|禁止条款|"
    r"\badmin(?:istrator)?(?:'s|s'|s)?\s+(?:rules?|prohibitions?|restrictions?|section|bans?)\b|"
    r"\bsystem rules?\b|\bprohibitions?(?: section)?\b",
    re.IGNORECASE,
)

_CLAUSE_END = re.compile(r"([。！？!?；;\n]+|(?<=[A-Za-z0-9)\]])\.(?=\s|$)|\s*(?:——|—|--)\s*)")
_SUBCLAUSE = re.compile(r"[，,：:]")
_ZH_POLITE_TAIL = re.compile(r"[，,、\s]*(?:谢谢你?|谢谢了|谢啦|多谢|感谢|好吗|好不好|可以吗|行吗|哈|啊|呀|哦|呢|吧|啦|了|哈)+\s*$")
_EN_POLITE_TAIL = re.compile(r"[,\s]*(?:please|thanks|thank you|thx|ok\?|okay\?)+\s*$", re.IGNORECASE)
_ZH_LEAD = re.compile(r"^(?:[，,：:、\s]|都|就|也|请|还是)+")
_ZH_NEG_LEAD = re.compile(r"^(?:别再|别|不要再|千万别|千万不要)")
_EN_LEAD = re.compile(r"^(?:[,:;\s]+|please\s+|you should\s+|kindly\s+)+", re.IGNORECASE)


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def split_statements(text: str) -> list[tuple[str, bool]]:
    """Clauses of a message with a flag ``is_question``; split on sentence ends (full- and
    half-width), line breaks and dashes (``—``, ``——``, ``--``)."""
    parts = _CLAUSE_END.split(text)
    out: list[tuple[str, bool]] = []
    for i in range(0, len(parts), 2):
        clause = parts[i].strip()
        end = parts[i + 1] if i + 1 < len(parts) else ""
        if not clause:
            continue
        question = "?" in end or "？" in end or bool(re.search(r"[吗么呢]\s*$", clause))
        out.append((clause, question))
    return out


def _clean_zh(text: str) -> str:
    text = _ZH_LEAD.sub("", text.strip())
    text = _ZH_NEG_LEAD.sub("不要", text)
    text = _ZH_POLITE_TAIL.sub("", text).strip()
    text = text.rstrip("，,。.;；:：、 ")
    return f"{text}。" if text else ""


def _clean_en(text: str) -> str:
    text = _EN_LEAD.sub("", text.strip())
    text = _EN_POLITE_TAIL.sub("", text).strip().rstrip(",;: ")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!" else f"{text}."


def find_statement(clause: str) -> str | None:
    """The durable statement in one clause (cue removed, politeness trimmed) or None.

    The cue must start the clause or one of its comma/colon-separated parts ("好的，以后别…"
    fires; "P001 入组以后出现腹泻" does not). A non-filler part before the cue is kept
    ("汇报的时候，以后先给结论" -> "汇报的时候，先给结论。").
    """
    # Cues are matched on the NFKC form (full-width letters and punctuation folded); the text
    # kept is the original, sliced at the same positions when NFKC preserved the length.
    norm = _nfkc(clause)
    if len(norm) != len(clause):
        norm = clause
    starts = [0] + [m.end() for m in _SUBCLAUSE.finditer(norm)]
    for start in starts:
        lead = len(norm[start:]) - len(norm[start:].lstrip())
        sub_norm = norm[start + lead :]
        sub = clause[start + lead :]
        before = clause[:start].strip().rstrip("，,：: ")
        zh = _ZH_TRIGGER.match(sub_norm)
        en = None if zh else _EN_TRIGGER.match(sub_norm)
        if not zh and not en:
            continue
        if zh:
            rest = sub[zh.end() :]
        else:
            assert en is not None
            rest = sub[en.end() :] if en.group("cue") else sub[en.start("keep") :]
        keep_before = before and not _FILLER.match(_nfkc(before)) and not _ROLE_ONLY.match(_nfkc(before))
        body = f"{before}，{rest}" if keep_before else rest
        cleaned = _clean_zh(body) if language_of(body) == "zh" else _clean_en(body)
        if len(normalise_core(cleaned)) < 2:
            return None
        return cleaned
    return None


def classify_section(text: str) -> str:
    """``Lessons Learned`` (lesson cues), ``Active Context`` (current focus, risks, subject ids)
    or ``User Preferences`` (everything else; seed 000 section 1 table)."""
    if _LESSON_CUE.search(text):
        return "Lessons Learned"
    if _CONTEXT_CUE.search(text):
        return "Active Context"
    return "User Preferences"


def role_tag_for(text: str, user_id: str | None) -> str | None:
    """The role a preference belongs to when it is known: said in the message ("我是 CRC",
    "[PI]: ...") or carried by the user id (``u-pi-zhang`` -> ``PI``); otherwise None."""
    norm = _nfkc(text)
    for pattern in (_ROLE_TAG_PREFIX, _ROLE_IN_TEXT):
        m = pattern.search(norm)
        if m:
            return m.group(1).upper()
    if user_id:
        for part in re.split(r"[-_.@:]", user_id):
            if part.upper() in _ROLES:
                return part.upper()
    return None


def relaxes_system_rules(text: str) -> bool:
    """True when a statement asks to ignore, relax or remove the admin's rules (case B09):
    ``以后别理会管理员的禁止事项…``, ``From now on, ignore the admin prohibitions section.``"""
    norm = _nfkc(text)
    return bool(_RELAX_VERB.search(norm) and _RELAX_OBJECT.search(norm))


def extract_rule_candidates(messages: Sequence[FlowLogEntry]) -> list[Candidate]:
    """The rule extractor: durable statements of the USER messages, one candidate each.

    Assistant messages are skipped (the assistant's own words never become memory). Each
    candidate cites the message it came from; its section comes from :func:`classify_section`
    and, for preferences, its role tag from :func:`role_tag_for`.
    """
    out: list[Candidate] = []
    for m in messages:
        if m.role != "user":
            continue
        for position, (clause, question) in enumerate(split_statements(m.content)):
            if question:
                continue
            text = find_statement(clause)
            if text is None:
                continue
            section = classify_section(text)
            tag = role_tag_for(m.content, m.user_id) if section == "User Preferences" else None
            out.append(
                Candidate(
                    text=text,
                    section=section,
                    role_tag=tag,
                    evidence=[m.message_id],
                    origin="rules",
                    order=(_order_key(m), position),
                )
            )
    return out


def _order_key(m: FlowLogEntry) -> str:
    return f"{m.at.isoformat()}#{m.message_id}"


# ------------------------------------------------------------ text analysis
_NEGATION = re.compile(
    r"不要|不得|不准|不许|不能|不可|不用|不必|不再|禁止|严禁|切勿|请勿|勿|别|避免|杜绝|"
    r"不(?=[写发用提输给让做说回列加填录打联])|"
    r"\b(?:do not|don't|dont|never|no longer|avoid|must not|mustn't|should not|shouldn't|stop)\b|\bnot\b",
    re.IGNORECASE,
)
_NOISE = re.compile(
    r"系统禁令|以后|今后|往后|从现在起|从现在开始|记住|谢谢|麻烦|[的了都就也吧呢啊呀哦请]|"
    r"\b(?:please|thanks|thank you|from now on|going forward|always|remember(?: that)?|the|a|an)\b",
    re.IGNORECASE,
)
_TOPICS: dict[str, re.Pattern[str]] = {
    "reply_language": re.compile(
        r"(?:回复|回答|答复|作答|交流|沟通|\breply\b|\breplies\b|\banswer|\brespond|\bwrite\b|\btalk\b).*?"
        r"(?:中文|汉语|英文|英语|日文|日语|\benglish\b|\bchinese\b|\bjapanese\b)|"
        r"(?:中文|汉语|英文|英语|日文|日语|\benglish\b|\bchinese\b|\bjapanese\b).*?"
        r"(?:回复|回答|答复|作答|交流|\breply\b|\breplies\b|\banswers?\b|\brespond)",
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
_LANG_NEGATED = re.compile(r"(?:别|不要|不用|不再|不|勿|\bnot?\b|\bnever\b|n't|\bstop\b)\s*(?:再\s*)?(?:用|使用|in|use|using|write|answer)?\s*$", re.IGNORECASE)


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


@lru_cache(maxsize=4096)
def analyse(text: str) -> Analysis:
    """Analyse one line or candidate text (cached; pure)."""
    norm = _nfkc(text).casefold()
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


def is_duplicate(candidate: Analysis, line: Analysis) -> bool:
    """``candidate`` adds nothing to ``line`` (case B01): the same reply-language value, or the
    same polarity and equal cores, one core contained in the other (at least 4 Han characters /
    12 letters), or every content bigram / word / number of the candidate already in the line."""
    if candidate.reply_language and line.reply_language:
        return _language_values_agree(candidate.reply_language, line.reply_language)
    if candidate.negative != line.negative:
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
    if candidate.negative != line.negative or is_duplicate(candidate, line):
        return False
    small = min(len(candidate.grams), len(line.grams))
    return small >= 3 and len(candidate.grams & line.grams) / small >= 0.8


def _language_values_agree(new: str, old: str) -> bool:
    """A new reply-language statement adds nothing to ``old``: equal values, or the new one
    only says "not X" while the old one names another language."""
    if new == old:
        return True
    return new.startswith("not-") and not old.startswith("not-") and new[4:] != old


def contradicts(candidate: Analysis, line: Analysis) -> bool:
    """Same subject with the opposite polarity, or a different reply language (case B02)."""
    if candidate.reply_language and line.reply_language:
        return not _language_values_agree(candidate.reply_language, line.reply_language)
    return same_topic(candidate, line) and candidate.negative != line.negative


def stable_id(prefix: str, *parts: str) -> str:
    """A deterministic id (``{prefix}-{12 hex}``) so a re-applied merge builds identical items."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:12]
    return f"{prefix}-{digest}"


__all__ = [
    "Analysis",
    "analyse",
    "classify_section",
    "contradicts",
    "extract_rule_candidates",
    "find_statement",
    "is_duplicate",
    "language_of",
    "languages_present",
    "normalise_core",
    "relaxes_system_rules",
    "role_tag_for",
    "same_topic",
    "split_statements",
    "stable_id",
    "supersedes",
]
