"""Sentences and clause fragments of a user message, and the clean line a statement becomes.

A message is cut into sentences on sentence ends, line breaks and dashes, with quoted text masked
first (a cue in quotes is someone else's words, and a quote never splits); a sentence is cut into
clause fragments on commas and colons, and in Chinese chat also on a space between two CJK
characters. A found statement keeps the fragments that carry its instruction on and drops reasons
and complaints (:func:`statement_body`), then loses its emoji, lead fillers and polite tails
(:func:`clean_statement`). The word families used are in
:mod:`agent_memory.hot_memory.statement_lexicon`. Deterministic and offline; nothing is logged.
"""

from __future__ import annotations

import re

from agent_memory.hot_memory.analysis import VALUE_PATTERNS, language_of, nfkc, values
from agent_memory.hot_memory.statement_lexicon import (
    ACT_NOW,
    ALSO,
    COMPLAINT,
    CONDITIONAL_HEAD,
    CONTINUE,
    DURABLE_EN,
    DURABLE_ZH,
    EN_TAIL,
    ENDS_IMPERATIVE,
    LEAD_FILLER,
    LESSON,
    ONE_OFF,
    REASON,
    REMEMBER,
    ZH_NEG_LEAD,
    ZH_TAIL,
)

_I = re.IGNORECASE

# ------------------------------------------------------------------ segmentation
_QUOTES = (("“", "”"), ("‘", "’"), ("「", "」"), ("『", "』"), ('"', '"'))
_ASCII_SINGLE = re.compile(r"(?:(?<=^)|(?<=[\s:：(（]))'[^']{1,120}'(?=[\s,.;:!?)）]|$)")
_SENTENCE_END = re.compile(
    r"[。！？!?；;\n]+|…{2,}|(?<=[A-Za-z0-9)\]])(?<!e\.g)(?<!i\.e)(?<!\bProf)(?<!\bDr)(?<!\betc)(?<!\bvs)\.(?=\s|$)"
    # a dash ends a sentence; one between two numbers is a range ("第2–4天")
    r"|\s*(?:——|--|(?<![A-Za-z0-9])[—–]|[—–](?![A-Za-z0-9]))\s*"
    # an emoji before a space closes a thought ("…还以为上传率只有六成😓 以后…")
    r"|[\U0001f300-\U0001faff\u2600-\u27bf]+\s+"
)
_CJK = r"\u3400-\u9fff\uff00-\uffef\u3000-\u303f\U0001f000-\U0001faff\u2600-\u27bf～~"
_SPACE_BETWEEN_CJK = re.compile(rf"(?<=[{_CJK}])[ \t\u3000]+(?=[{_CJK}])")
_EMOJI = re.compile(r"[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f\u200d]+")


def mask_quotes(text: str) -> str:
    """``text`` with every quoted span's inside replaced by ``□`` (same length): cues in quotes
    are someone else's words.

    Quotes are the paired Chinese and English quotation marks, straight double quotes, and
    single quotes around up to 120 characters; an unclosed quote masks nothing. The result has
    ``len(text)`` characters, so offsets into it are offsets into ``text``.
    """
    chars = list(text)
    for open_q, close_q in _QUOTES:
        start = 0
        while True:
            i = text.find(open_q, start)
            if i < 0:
                break
            j = text.find(close_q, i + 1)
            if j < 0:
                break
            for k in range(i + 1, j):
                chars[k] = "□"
            start = j + 1
    masked = "".join(chars)
    for m in _ASCII_SINGLE.finditer(masked):
        masked = masked[: m.start() + 1] + "□" * (m.end() - m.start() - 2) + masked[m.end() - 1 :]
    return masked


def sentence_spans(text: str) -> list[tuple[int, int, bool]]:
    """``[(start, end, is_question), ...]``: character offsets into ``text`` of its sentences, in
    order (quotes masked before splitting, so a quote never splits); ``is_question`` when the
    sentence ends in ``?`` / ``？``."""
    masked = mask_quotes(text)
    out: list[tuple[int, int, bool]] = []
    pos = 0
    for m in _SENTENCE_END.finditer(masked):
        if m.start() > pos:
            out.append((pos, m.start(), "?" in m.group() or "？" in m.group()))
        pos = m.end()
    if pos < len(text):
        out.append((pos, len(text), False))
    return [part for span in out for part in _run_on_parts(masked, span)]


