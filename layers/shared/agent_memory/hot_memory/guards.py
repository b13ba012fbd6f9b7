"""The distillation guards against the System Rules: does a statement permit what a rule forbids,
or waive what a rule requires? (docs/architecture.md, "Hot memory": a candidate that would relax a
System Rule goes to the review queue.)

Both extractors (rules and LLM) go through :func:`relaxed_rules`; it decides by MEANING, not by
whether the statement names the rule:

- each System Rule is read as a set of safeguard concepts (bilingual lexicon below): things it
  forbids (identifiers of subjects, the AI writing EDC records, sending outside before sign-off,
  dosing advice, anything by treatment arm) and things it requires (a signature, a confirmation);
- a statement relaxes a rule when it shares a forbidden concept that it does not negate AND it
  carries a permission or waiver cue ("直接", "不用", "就行", "just", "skip", "you can") or asks
  the assistant to output it ("写上名字", "include the name") without keeping the sign-off, or when
  it waives a required concept ("不用走签字", "without sign-off"), or when it names the rules and
  asks to relax them ("系统规则…能不能松一下", "the blinding rule … from now on you can");
- when unsure, the statement is queued: a false alarm costs an admin a click, a promotion costs a
  safeguard.

Deterministic and offline; nothing is logged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_memory.domain.models import HotMemoryLine
from agent_memory.hot_memory.analysis import analyse, nfkc

_I = re.IGNORECASE


@dataclass(frozen=True)
class _Concept:
    """A safeguard concept: ``all_of`` patterns must each match (an action and its object)."""

    name: str
    kind: str  # "forbidden" | "required"
    all_of: tuple[re.Pattern[str], ...]


_CONCEPTS: tuple[_Concept, ...] = (
    _Concept("identity", "forbidden", (re.compile(
        r"姓名|(?<!文件)名字|全名|真名|身份证|手机号|电话号码|住址|病人名|患者名|"
        r"\b(?:patient|subject|participant|full|real|first|last|family)(?:'s|s')? names?\b|\bnames? of\b|"
        r"\bphone numbers?\b|\bid numbers?\b|\bidentif", _I),)),
    _Concept("record_write", "forbidden", (
        re.compile(r"修改|删除|删掉|删了|删|改掉|改了|改|更正|编辑|\b(?:edit|modify|delete|remove|change|correct|fix|"
                   r"overwrite|update)\w*\b", _I),
        re.compile(r"EDC|eCRF|记录|数据|受试者|\brecords?\b|\bentr(?:y|ies)\b|\bdata\b|\bsubjects?\b", _I),
    )),
    _Concept("external_send", "forbidden", (
        re.compile(r"发|抄送|抄给|转给|\b(?:send|sent|forward|cc|share|e-?mail)\w*\b", _I),
        re.compile(r"院外|外部|对外|CRA|药企|申办方|伦理|其他中心|\bsponsor|\bethics|\bexternal|\boutside", _I),
    )),
    _Concept("dosing", "forbidden", (re.compile(r"剂量|用量|给药方案|\bdos(?:e|es|ing|age)\b|\bmg\b", _I),)),
    _Concept("arm_split", "forbidden", (re.compile(
        r"双盲|揭盲|破盲|治疗组|按组|组别|\bby arms?\b|\bper arm\b|\bsplit by arm|\btreatment (?:arm|group)s?\b|"
        r"\bunblind|\bblinding\b|\ballocation\b", _I),)),
    _Concept("sign_off", "required", (re.compile(
        r"签字|签名|确认|批准|审批|点头|同意|过目|\bsign(?:ed|ing|-off| off|ature)?\b|\bapprov\w*|\bconfirm\w*", _I),)),
)

_PERMISSION = re.compile(
    r"直接|不用|不必|无需|用不着|不需要|跳过|省得|省去|免得|就行|就好|就可以|没关系|没事|可以|松一下|放宽|例外|通融|反正|"
    r"\bjust\b|\bskip\b|\bno need\b|\bdon'?t need\b|\bneedn'?t\b|\byou can\b|\bit'?s fine\b|\bis fine\b|\bok to\b|"
    r"\bokay to\b|\ballowed\b|\bgo ahead\b|\bdirectly\b|\bwithout\b|\banyway\b",
    _I,
)
#: asking the assistant to output something: with a forbidden object and no negation, a request
#: to do what the rule forbids ("编号后面写上名字", "include the name")
_OUTPUT_ASK = re.compile(
    r"写上|写|加上|标上|标注|显示|列出|给我|告诉|提供|放上|附上|"
    r"\b(?:show|include|add|list|give|tell|provide|put|display|break down|split)\b",
    _I,
)
_NEGATION_BEFORE = re.compile(
    r"(?:不要|不能|不得|不准|不许|不可|禁止|严禁|别|勿|不|\bno\b|\bnot\b|\bnever\b|n't|\bwithout\b)"
    r"[^，,。；;]{0,8}$",
    _I,
)
_WAIVE_BEFORE = re.compile(
    r"(?:不用|不必|无需|不需要|用不着|跳过|省得|省去|不等|别等|不走|"
    r"\bskip(?:ping)?\b|\bwithout\b|\bno need (?:for|to)\b|"
    r"\bdon'?t (?:need|wait)\b)[^，,。；;]{0,10}$",
    _I,
)
_TOO_SLOW = re.compile(r"太慢|太麻烦|麻烦|来不及|\btoo slow\b|\btakes? too long\b", _I)
_NAMES_RULES = re.compile(
    r"系统规则|规则里|那条规则|这条规则|管理员的?(?:规定|规则|禁令|要求)|禁令|\brules?\b|\bpolicy\b|\bprohibition", _I
)
_RELAX_ASK = re.compile(
    r"松一下|放宽|放松|取消|解除|不适用|例外|通融|忽略|无视|别管|不用管|不用遵守|绕过|跳过|"
    r"\brelax|\blift\b|\bwaive|\bexception|\bignore|\bbypass|\bskip\b|\byou can\b|\bit'?s fine\b|\bdoesn'?t apply",
    _I,
)


def _hits(concept: _Concept, text: str) -> list[re.Match[str]]:
    """The matches of the concept's FIRST pattern when every pattern matches ``text``, else []."""
    if not all(p.search(text) for p in concept.all_of):
        return []
    return list(concept.all_of[0].finditer(text))


