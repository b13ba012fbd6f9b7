"""A down-vote's reason as the rater's preference about how answers are given.

A reason attached to a down-vote is an implicit "from now on, answer like this" of the rater
(docs/architecture.md, "Feedback and reminders"), but it is usually written as a
complaint about the answer's form, not as a directive. :func:`feedback_preference` turns it into a
clean statement in the rater's language, by KIND of fragment (never by phrase):

- an instruction already in it ("只要数字", "just the bottom line", "别再…", "use a table",
  "answers in English") is kept as the preference;
- a complaint that something is too much / too little ("太长了", "语气太冲", "too many bullet
  points", "way too formal") becomes its negation ("不要太长", "语气不要太冲", "not too many bullet
  points"; "too few X" -> "more X");
- something missing ("没有引用周报", "缺少出处", "怎么不标日期", "no sources", "didn't cite the
  protocol") becomes what to include ("要引用周报", "要有出处", "要标日期", "include sources",
  "cite the protocol");
- a bare judgement ("答错了", "不对", "没用", "wrong", "useless", "not helpful"), a fragment about
  one study subject (an id such as P005) and anything else states no preference and is dropped.

Instructions come first, then the converted complaints; a statement without its own subject gets
"回答" / "Answers:" so the line says what it is about. Deterministic and offline; nothing logged.
"""

from __future__ import annotations

import re

from agent_memory.hot_memory.analysis import SUBJECT_ID, language_of, nfkc

_I = re.IGNORECASE

#: a judgement of the answer with no preference in it (wrong / useless / not what was asked)
_JUDGEMENT = re.compile(
    r"^(?:(?:你|这个?|回答|答案|结果|数据|内容|完全|根本|又|也|都|全)*"
    r"(?:答错了?|错了|有错|错误|不对|不准确?|有误|没用|无用|没意义|没有?帮助|答非所问|不行|不好|很差|太差|垃圾|看不懂|不清楚|"
    r"胡说|瞎说|乱说|不是我要的|不是我问的))[了吧啊呀的!！。.]*$|"
    r"^(?:(?:this|that|it|the answer|answer)\s+(?:is|was|'s)\s+)?(?:just\s+|completely\s+|totally\s+|plain\s+)?"
    r"(?:wrong|incorrect|inaccurate|useless|unhelpful|not helpful|not useful|bad|nonsense|rubbish|no good|"
    r"not what i asked(?: for)?|doesn'?t answer(?: the question)?|off[- ]topic)[.!]*$",
    _I,
)
#: lead words and fillers before a fragment's substance
_LEAD = re.compile(
    r"^(?:[，,：:、\s]|哎|唉|呃|嗯+|啊|哦|噢|额|还有|另外|而且|然后|所以|拜托|麻烦|求求你?|请你?|你(?=[只就能给要别用先少多])|"
    r"我(?=只|就|要|想|希望|需要)|"
    r"ugh\b|meh\b|hmm+\b|also\b|and\b|so\b|but\b|pls\b|plz\b|please\b)+",
    _I,
)
_ZH_INSTRUCTION = re.compile(
    r"^(?:只|直接|就|给|用|先|要|别|不要|不用|不必|少|多|加|附|标|列|写|按|分|改|放|把|换|说|讲|简单|简短|简洁|精简|"
    r"一句话|一两句|重点|挑|留|保留|去掉|删掉|省掉|控制在|最好|应该|得|需要|必须|记得|注意|统一|全部|都用|每次|想要|希望|"
    # a limit on the answer's size ("三句话以内", "5条以下")
    r"[0-9一二两三四五六七八九十百]+\s*(?:句|条|点|行|段|个字|字|页)[^，,]{0,4}(?:以内|以下|之内|左右|就够|就行|足够))"
)
_EN_INSTRUCTION = re.compile(
    r"^(?:just|only|give|use|keep|send|put|list|show|cite|include|add|answer|reply|respond|write|be|start|lead|skip|drop|"
    r"stop|don'?t|do not|no more|fewer|less|shorter|stick|make|break|sort|group|link|quote|mention|state|say|"
    r"summari[sz]e|should|must|need|always|never|prefer|bottom line|tl;?dr|in (?:english|chinese|a table|bullets?))\b",
    _I,
)
#: "answers in English", "replies should be short": a statement with its own subject
_EN_ANSWER_SUBJECT = re.compile(r"^(?:the\s+)?(?:answers?|repl(?:y|ies)|responses?)\b", _I)
_ZH_ANSWER_SUBJECT = re.compile(r"^(?:回答|回复|答复|答案)")

