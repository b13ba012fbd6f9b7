"""When a cue in a user message is not the speaker's standing statement (the traps of
:mod:`agent_memory.hot_memory.statement_finder`): a hypothetical, a question (unless it asks for a
standing arrangement), a postponement, a tentative thought, the speaker's own promise, reported
speech, a restatement, a one-off, a subject's clinical order. Deterministic; nothing is logged.
"""

from __future__ import annotations

import re

from agent_memory.hot_memory.analysis import SUBJECT_ID, values
from agent_memory.hot_memory.sentences import fragment_at
from agent_memory.hot_memory.statement_lexicon import (
    CLINICAL_ORDER,
    DOSE_REGIMEN,
    HYPOTHETICAL,
    LATER,
    LEAD_FILLER,
    ONE_OFF,
    OUTPUT_OF_ASSISTANT,
    OWN_PROMISE,
    POSTPONE,
    QUESTION_WORDS,
    REPORTED,
    REQUEST,
    RESTATED,
    TENTATIVE,
    UNDECIDED,
)

#: what makes a request a standing one: a standing cue, a recurring occasion or a quantifier
_STANDING_MARK = re.compile(r"以后|今后|往后|每次|每周|每天|每月|每条|都|一律|统一|\bfrom now on\b|\bgoing forward\b|"
                            r"\b(?:the|any|all) [\w -]{2,30}? you (?:send|prepare|give) me\b|"
                            r"\bevery\b|\beach\b|\balways\b|\bfrom (?:the )?next\b", re.IGNORECASE)
#: asking the assistant's opinion ("…要不要…？你觉得呢"): a question after all
_OPINION = re.compile(r"你觉得|你看呢|你说呢|要不要|是不是|好不好|行不行|\bwhat do you think\b|\bshould we\b",
                      re.IGNORECASE)


def standing_request(norm: str) -> bool:
    """A request put as a question that asks for a standing arrangement ("每周给我的清单能不能都带上…",
    "能不能挪到上午10点发", "Can you send me X every other Monday from now on?"), not a one-off
    ("11月的汇总里能不能单独标出…") nor a request for an opinion."""
    return bool(REQUEST.search(norm) and not _OPINION.search(norm) and not _TRY_NOW.search(norm)
                and (_STANDING_MARK.search(norm) or OUTPUT_OF_ASSISTANT.search(norm) or values(norm)))


#: "let me see it now" ("…能不能发我看看？"): a look now, not an arrangement
_TRY_NOW = re.compile(r"看看|瞧瞧|一下|\bfor a look\b|\bright now\b", re.IGNORECASE)


#: someone else's words reported earlier in the sentence ("the sponsor's QA says that from next quarter …")
_REPORTED_THAT = re.compile(r"\b(?<!i )(?:says|said|tells us|told us|mentioned|reported|wants us to know) that\b",
                            re.IGNORECASE)


#: "don't wait until … to say it" ("别攒到周会再说"): no postponement, the opposite
_NOT_UNTIL = re.compile(r"(?:别|不要|不用|不必)[^，,。；;]{0,10}再(?:说|议|讨论)")
#: wait until something before deciding ("等国庆回来再说吧"): a postponement of the whole sentence
_WAIT_UNTIL = re.compile(r"等[^，,。；;]{1,12}再(?:说|议|改|定|弄|看|讨论)")
#: the speaker takes it on themself ("…我周四前都发给中心，你不用管了"): the assistant has nothing to keep
_NOT_YOURS = re.compile(r"你(?:就)?(?:不用|别|甭)管了?|不用你(?:管|操心)|"
                        r"\byou don'?t need to (?:do|handle|worry about) "
                        r"(?:it|this|that)\b", re.IGNORECASE)


#: the rest of a sentence that makes 谁 "whoever" ("往后谁发名单，血压一律写整数")
_WHOEVER = re.compile(r"一律|都|统一")


#: a question put in each report or asked each time ("每次随访电话都要问一句…", "周报都附一句…是什么"), or
#: checked each time ("每回寄药前一天提醒我看看记录仪有没有电")
_ASKED_EACH_TIME = re.compile(r"(?:问|询问|确认)\S{0,6}$|"
                              r"(?:看看|看一下|检查一下|检查|查查|查一下)\S{0,12}$|(?:附|写|注明|写明|标明|说明)一?句?\S{0,12}$|"
                              r"\bask\w*\b[^.]{0,12}$", re.IGNORECASE)


def is_trap(norm: str, start: int, end: int, message: str, *, question: bool, durable: bool = False) -> bool:
    """True when the cue at ``norm[start:end]`` is not a statement of the speaker (see the module
    docstring: hypothetical, question, reported speech, restatement, one-off, subject's clinical
    order)."""
    frag = fragment_at(norm, start, end)
    prefix = norm[:start]
    if HYPOTHETICAL.search(frag[: max(0, frag.find(norm[start:end]))] if norm[start:end] in frag else frag):
        return True
    if HYPOTHETICAL.search(prefix[-6:]):
        return True
    asked = QUESTION_WORDS.search(frag)
    if asked and _ASKED_EACH_TIME.search(frag[: asked.start()]):
        asked = None  # the question to ask each time ("每次随访电话都要问一句最近有没有…")
    if asked and asked.group() in ("谁", "哪位") and _WHOEVER.search(re.split(r"[。；;？?]", norm[start:])[0]):
        asked = None  # whoever does it ("往后谁发名单，血压一律写…"): a universal, not a question
    if (question or asked) and not standing_request(norm):
        return True
    if POSTPONE.search(frag) or (LATER.search(frag.rstrip("。.!！ ~～")) and not _NOT_UNTIL.search(frag)):
        return True
    if _WAIT_UNTIL.search(norm) and not _NOT_UNTIL.search(norm):
        return True  # "…的事，等国庆回来再说吧，现在先别改"
    if TENTATIVE.search(frag) or UNDECIDED.search(norm) or OWN_PROMISE.match(LEAD_FILLER.sub("", frag).strip()) or \
            _NOT_YOURS.search(message):
        return True
    if REPORTED.search(prefix[-12:]) or _REPORTED_THAT.search(re.split(r"[.。!！?？；;](?:\s|$)", prefix)[-1]):
        return True
    if RESTATED.search(norm):
        return True
    if any(not (durable and _each_time(frag, m)) for m in ONE_OFF.finditer(frag)) or (
            durable and SUBJECT_ID.search(frag)):
        return True
    if DOSE_REGIMEN.search(frag) or DOSE_REGIMEN.search(norm):
        return True
    return bool(SUBJECT_ID.search(message) and CLINICAL_ORDER.search(frag)) or bool(
        SUBJECT_ID.search(norm) and CLINICAL_ORDER.search(norm))


#: "every / each" before 这次 / 本次 in a standing statement: "this time" is each time it is done
#: ("以后给CRC的访视提醒里都写上这次要抽哪几管血")
_EACH = re.compile(r"都|每次|每个|每位|每一|一律|\b(?:every|each|all)\b", re.IGNORECASE)


def _each_time(frag: str, one_off: re.Match[str]) -> bool:
    """The one-off word ``one_off`` is 这次 / 本次 after an "every / each" in ``frag``, or 马上 as the
    reaction to an event each time it happens ("SAE一发生就马上发我")."""
    if one_off.group() == "马上":
        return bool(re.search(r"就\s*$", frag[: one_off.start()]))
    return one_off.group() in ("这次", "本次") and bool(_EACH.search(frag[: one_off.start()]))


__all__ = ["is_trap", "standing_request"]