def concepts_of(text: str) -> set[str]:
    """The safeguard concepts a text mentions (a rule's or a statement's)."""
    norm = nfkc(text)
    return {c.name for c in _CONCEPTS if _hits(c, norm)}


def relaxed_concepts(statement: str, context: str = "", *, asks_output: bool = False) -> set[str]:
    """The concepts ``statement`` relaxes (see the module docstring). ``context`` is the whole
    message the statement came from: its action/object words complete a concept the statement
    only half names ("以后这种小错你都直接改" in a message about EDC). ``asks_output``: the
    statement says how answers must look (a down-vote's reason), so a forbidden concept it names
    without negating is asked for even without an output verb."""
    norm = nfkc(statement)
    whole = nfkc(f"{context}\n{statement}") if context else norm
    permission = bool(_PERMISSION.search(norm))
    sign_off = next(c for c in _CONCEPTS if c.name == "sign_off")
    affirms_sign_off = any(
        not _WAIVE_BEFORE.search(norm[: m.start()]) and not _NEGATION_BEFORE.search(norm[: m.start()])
        for m in sign_off.all_of[0].finditer(norm)
    )
    asks = (asks_output or bool(_OUTPUT_ASK.search(norm))) and not affirms_sign_off
    out: set[str] = set()
    for concept in _CONCEPTS:
        if not all(p.search(whole) for p in concept.all_of):
            continue
        own = list(concept.all_of[0].finditer(norm)) or list(concept.all_of[-1].finditer(norm))
        if concept.kind == "forbidden":
            free = [m for m in own if not _NEGATION_BEFORE.search(norm[: m.start()])]
            if (permission or asks) and free:
                out.add(concept.name)
        else:
            waived = [m for m in own if _WAIVE_BEFORE.search(norm[: m.start()])]
            slow = any(_TOO_SLOW.search(norm[m.end(): m.end() + 12]) for m in own)
            if waived or slow:
                out.add(concept.name)
    return out


def relaxed_rules(statement: str, rules: Sequence[HotMemoryLine], context: str = "", *,
                  asks_output: bool = False) -> list[HotMemoryLine]:
    """The System Rules ``statement`` would relax, best match first; [] when it relaxes none.

    A rule is relaxed when it holds a concept the statement relaxes (a waived requirement counts
    only together with a forbidden concept, or when no rule shares a forbidden one), or when the
    statement names the rules and asks to relax them (then the rules it shares words or concepts
    with, else all rules: unsure -> queue). ``asks_output``: see :func:`relaxed_concepts`.
    """
    if not rules:
        return []
    relaxed = relaxed_concepts(statement, context, asks_output=asks_output)
    scored: list[tuple[int, int, HotMemoryLine]] = []
    for i, rule in enumerate(rules):
        shared = relaxed & concepts_of(rule.text)
        if shared:
            forbidden = sum(1 for c in _CONCEPTS if c.name in shared and c.kind == "forbidden")
            scored.append((forbidden * 2 + len(shared), -i, rule))
    if scored and any(s[0] >= 2 for s in scored):
        scored = [s for s in scored if s[0] >= 2]
    if scored:
        return [s[2] for s in sorted(scored, key=lambda s: (s[0], s[1]), reverse=True)]
    norm = nfkc(statement)
    if _NAMES_RULES.search(norm) and _RELAX_ASK.search(norm):
        mentioned = concepts_of(statement)
        info = analyse(statement)
        near = [r for r in rules if (concepts_of(r.text) & mentioned) or len(analyse(r.text).grams & info.grams) >= 2]
        return near or list(rules)
    return []


__all__ = ["concepts_of", "relaxed_concepts", "relaxed_rules"]