_ZH_TOO = re.compile(
    r"^(?P<subj>.*?)(?:也|还是|又|实在|真的|有点|有些|未免)?(?:太|过于|过分)(?P<adj>[^，,。！!？?]{1,8}?)了?[吧啊呀啦]*$"
)
_ZH_MISSING = re.compile(
    r"^(?P<subj>.*?)(?:都|也|又|还|完全|根本)?(?P<neg>(?:为什么|为啥|怎么)(?:不|没有?)|没有|没|未|缺少|缺了|缺|漏了|漏掉了?|少了|忘了)(?P<x>.+)$"
)
_ZH_VERB = re.compile(
    r"^(?:引用|给出?|附上?|标注?|列出?|说明|注明|写|提供|提到|带上?|按|用上|注上?|讲|说|指出|给个|显示|展示|标出|写出|区分)"
)
#: the answer itself named as a complaint's subject ("今天这个回答", "你的回复"): "回答" / "回复"
_ZH_THIS_ANSWER = re.compile(
    r"^(?:今天|刚才|这次|上次|又|你)?(?:这个|这条|这段|这些|你的|你这个?|的)*(?P<w>回答|回复|答复|答案)$"
)
_EN_TOO = re.compile(
    r"^(?P<subj>.*?)\s*(?:(?:is|was|are|were|'s|'re|seems?|feels?|got)\s+)?"
    r"(?:(?:way|much|far|a bit|a little|kind of|kinda|really|so|just)\s+)?too\s+(?P<adj>.+)$",
    _I,
)
_EN_MISSING = re.compile(
    r"^(?:.*?\b)?(?:no|missing|without|lacks?|lacking|there (?:is|was|are|were) no)\s+"
    r"(?P<x>(?!more\b|need\b)[a-z][\w\s'-]{2,60})$|"
    r"^(?:.*?\b)?(?:didn'?t|did not|doesn'?t|does not|never|forgot to|failed to)\s+"
    r"(?P<v>cite|include|mention|show|give|list|quote|reference|link|state|use|add|attach|name)\s+(?P<y>.+)$",
    _I,
)


#: a complaint that something cannot be seen / said / found: a judgement, not an instruction
_ZH_CANNOT = re.compile(r"^[^别不]{0,4}不(?:清|明|出来|到|懂)")
_CJK_SPACE = re.compile(r"(?<=[\u3400-\u9fff])[ \t\u3000]+(?=[\u3400-\u9fff])")


def _fragments(reason: str) -> list[str]:
    text = _CJK_SPACE.sub("，", nfkc(reason))
    parts = re.split(r"[。！？!?；;\n，,、]+|\s+[-–—]+\s+|(?<=[a-z0-9])\.(?:\s+|$)", text, flags=_I)
    return [p.strip() for p in parts if p.strip()]


def _tidy(fragment: str) -> str:
    text = _LEAD.sub("", fragment).strip()
    text = re.sub(r"[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f\u200d]+", "", text)
    text = re.sub(r"(?:\s*\b(?:please|pls|plz|thanks|thank you|thx|lol|haha)\b)+\s*$", "", text, flags=_I).strip()
    text = re.sub(r"\s+(?:at all|whatsoever)$", "", text, flags=_I)
    return re.sub(r"[了吧啊呀啦哈哦呢嘛]+$", "", text).strip(" .!~～")