#: where a voice message run on without punctuation turns to its next point ("…我让护士记下来了然后S09-047
#: 下礼拜去外地了…还有以后发我的名单…")
_RUN_ON_TURN = re.compile(r"(?<=[\u4e00-\u9fff])(?=(?:然后|还有|对了|另外|另一个)(?![几些个一点]))")
_PUNCTUATED = re.compile(r"[，,。！？!?；;:：、\s]")


#: a pause of a voice transcript: a space between two Han characters
_PAUSE = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")
#: how many pauses make a run on without punctuation a transcript
_PAUSES = 3
#: a pause that ends a sentence: before a standing cue ("…那个事是这样的 以后每回寄药的前一天…"), so the
#: one-off words of the chatter before it ("今天周六还得跑一趟…") are not the rule's; other pauses stay
#: inside their sentence ("以后每次社区随访的前一天下午 提醒我带上…", "S01这周…改到周四了 然后…")
_SENTENCE_PAUSE = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=以后|今后|往后|从今往后|从现在起)")


def _run_on_parts(masked: str, span: tuple[int, int, bool]) -> list[tuple[int, int, bool]]:
    """``span`` split where a long run without any punctuation or space turns to its next point, or,
    in a long run whose only punctuation is spaces between Han characters (a voice transcript, "开车呢
    语音转的 乱的话你凑合看 今天周六还得… 以后每回…"), at each pause ending a sentence."""
    start, end, question = span
    text = masked[start:end]
    if end - start >= 40 and len(_PAUSE.findall(text)) >= _PAUSES and not _PUNCTUATED.search(_PAUSE.sub("", text)):
        cuts = [start, *(start + m.start() for m in _SENTENCE_PAUSE.finditer(text)), end]
        return [(a, b, question and b == end) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    if end - start < 40 or _PUNCTUATED.search(text):
        return [span]
    cuts = [start, *(start + m.start() for m in _RUN_ON_TURN.finditer(text) if m.start() > 0), end]
    return [(a, b, question and b == end) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def split_statements(text: str) -> list[tuple[str, bool]]:
    """Sentences of a message with a flag ``is_question`` (split on sentence ends, line breaks and
    dashes; quoted text never splits).

    Returns:
        ``[(sentence, is_question), ...]`` in order, each sentence stripped, empty ones left out.
    """
    return [(text[a:b].strip(), q) for a, b, q in sentence_spans(text) if text[a:b].strip()]


def clean_statement(text: str) -> str:
    """A clean statement: no emoji, lead fillers, polite or filler tails; closed with a full stop.

    Chinese text (:func:`~agent_memory.hot_memory.analysis.language_of`) ends in ``。`` and a
    leading 别 / 千万别 becomes 不要; other text starts upper case and ends in ``.`` (or ``!``).
    Returns ``""`` when nothing is left.
    """
    text = _EMOJI.sub("", text)
    text = " ".join(text.split())
    text = LEAD_FILLER.sub("", text).strip()
    if language_of(text) == "zh":
        text = ZH_NEG_LEAD.sub("不要", text)
        text = re.sub(r"\s*\b(?:please|pls|plz)\b\s*", " ", text, flags=_I).strip()
        previous = None
        while previous != text:
            previous = text
            text = ZH_TAIL.sub("", text).strip().rstrip("，,。.;；:：、 ～~")
        return f"{text}。" if text else ""
    text = EN_TAIL.sub("", text).strip().rstrip(",;: —-")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!" else f"{text}."


def fragments(sentence: str) -> list[str]:
    """Clause fragments of a sentence, stripped and non-empty, in order: split on commas and
    colons (full- and half-width) always, on spaces only between CJK characters."""
    marked = _SPACE_BETWEEN_CJK.sub("\x00", sentence)
    parts = re.split(r"[，,：:]|\x00", marked)
    return [p.strip() for p in parts if p.strip()]


#: a fragment stating a rule after its topic ("日期一律写成 2026-11-02 这种格式"): kept
_RULE_INSIDE = re.compile(r"一律|统一|必须|务必|写成|改成|换成|单独|直接(?:放|发|贴|用|写|打成)|(?:再|然后|并)按|"
                          r"从(?:长到短|短到长|高到低|低到高|早到晚|晚到早|新到旧|旧到新|大到小|小到大)|"
                          r"(?:放|列|加|写)(?:一节|一列|一行|一栏)|"
                          r"\balways\b|\bnever\b|\bmust\b",
                          _I)


#: a head naming only an occasion or a document, its instruction still to come ("以后给CRC发访视提醒的时候，
#: …", "以后每次 monitoring visit 的 confirmation letter 草稿，…"): the next fragment completes it
_OPEN_HEAD = re.compile(r"(?:的时候|时候|之前|之后|前后|里面?|当中|中|上面|草稿|的事|这块|方面)\s*$|"
                        r"[那这]一?[项栏列条]\s*$|"  # one item named ("核查清单里HBV DNA那项，…就别列了")
                        # a head announcing what it adds ("…提醒里加一句，让她们通知受试者…"): the content follows
                        r"(?:加|附|写|补|添)(?:上|一)?[句行段条列栏]\s*$|"
                        r"(?:清单|名单|表|报告|汇总|提醒|列表|纪要|记录|文件|导出|模板|\bdrafts?|\bletters?|"
                        r"\blistings?|\breports?|\bsummar(?:y|ies)|\breminders?|\bminutes)\s*$", _I)


def statement_body(head: str, rest_fragments: list[str]) -> str:
    """The cue fragment plus the following fragments that carry the instruction on (an
    imperative start, a "…就行" end, a rule word, or a value such as a weekday, a lead time or a
    format); reasons and complaints are left out. A head naming only an occasion or a document
    (``_OPEN_HEAD``) keeps the fragment after it whatever it starts with, a polite 麻烦 / 请
    included.

    Args:
        head: the fragment holding the cue ("" when none); a conditional head ("如果…", "if …")
            keeps the fragment after it too.
        rest_fragments: the sentence's fragments after ``head``; the first asking for something
            now (``ACT_NOW``) ends the statement unless it completes an open head or sets a value.
    Returns:
        The kept fragments joined with ``，`` (Chinese) or ``, ``.
    """
    kept = [head] if head else []
    bare_head = LEAD_FILLER.sub("", head)
    if head and (CONDITIONAL_HEAD.match(bare_head) or _open(bare_head)) and rest_fragments:
        kept.append(rest_fragments[0])
        rest_fragments = rest_fragments[1:]
    for frag in rest_fragments:
        bare = LEAD_FILLER.sub("", frag)
        sets_value = bool(values(nfkc(frag))) and not COMPLAINT.search(nfkc(frag)) and (
            _SETS.search(nfkc(frag)) is not None or only_values(bare))
        now = ACT_NOW.search(nfkc(frag))
        if now and now.group().startswith("先") and _EACH_OCCASION.search(nfkc(head)):
            now = None  # "每次入户随访前两天，能不能先把…发我": beforehand, each time
        if (now and not sets_value) or any(
                m.group() not in _EACH_TIME_WORDS for m in ONE_OFF.finditer(nfkc(frag))):
            break  # what the message asks for now, or for one day ("C09下礼拜二的随访挪到礼拜三"), ends it
        if REASON.search(frag) and not CONTINUE.match(frag):
            continue
        also = ALSO.search(frag) is not None and _SETS.search(nfkc(frag)) is not None
        if (CONTINUE.match(frag) or CONTINUE.match(bare) or ENDS_IMPERATIVE.search(frag) or also
                or _RULE_INSIDE.search(frag) or sets_value or _CODE_ITEM.fullmatch(bare.strip())):
            kept.append(frag)
    joiner = "，" if language_of(" ".join(kept)) == "zh" else ", "
    return joiner.join(kept)


#: a recurring occasion in a statement's head ("每次入户随访前两天"): 先 after it is "beforehand"
_EACH_OCCASION = re.compile(r"每次|每回|每逢|每当|\b(?:each|every)\b", re.IGNORECASE)


#: a listed item that is a code ("…给 csv，UTF-8"): part of the value before it
_CODE_ITEM = re.compile(r"[A-Za-z0-9][\w.+-]{0,11}")


#: one-off words that also say "each time" in a standing statement ("一发生就马上发我", "都写上这次要抽的管数")
_EACH_TIME_WORDS = frozenset({"马上", "这次", "本次", "这份", "把这"})


#: a verb that sets how an output is done (a fragment holding a value and one of these is an instruction,
#: not a reason such as "周四下午要开伦理会")
_SETS = re.compile(r"发|放|按|用|写|列|改|排|加|附|标|给|挪|调|提前|"
                   r"\b(?:send|put|use|write|list|sort|add|move|include)\b", _I)


#: what makes a head an instruction already (a verb of doing or a rule word)
_DOES = re.compile(r"别|不要|不用|只|都|一律|必须|需|要|做|贴|导|截|出|算|统计|汇总|核|查|删|"
                   r"\b(?:do|don'?t|never|always|must)\b", _I)


def _open(head: str) -> bool:
    """``head`` names only an occasion or a document ("…的时候", "每次的中心启动会议程"): it ends in
    one (``_OPEN_HEAD``), or holds no verb that sets or does anything and no value."""
    norm = nfkc(head)
    return bool(_OPEN_HEAD.search(head)) or not (_SETS.search(norm) or _DOES.search(norm) or values(norm))


def only_values(fragment: str) -> bool:
    """The fragment is its values and at most a short lead ("还是周五上午", "PDF就行")."""
    rest = nfkc(fragment).casefold()
    for pattern in VALUE_PATTERNS.values():
        rest = pattern.sub("", rest)
    return len(re.sub(r"\W|还是|就行|就好|即可|也行|照旧", "", rest)) <= 1


def fragment_at(norm: str, start: int, end: int) -> str:
    """The comma/colon/CJK-space fragment of ``norm`` around ``norm[start:end]`` (character
    offsets; the fragment is returned unstripped)."""
    marked = _SPACE_BETWEEN_CJK.sub("\x00", norm)
    seps = "，,、：:\x00"
    left = max(marked.rfind(c, 0, start) for c in seps) + 1
    rights = [i for i in (marked.find(c, end) for c in seps) if i >= 0]
    return norm[left: min(rights) if rights else len(norm)]


def note_body(rest: str) -> str:
    """A noted lesson (the text after 记一下 / note): its sentences, each without its first
    durable cue and cleaned, joined with ``；`` (Chinese) or ``; ``."""
    parts = []
    for sentence, _ in split_statements(rest):
        s = DURABLE_ZH.sub("", sentence, count=1)
        s = DURABLE_EN.sub("", s, count=1)
        parts.append(clean_statement(s).rstrip("。."))
    zh = language_of(rest) == "zh"
    return ("；" if zh else "; ").join(p for p in parts if p)


def topic_before(sentence: str, cue_start: int) -> str:
    """The topic an English cue follows in its clause ("irAE汇总 from now on 按发生时间排"): the
    clause's words before the cue (lead fillers out) when they are a short noun phrase, else ""."""
    frags = fragments(sentence[:cue_start])
    if not frags or not re.search(r"\S$", sentence[:cue_start].rstrip()) or re.search(r"[，,。；;:：]\s*$",
                                                                                     sentence[:cue_start]):
        return ""
    topic = LEAD_FILLER.sub("", frags[-1]).strip()
    if not topic or REMEMBER.search(topic) or LESSON.search(topic):
        return ""
    if language_of(topic) == "zh":
        return topic if len(topic) <= 16 else ""
    noun_phrase = re.fullmatch(r"(?:the|our|my|all|every|each)\s+[\w' -]{2,40}", topic, re.IGNORECASE)
    return f"{topic} " if noun_phrase else ""
