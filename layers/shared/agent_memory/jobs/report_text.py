"""Text rules of the weekly report: what a readable point is, and what says nothing.

- :func:`condense`: one sentence of the week as a report point: list markers, acknowledgements,
  fillers, emoji and end particles removed; questions, requests to the assistant, standing
  preferences (hot-memory material) and assistant advice are not events of the week (None).
- :func:`is_placeholder`: a point with no substantive content beyond a stock phrase ("暂无历史记录",
  "No prior history", "本周无新进展", "Nothing to report this week"), whatever evidence it cites.
- :func:`similar`: two points that say nearly the same (character bigrams), merged in a report.
"""

from __future__ import annotations

import re
import unicodedata

_LABEL = re.compile(r"^\s*【[^】]{0,40}】\s*")
_LIST_MARK = re.compile(r"^\s*(?:\d{1,2}\s*[).、:：]|[（(]\d{1,2}[)）]|[-*•·]|[\u2460-\u2473])\s*")
_FILLER_HEAD = re.compile(
    r"^(?:(?:好的|好吧|好(?=[,，。!！\s])|嗯+|哦+|噢|ok(?:ay)?|收到|了解|明白了?|对了|那就|那(?=[,，\s])|然后|另外|还有|"
    r"所以|其实|(?:你)?(?:帮我)?(?:记一下|记下|记住|备注一下)|"
    r"\bso\b|\bwell\b|\balright\b|\bsure\b|\bthanks\b|谢谢)[,，、。!！~～:：\s]*)+",
    re.IGNORECASE,
)
#: "这个坑记住：", "还有个教训也记下：": a lesson handed to the assistant; the point keeps "教训：".
_LESSON_HEAD = re.compile(
    r"^(?:还有|另外)?(?:这|那|一)?个?(?:教训|坑|经验)(?:也|要|得)?(?:记下|记一下|记住|记着)[:：,，]?\s*"
)
_TAIL_PARTICLES = re.compile(r"[吧啊呢哈啦呀嘛哦～~]+(?=[。！!.]*$)")
_EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f\u200d]")
_QUESTION = re.compile(
    r"[?？]|[吗么]\s*[。.!！]?$|^(?:请问|问下|问一下|想问)|是什么|是多少|有没有|是哪|哪几|多少[个例人天]?\s*$"
    # a bare topic as a request ("上周的AE情况"), not a statement ending in the same noun
    r"|^[^,，:：]{0,10}的?(?:情况|进度|结果)\s*$",
)
#: Requests to the assistant and standing preferences: conversation with the assistant (the
#: preferences go to hot memory through distillation), not events of the project's week.
_TO_ASSISTANT = re.compile(
    r"^(?:帮我|帮忙|请你|麻烦你?|给我|你(?!们))|你(?!们)[^,，。]{0,8}?(?:这样|那样|别|不要|记得|记住)"
    r"|(?:以后|今后|往后|从今天起|从现在起)[^,，。]{0,12}?(?:给我|发我|都|统一|就|别|不要|请)"
    r"|^(?:can|could|would) you\b|^please\b|\bfrom now on\b|\bgoing forward\b",
    re.IGNORECASE,
)
#: Advice in an assistant reply (suggestions, rules recited): not an event of the week.
_ADVICE = re.compile(
    r"建议|请在|请核实|请确认|需(?!求)|须|应当|应在|可以|如确认|如需|\bshould\b|\bplease\b|\brecommend"
)

#: The words of a no-content point: negation of existence and generic nouns of a report.
_STOCK = re.compile(
    r"暂无|暂时|没有|尚未|未|无|本周|这周|该周|目前|当前|暂|相关|任何|新增?的?|的|了|可|需要|记录|历史|内容|信息|"
    r"数据|进展|进度|决策|决定|问题|事项|更新|汇报|报告|归档|总结|发现|发生|出现|特别|重大|重要|值得|一切|正常|均|都|"
    r"\b(?:no|none|nothing|n/?a|not|any|prior|previous|history|records?|content|information|data|progress|"
    r"decisions?|issues?|problems?|updates?|to|report(?:ed)?|this|week|available|yet|noted|notable|significant|"
    r"new|was|were|there|is|are|the|of|for|in|found|observed|identified|occurred|made|all|normal|at|time)\b",
    re.IGNORECASE,
)
_DATE_OR_ID = re.compile(r"\d{4}-w\d{1,2}|\d{1,4}[-/]\d{1,2}(?:[-/]\d{1,2})?|\bm[-_]?[0-9a-z-]+\b", re.IGNORECASE)
_NON_WORD = re.compile(r"[\W_]+")


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def condense(sentence: str, *, role: str) -> str | None:
    """``sentence`` (one sentence of a message of the week) as a readable report point, or None
    when it is no event of the week: a question, a request to the assistant, a standing
    preference, an acknowledgement, or (``role == "assistant"``) advice."""
    text = _EMOJI.sub("", _LABEL.sub("", sentence))
    for _ in range(2):
        text = _LIST_MARK.sub("", text)
        text = _FILLER_HEAD.sub("", text).strip()
    text = _LESSON_HEAD.sub("教训：", " ".join(text.split()))
    if _QUESTION.search(text) or _TO_ASSISTANT.search(text):
        return None
    if role == "assistant" and _ADVICE.search(text):
        return None
    text = _TAIL_PARTICLES.sub("", text).rstrip(" ,，、;；:：")
    if len(_NON_WORD.sub("", text)) < 4:
        return None
    return text


def is_placeholder(text: str) -> bool:
    """True when ``text`` says nothing beyond a stock phrase: what is left after removing dates,
    week labels, message ids, the negations and generic report nouns (:data:`_STOCK`) and
    punctuation is shorter than two characters."""
    rest = _STOCK.sub(" ", _DATE_OR_ID.sub(" ", _norm(text)))
    return len(_NON_WORD.sub("", rest)) < 2


def _bigrams(text: str) -> set[str]:
    compact = _NON_WORD.sub("", _norm(text))
    return {compact[i : i + 2] for i in range(len(compact) - 1)} or {compact}


def similar(a: str, b: str, *, threshold: float = 0.6) -> bool:
    """True when at least ``threshold`` of the character bigrams of the shorter of ``a`` and ``b``
    are in the other (overlap coefficient): the same news told twice."""
    x, y = _bigrams(a), _bigrams(b)
    return len(x & y) / max(1, min(len(x), len(y))) >= threshold


__all__ = ["condense", "is_placeholder", "similar"]