def _too(text: str, zh_target: bool) -> tuple[str, bool, bool] | None:
    """A "too much / too little" complaint, negated in the target language."""
    zh_too = _ZH_TOO.match(text)
    if zh_too and zh_too.group("adj").strip():
        subj, adj = zh_too.group("subj").strip(), zh_too.group("adj").strip()
        this = _ZH_THIS_ANSWER.match(subj)
        subj = this.group("w") if this else subj
        if zh_target:
            return f"{subj}不要太{adj}", False, bool(subj)
        return (f"{subj}: not too {adj}" if subj else f"not too {adj}"), False, bool(subj)
    en_too = _EN_TOO.match(text)
    if en_too:
        # "it", "this sounded", "your reply was": the answer itself, no subject of its own
        subj = re.sub(r"^(?:it|this|that|(?:the|your) (?:answer|reply|response)|answer|reply)(?:\s+[a-z]+)?$", "",
                      en_too.group("subj").strip(), flags=_I)
        adj = en_too.group("adj").strip()
        few = re.match(r"(?:few|little)\s+(.+)", adj, _I)
        piece = f"more {few.group(1)}" if few else f"not too {adj}"
        return (f"{subj}: {piece}" if subj else piece), False, bool(subj)
    return None


def _convert(fragment: str, zh_target: bool) -> tuple[str, bool, bool] | None:
    """``(piece, is_instruction, has_subject)`` for one fragment, or None when it states nothing."""
    text = _tidy(fragment)
    if not text or _JUDGEMENT.match(text) or _JUDGEMENT.match(fragment.strip()) or SUBJECT_ID.search(text):
        return None  # a judgement, or something about one study subject (not how answers are given)
    if language_of(text) == "zh" or re.search(r"[\u3400-\u9fff]", text):
        if re.match(r"^(?:别|不要|千万别|不用|不必)", text):
            return re.sub(r"^(?:别再|别|不要再|千万别)", "不要", text), True, False
        too = _too(text, zh_target)
        if too is not None:
            return too
        if _ZH_CANNOT.match(text):
            return None
        if _ZH_INSTRUCTION.match(text):
            return text, True, False
        missing = _ZH_MISSING.match(text)
        if missing and missing.group("x").strip() and not _JUDGEMENT.match(missing.group("neg") + missing.group("x")):
            x = missing.group("x").strip()
            subj = missing.group("subj").strip()
            subj = "" if re.fullmatch(r"你|这个?|回答|答案|也|都", subj) else subj
            return f"{subj}{'要' if _ZH_VERB.match(x) else '要有'}{x}", False, bool(subj)
        if language_of(text) == "zh":
            return None
    if _EN_ANSWER_SUBJECT.match(text) and not _EN_TOO.match(text):
        return text, True, True
    if _EN_INSTRUCTION.match(text):
        return text, True, False
    too = _too(text, zh_target)
    if too is not None:
        return too
    missing = _EN_MISSING.match(text)
    if missing:
        if missing.group("v"):
            return f"{missing.group('v').lower()} {missing.group('y').strip()}", False, False
        return f"include {missing.group('x').strip()}", False, False
    return None


def feedback_preference(reason: str) -> str | None:
    """The preference a down-vote ``reason`` states about how answers are given, as one clean line
    in the reason's language (zh: closed with 。; en: capitalised, closed with a full stop), or
    None when the reason is only a judgement or states nothing actionable (see the module
    docstring)."""
    zh = language_of(reason) == "zh"
    pieces = [p for p in (_convert(f, zh) for f in _fragments(reason)) if p is not None]
    if not pieces:
        return None
    ordered = [p for p in pieces if p[1]] + [p for p in pieces if not p[1]]
    texts = list(dict.fromkeys(p[0] for p in ordered))
    if zh:
        # the answer word the rater used ("回复…"), said once, at the start
        word = next((m.group() for t in texts if (m := _ZH_ANSWER_SUBJECT.match(t))), "回答")
        if not ordered[0][2] and not re.search(r"回答|回复|答复", texts[0]):
            texts[0] = f"{word}{texts[0]}"
        if texts[0].startswith(word):
            texts[1:] = [t.removeprefix(word) for t in texts[1:]]
        body = "，".join(texts)
        return f"{body}。"
    body = ", ".join(texts)
    if not ordered[0][2] and not _EN_ANSWER_SUBJECT.match(body):
        body = f"Answers: {body}"
    body = body[0].upper() + body[1:]
    return body if body[-1] in ".!" else f"{body}."


__all__ = ["feedback_preference"]
