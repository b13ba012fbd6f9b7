"""The rule engine behind :class:`agent_memory.consultation.symptoms.RuleSymptomExtractor`.

Offline and deterministic; Chinese and English. Built from kinds of wording, never from sample
sentences or ids:

1. **Lexicon** - the packaged DXY lexicon (``data_files/symptom_lexicon.json``: its keys are the
   label vocabulary) plus ``data_files/symptom_lexicon_extra.json`` (colloquial variants, common
   misspellings, English, TCM and adult complaints) loaded on top. Surface forms are matched
   longest first, so a form that CONTAINS a negation (不出汗 = 无汗, 吃不下 = 厌食, 睡不好 = 烦躁不安,
   no appetite) is one mention that asserts its symptom; its inner 不 is never a negation cue.
   Besides plain forms there are kinds of pattern: *part + quality* with modifiers between
   (喉咙有点红 / 肚子有些涨 / 尿量也比平时少 / 鼻音较重 / 不太想吃饭), the same with a negation
   inside (嗓子不疼 / 大便不稀 -> denied; 头不痛了 -> resolved), *normal states* (体温正常 ->
   发烧 denied, 精神很好 -> 精神萎靡 denied), *temperatures* (38.5度, 39℃, 体温37.8, 101°F ->
   发烧 from 37.3 °C) and a guarded bare 烧 (烧到39度, 不烧了, but not 烧伤 / 红烧). A few lexicon
   forms are guarded by context (吐 in 吐槽 / 吐口水, 难受 after another complaint) or too generic
   to count alone (喝水, 炎症). A form listed under two names that IS one of them yields only
   that name (揉眼睛 is not also 抽搐).
2. **Negation** - a cue (没有 / 没 / 无 / 不 / 否认 / 未 / 未见 / 并无 / 不是 / 不存在 / 没发现 /
   不再 ...; no / not / n't / never / without / denies / negative for ...) negates the chain of
   symptoms that follows it: first any number of *filler* words (subjects 孩子/宝宝/he, time
   words 现在/最近, 有/出现/发现/明显/任何/其他, a/any/have/signs of ...), then a symptom, then
   further symptoms joined by list connectors (、 和 及 或 与 跟; English also the comma) or written
   side by side (无发热咳嗽). A comma (in Chinese), 但/就是/还/有, a verb or anything else ends the
   scope: 咳嗽，但没有发烧 / 没有发烧，咳嗽两天了 keep 咳嗽 present. So idioms whose negation is
   followed by a non-symptom word stay positive by construction: 高烧不退, 烧不退, 咳个不停,
   不停地咳, 止不住, 不舒服, 不太咳 / 不怎么咳 (degree, mild: present). Two cues in a row cancel
   (不是没有发烧 -> present). A-not-A questions (有没有 / 是不是 / 会不会) are not negations.
   Post-position denials: 咳嗽、发烧都没有 / 咳嗽也没有 (followed by a clause end).
3. **Resolution** - 不烧了 / 退烧了 / 烧退了 / 咳嗽没有了 / 咳嗽好了 / 不咳了 (a negation plus the
   change-of-state 了, or a resolution verb) mean the symptom WAS present and is going away: it
   stays PRESENT with trend ``improving``; it never flips to denied. Only an explicit denial does
   that - including 不再 / 没再 / no longer, which state the symptom is absent now. 不退烧 /
   没退烧 (a negated resolution) means the fever persists: present.
4. **Trend** - 加重 / 更厉害 / 越来越 / 严重了 / worse -> ``worsening``; 好转 / 减轻 / 好多了 /
   缓解 / better -> ``improving``; negated (没有好转 / 无明显好转 / not better) -> nothing. A trend
   word dates to the symptoms of its clause, or of the clause before when its own has none.
5. **Onset** - time phrases (:mod:`agent_memory.consultation.symptoms.dates`) date the present symptoms of their
   clause (or of the next clauses of the sentence when their own has no symptom); a duration
   (咳嗽三天了) dates the symptom it follows. A clause that reports a change (今天加重了) dates the
   change, not the onset, so it sets none.
6. **One message, one fact per name**: present if any mention is present (a denial in the same
   message is about another time: 之前没发烧，昨天开始发烧); a denial AFTER the last present mention
   means it resolved (present, improving); the trend of the last mention that has one; the
   earliest onset.
"""

from __future__ import annotations

import json
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from importlib import resources
from typing import Literal

from agent_memory.consultation.symptoms.dates import (
    ResolvedDate,
    TimePhrase,
    find_durations,
    find_time_phrases,
)

Status = Literal["present", "denied"]
Trend = Literal["worsening", "improving"]

_CJK = "\u3400-\u4dbf\u4e00-\u9fff"
_BASE_LEXICON = "symptom_lexicon.json"
_EXTRA_LEXICON = "symptom_lexicon_extra.json"


#: Common traditional characters of symptom talk -> simplified (one character each, so spans
#: keep their positions).
_TRADITIONAL = str.maketrans(
    "發燒頭嘔瀉癢熱氣嚨嗎沒無過還腫膿瘡體溫噴難鬧乾潰濕囉聲虛並從現來開們個週禮兩幾號這臉腸脹漲頻對鬱噁喪睏慾糞燙咳",
    "发烧头呕泻痒热气咙吗没无过还肿脓疮体温喷难闹干溃湿啰声虚并从现来开们个周礼两几号这脸肠胀涨频对郁恶丧困欲粪烫咳",
)


def normalise(text: str) -> str:
    """NFKC + casefold, curly apostrophes straightened, and whitespace next to a CJK character
    turned into a comma (Chinese writers often separate clauses with spaces)."""
    norm = unicodedata.normalize("NFKC", text).casefold().translate(_TRADITIONAL)
    norm = norm.replace("\u2019", "'").replace("\u2018", "'")
    norm = re.sub(rf"(?<=[{_CJK}])\s+|\s+(?=[{_CJK}])", ",", norm)
    return norm


def _is_ascii(s: str) -> bool:
    return all(ord(c) < 128 for c in s)


# --------------------------------------------------------------------------------------
# Lexicon
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lexicon:
    """Normalised surface form -> the names it yields, split into CJK forms (matched by
    substring, longest first) and ASCII forms (matched on word boundaries)."""

    names: tuple[str, ...]
    label_names: frozenset[str]
    cjk: dict[str, tuple[str, ...]]
    ascii: dict[str, tuple[str, ...]]
    cjk_lengths: tuple[int, ...]
    ascii_pattern: re.Pattern[str] | None


def _read(name: str) -> dict[str, list[str]]:
    raw = resources.files("agent_memory.consultation.symptoms.data").joinpath(name).read_text("utf-8")
    data = json.loads(raw)
    return {k: v for k, v in data.items() if not k.startswith("_")}


@lru_cache(maxsize=1)
def load_lexicon() -> Lexicon:
    """The packaged lexicon with the extra file loaded on top (cached)."""
    base = _read(_BASE_LEXICON)
    extra = _read(_EXTRA_LEXICON)
    merged: dict[str, list[str]] = {k: list(v) for k, v in base.items()}
    for name, forms in extra.items():
        merged.setdefault(name, [])
        merged[name].extend(forms)
    by_form: dict[str, list[str]] = {}
    for name, forms in merged.items():
        for form in [name, *forms]:
            f = unicodedata.normalize("NFKC", form).casefold().strip()
            if not f:
                continue
            by_form.setdefault(f, [])
            if name not in by_form[f]:
                by_form[f].append(name)
    # A form that IS a name yields only that name (揉眼睛 is also listed under 抽搐).
    names = set(merged)
    resolved = {f: ((f,) if f in names else tuple(ns)) for f, ns in by_form.items()}
    cjk = {f: ns for f, ns in resolved.items() if not _is_ascii(f)}
    asc = {f: ns for f, ns in resolved.items() if _is_ascii(f)}
    pattern = None
    if asc:
        ordered = sorted(asc, key=len, reverse=True)
        pattern = re.compile(r"(?<![a-z0-9'])(?:" + "|".join(re.escape(f) for f in ordered) + r")(?![a-z0-9])")
    return Lexicon(
        names=tuple(merged),
        label_names=frozenset(base),
        cjk=cjk,
        ascii=asc,
        cjk_lengths=tuple(sorted({len(f) for f in cjk}, reverse=True)),
        ascii_pattern=pattern,
    )


#: Lexicon forms that are also parts of everyday words: (pattern that must NOT end right
#: before the form, pattern that must NOT start right after it).
_GUARDS: dict[str, tuple[str, str]] = {
    "吐": ("", r"槽|露|字|词|血本|出真|舌头|的?口水|的?痰"),
    "泡": ("浸", r"奶|澡|脚|茶|水|面|沫"),
    "闹": ("热", r"钟"),
    "哑": ("", r"铃"),
    "泄": ("", r"露|气|愤"),
    # 难受 means nausea only when nothing else hurts in the clause (头痛得很难受 is the headache).
    "难受": (r"(?:头|嗓子|喉咙|咽|鼻子|鼻|眼睛|眼|身上|浑身|全身|心里|心|耳朵|腰|腿|皮肤|痒|疼|痛)[^,;。!?]{0,4}", ""),
}

#: Lexicon forms too generic to assert a symptom on their own: 喝水 (drinking water; thirst is
#: 想喝水 / 爱喝水 / 找水喝) and 炎症 (any inflammation, not a lung shadow).
_TOO_GENERIC = frozenset({"喝水", "炎症"})

# Modifiers allowed between a body part and its quality (喉咙有点红, 尿量也比平时少).
_MOD = (
    r"(?:有点儿?|有些|有一点|一点|稍微|稍|略微|略|很|比较|较|特别|非常|也|还|都|一直|明显|老是|总是|经常|不太|不怎么|不是很|不是特别|"
    r"发|变得|变|越来越|比平时|比以前|比之前|比往常|好像|还是|又|更|偶尔|会|容易|时有|有|是|感觉|觉得|"
    r"也比平时|也比以前|的|说|看着|看起来|摸着)"
)
_MODS = _MOD + r"{0,4}"

#: Part + quality patterns: (name, regex). Kinds, not phrases.
_PART_QUALITY: tuple[tuple[str, str], ...] = (
    (
        "咽部不适",
        r"(?:喉咙|嗓子|咽喉|咽部|扁桃体|咽)" + _MODS + r"(?:红肿|发红|红|肿|疼|痛|痒|干|哑|发炎|不舒服|不适|有异物)",
    ),
    ("腹胀", r"(?:肚子|腹部|肚肚|小肚子|胃)" + _MODS + r"(?:胀|涨|鼓)"),
    ("腹痛", r"(?:肚子|腹部|肚肚|小肚子|胃|肚脐)" + _MODS + r"(?:疼|痛)"),
    ("舌苔发白", r"舌苔" + _MODS + r"(?:发白|厚白|白)"),
    ("尿少", r"(?:尿量|小便量|尿|小便|尿尿)" + _MODS + r"(?:减少|少)"),
    (
        "厌食",
        r"(?:饭量|食欲|胃口|奶量|进食|食量|吃奶|吃饭)"
        + _MODS
        + r"(?:下降|减少|减退|有减|减|少|小|差|不(?:太|怎么|是很|大)?(?:好|佳|香)|不振|一般|不如以前)",
    ),
    ("大便酸臭", r"(?:大便|便便|粑粑|屎)" + _MODS + r"(?:酸臭|有酸味|酸味|发酸|酸|很臭|臭)"),
    ("稀便", r"(?:大便|便便|粑粑)" + _MODS + r"(?:稀|水样|不成形|次数多|次数增多)"),
    ("绿便", r"(?:大便|便便|粑粑)" + _MODS + r"(?:发绿|绿色|绿)"),
    ("鼻塞", r"鼻音" + _MODS + r"重|鼻子" + _MODS + r"(?:塞|堵|不通)"),
    ("揉鼻子", r"鼻子" + _MODS + r"痒"),
    ("揉眼睛", r"眼睛" + _MODS + r"(?:红|痒|肿)"),
    ("头痛", r"(?<![孢])头" + _MODS + r"(?:疼|痛|晕)"),
    ("呼吸困难", r"呼吸" + _MODS + r"(?:急促|困难|费力|急|快)"),
    ("喘气", r"呼吸" + _MODS + r"(?:粗|沉重)"),
    ("精神萎靡", r"精神(?:状态)?" + _MODS + r"(?:差|不(?:太|怎么|是很|大)?(?:好|佳)|欠佳|萎靡|不振)"),
    ("盗汗", r"出(?:了|过)?(?:一些|一点|很多|好多|不少|许多|大量|些|点)?(?:虚)?汗|汗" + _MODS + r"(?:很多|多|不少)"),
    (
        "厌食",
        r"(?:不|没)(?:太|怎么|是很|大|好好|爱|想|愿意|愿|肯|喜欢){1,3}(?:吃|喝|进食)(?:饭|东西|奶|辅食|母乳|水)?(?!药)",
    ),
    ("烦躁不安", r"睡(?:的|得|觉)?(?:不好|不踏实|不安稳|不安|不着|不香|不实)"),
    ("吐泡泡", r"(?:口水|嘴里|嘴巴|嘴|口)" + _MODS + r"(?:泡泡|泡沫)"),
    ("揉眼睛", r"(?:(?<=揉鼻子)|(?<=搓鼻子)|(?<=揉鼻)|(?<=抠鼻))(?:和|、|跟)?眼睛?"),
    ("呕吐", r"(?:吃|喝)奶" + _MODS + r"(?:时|的时候|后)?(?:呛|吐)"),
    ("稀便", r"(?<![不没])拉了?(?:\d+|[一二两三四五六七八九十几]+)(?:次|回)"),
    ("放屁", r"放(?:了|的)?屁"),
    ("肚子咕噜叫", r"(?:肚子|肚肚|肠子)" + _MODS + r"(?:咕噜|咕咕)"),
    ("体重减轻", r"体重" + _MODS + r"(?:增长)?(?:慢|缓慢|较慢|下降|减轻|不长|没长|不增|减少)"),
)

#: Denials written inside a part + quality phrase (嗓子不疼, 头不痛了, 大便不稀, 鼻子不堵):
#: (name, part, quality). A trailing 了 makes it a resolution (present, improving).
_PART_NEG: tuple[tuple[str, str, str], ...] = (
    ("咽部不适", r"喉咙|嗓子|咽喉|咽部|扁桃体", r"红肿|发红|红|肿|疼|痛|痒|干|哑|发炎"),
    ("腹胀", r"肚子|腹部|肚肚|小肚子|胃", r"胀|涨|鼓"),
    ("腹痛", r"肚子|腹部|肚肚|小肚子|胃|肚脐", r"疼|痛"),
    ("尿少", r"尿量|小便量|尿|小便", r"减少|少"),
    ("厌食", r"饭量|食欲|胃口|奶量|食量", r"减少|少|小|差"),
    ("大便酸臭", r"大便|便便|粑粑", r"酸臭|酸|臭"),
    ("稀便", r"大便|便便|粑粑", r"稀|水样"),
    ("鼻塞", r"鼻子", r"塞|堵"),
    ("揉鼻子", r"鼻子", r"痒"),
    ("揉眼睛", r"眼睛", r"红|痒|肿"),
    ("头痛", r"(?<![孢])头", r"疼|痛|晕"),
    ("呼吸困难", r"呼吸", r"急促|困难|费力|急|快"),
    ("精神萎靡", r"精神(?:状态)?", r"差|萎靡"),
    ("皮疹", r"皮肤|身上", r"痒"),
)
_PART_NEG_CUE = r"(?:不再|并不|一点也不|一点都不|也不|都不|不|没有|没|无)"

#: A normal state stated outright denies the symptom (体温正常 -> 发烧 denied; 体温正常了 ->
#: it resolved): (name, regex).
_NORMAL_STATE: tuple[tuple[str, str], ...] = (
    ("发烧", r"(?:体温|温度)" + _MODS + r"(?:正常|不高)"),
    ("精神萎靡", r"精神(?:状态)?" + _MODS + r"(?:很好|挺好|好|不错|正常|良好|可以|还行|佳)(?!转|多|些|点)"),
    ("厌食", r"(?:食欲|胃口|吃奶|吃饭|奶量)" + _MODS + r"(?:很好|挺好|好|不错|正常|良好|可以|还行|佳)(?!转|多|些|点)"),
)

_TEMPERATURE = (
    r"(?<![\d.])(3[7-9]|4[0-2])(\.\d{1,2})?\s*(?:度|°c|°|摄氏度)"
    r"|(?:体温|温度|烧到|烧|最高|高烧|发热|低烧|到)\s*(?:是|有|达|达到|在)?\s*(3[7-9]|4[0-2])(\.\d{1,2})?(?![\d])"
)
_TEMPERATURE_ZH = r"(三十[七八九]|四十[一二]?)(?:度|点([一二三四五六七八九])度?)"
_FAHRENHEIT = r"(?<![\d.])(99|10[0-6])(\.\d)?\s*(?:°f|degrees? f\b|f\b|fahrenheit)"
_BARE_FEVER = r"(?<![红燃焚火发高低退])烧(?![伤心烤饼水饭菜鸡鹅肉香开纸钱毁掉坏])"

#: Resolution forms of fever: improving unless negated (不退烧) or naming a remedy (退烧药).
_RESOLUTION_FORMS = frozenset({"退烧", "退热", "烧退", "热退"})
_REMEDY_AFTER = re.compile(r"(?:药|针|贴|栓|剂|片|的药|的|宝|糖浆|颗粒|口服液)")


@dataclass
class Mention:
    """One symptom mention in normalised text."""

    start: int
    end: int
    names: tuple[str, ...]
    surface: str
    status: Status = "present"
    trend: Trend | None = None
    resolved: bool = False
    onset: ResolvedDate | None = None
    onset_phrase: str | None = None
    negated_by: int | None = None
    explicit_denial: bool = False
    inner_negation: str | None = None


#: A candidate mention: (start, end, names, surface, inner negation flag).
_Candidate = tuple[int, int, tuple[str, ...], str, str | None]


def find_mentions(norm: str) -> list[Mention]:
    """All symptom mentions, non-overlapping, longest first (then leftmost)."""
    cands = [*_lexicon_candidates(norm), *_pattern_candidates(norm), *_fever_candidates(norm)]
    taken = _longest_non_overlapping(cands, len(norm))
    return [Mention(start=s, end=e, names=ns, surface=f, inner_negation=g) for s, e, ns, f, g in taken]


def _guarded(norm: str, start: int, end: int, piece: str) -> bool:
    """Whether the lexicon form ``piece`` at ``start``..``end`` is part of an everyday word
    (:data:`_GUARDS`) or too generic to count alone (:data:`_TOO_GENERIC`)."""
    if piece in _TOO_GENERIC:
        return True
    guard = _GUARDS.get(piece)
    if guard is None:
        return False
    before, after = guard
    if before and re.search(f"(?:{before})$", norm[max(0, start - 12) : start]):
        return True
    return bool(after and re.match(after, norm[end:]))


def _lexicon_candidates(norm: str) -> list[_Candidate]:
    """Lexicon forms: CJK forms by substring (every length at every position), ASCII forms on
    word boundaries."""
    lex = load_lexicon()
    cands: list[_Candidate] = []
    n = len(norm)
    for i in range(n):
        for length in lex.cjk_lengths:
            if i + length > n:
                continue
            piece = norm[i : i + length]
            names = lex.cjk.get(piece)
            if names is None or _guarded(norm, i, i + length, piece):
                continue
            cands.append((i, i + length, names, piece, None))
    if lex.ascii_pattern is not None:
        for m in lex.ascii_pattern.finditer(norm):
            cands.append((m.start(), m.end(), lex.ascii[m.group(0)], m.group(0), None))
    return cands


def _pattern_candidates(norm: str) -> list[_Candidate]:
    """Part + quality patterns, their denials written inside (嗓子不疼) and normal states."""
    cands: list[_Candidate] = []
    for name, pattern in _PART_QUALITY:
        for m in re.finditer(pattern, norm):
            cands.append((m.start(), m.end(), (name,), m.group(0), None))
    for name, part, quality in _PART_NEG:
        for m in re.finditer(f"(?:{part}){_MODS}(?P<neg>{_PART_NEG_CUE})(?:{quality})", norm):
            flag = "no_longer" if m.group("neg") == "不再" else "neg"
            cands.append((m.start(), m.end(), (name,), m.group(0), flag))
    for name, pattern in _NORMAL_STATE:
        for m in re.finditer(pattern, norm):
            cands.append((m.start(), m.end(), (name,), m.group(0), "neg"))
    return cands


def _fever_candidates(norm: str) -> list[_Candidate]:
    """Temperatures from 37.3 °C (Arabic, Chinese, Fahrenheit) and the guarded bare 烧."""
    cands: list[_Candidate] = []
    for m in re.finditer(_TEMPERATURE, norm):
        whole = m.group(1) or m.group(3)
        frac = m.group(2) or m.group(4) or ""
        if float(whole + frac) >= 37.3:
            cands.append((m.start(), m.end(), ("发烧",), m.group(0), None))
    for m in re.finditer(_TEMPERATURE_ZH, norm):
        cands.append((m.start(), m.end(), ("发烧",), m.group(0), None))
    for m in re.finditer(_FAHRENHEIT, norm):
        if float(m.group(1) + (m.group(2) or "")) >= 99.5:
            cands.append((m.start(), m.end(), ("发烧",), m.group(0), None))
    for m in re.finditer(_BARE_FEVER, norm):
        cands.append((m.start(), m.end(), ("发烧",), m.group(0), None))
    return cands


def _longest_non_overlapping(cands: list[_Candidate], n: int) -> list[_Candidate]:
    """The candidates kept, in text order: longest first; on a tie a form that starts with a
    negation (没有精神) yields to one that does not (精神萎靡), so "没有精神萎靡" reads as a
    denial; then leftmost. A candidate overlapping one already kept is dropped."""
    ordered = sorted(cands, key=lambda c: (-(c[1] - c[0]), c[3][:1] in "不没无未", c[0]))
    taken: list[_Candidate] = []
    occupied = [False] * (n + 1)
    for c in ordered:
        if any(occupied[c[0] : c[1]]):
            continue
        for k in range(c[0], c[1]):
            occupied[k] = True
        taken.append(c)
    taken.sort(key=lambda c: c[0])
    return taken


# --------------------------------------------------------------------------------------
# Negation
# --------------------------------------------------------------------------------------

_NO_LONGER_ZH = ("没有再", "没再", "不再", "未再")
_NEG_ZH = (
    "否认", "并无", "并没有", "并没", "并未", "从来没有", "从来没", "从来不", "从未", "从没有", "从没", "从不",
    "未曾", "不曾", "未见", "未发现", "未出现", "未有", "没有发现", "没发现", "没有出现", "没出现", "不存在",
    *_NO_LONGER_ZH, "没有", "没", "毫无", "别无", "无", "未", "不是", "不会", "不",
)
_NEG_EN = (
    r"no longer|no more|negative for|free of|absence of|denies|denied|deny|denying|without|never|neither|nor|"
    r"not|no|cannot"
)
_CUE = re.compile(
    "|".join(re.escape(c) for c in sorted(_NEG_ZH, key=len, reverse=True))
    + r"|(?<![a-z'])(?:" + _NEG_EN + r")(?![a-z'])|n't(?![a-z])"
)
_A_NOT_A = re.compile(rf"([{_CJK}])[不没]\1")

_FILL_ZH = (
    r"孩子|宝宝|小孩|宝贝|小宝|儿子|女儿|闺女|孩|娃|他|她|我|患者|病人|本人|自己|家|"
    r"现在|目前|最近|近期|近来|今天|昨天|前天|当时|平时|晚上|白天|夜里|夜间|早上|上午|下午|中午|期间|"
    r"再次|再|又|有过|有|出现过|出现|发生过|发生|发现有|发现|见|感到|感觉|觉得|并伴有|伴有|伴|很明显的|明显的|明显|"
    r"什么|任何|其他|其它|别的|特别|过|也|都|还|并|曾经|曾|发|犯|一点儿?|一次|继续|持续|的|啥"
)
_FILL_EN = (
    r"a|an|any|the|more|further|significant|obvious|real|signs? of|evidence of|history of|complaints? of|"
    r"have|has|had|having|got|get|gets|getting|show|shows|showed|showing|experienced?|experiences|"
    r"experiencing|feel|feels|felt|feeling|reports?|reported|really|much|been|be|is|are|was|were|he|she|"
    r"they|it|i|we|my|his|her|their|child|kid|son|daughter|baby|patient|complain(?:s|ed|ing)? of|"
    r"a lot of|also|even|currently|now|today|yet|ever|develop(?:s|ed)?|suffer(?:s|ed|ing)? from|with|"
    r"think|believe|seem to|seems to|appear to|do|does|did|any more|anymore|that|true that"
)
_FILLER = re.compile(r"\s+|(?:" + _FILL_ZH + r")|(?<![a-z])(?:" + _FILL_EN + r")(?![a-z])")
_MAX_FILL = 16
_CONNECT_ZH = re.compile(r"(?:的?(?:症状|现象|情况|表现))?(?:、|和|及|以及|与|或者|或是|或|跟|同|/|\s)?")
_CONNECT_EN = re.compile(r"\s*(?:,\s*(?:and|or|nor)?|and|or|nor|/|&)?\s*(?:(?:a|an|any|the|other)\s+)?")
_POST_NEG = re.compile(
    r"(?:的?(?:症状|现象|情况|表现))?(?:也|都|均|还|倒是|倒|就|并|暂时|目前|现在|一直|从来|根本|基本|已经|已|完全|是)*"
    r"(没有|没|无|未见|不存在|未出现|没出现|没发现|消失|好|停|止住)(?:过)?(了|啦)?"
    r"(?=$|[,;。.!?、\s]|呢|啊|哦|吧|呀|的)"
)
_POST_RESOLVED_EN = re.compile(
    r"\s+(?:(?:is|has|have|was|had)\s+)?(?:(?:all|completely|now)\s+)?"
    r"(?:gone|resolved|went away|gone away|cleared up|cleared|stopped|subsided|broken|broke)\b"
)
_LE_AFTER = re.compile(r"(?:了|啦)")


@dataclass
class _Cue:
    start: int
    end: int
    text: str


def _cues(norm: str, mentions: list[Mention]) -> list[_Cue]:
    covered = [False] * (len(norm) + 1)
    for m in mentions:
        for k in range(m.start, m.end):
            covered[k] = True
    masked = [False] * (len(norm) + 1)
    for q in _A_NOT_A.finditer(norm):
        for k in range(q.start(), q.end()):
            masked[k] = True
    out = []
    for c in _CUE.finditer(norm):
        if any(covered[c.start() : c.end()]) or any(masked[c.start() : c.end()]):
            continue
        out.append(_Cue(c.start(), c.end(), c.group(0)))
    return out


def mentions_negation(norm: str) -> bool:
    """Whether normalised text without symptoms carries a negation (A-not-A questions such as
    有没有 / 是不是 do not count): 孩子现在没有 / 不存在 / he doesn't."""
    return bool(_CUE.search(_A_NOT_A.sub("", norm)))


def _skip_fillers(norm: str, pos: int, by_start: dict[int, Mention], cue_at: dict[int, _Cue]) -> int | None:
    """Step over filler words from ``pos`` one at a time, stopping where a symptom or another
    cue starts; ``None`` when the fillers run longer than ``_MAX_FILL`` characters."""
    start = pos
    while pos not in by_start and pos not in cue_at:
        m = _FILLER.match(norm, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
        if pos - start > _MAX_FILL:
            return None
    return pos


def _connected(norm: str, left: Mention, right: Mention) -> bool:
    gap = norm[left.end : right.start]
    if _is_ascii(left.surface) and _is_ascii(right.surface):
        m = _CONNECT_EN.fullmatch(gap)
        return m is not None
    m = _CONNECT_ZH.fullmatch(gap)
    return m is not None


def apply_negation(norm: str, mentions: list[Mention]) -> None:
    """Set ``status`` / ``resolved`` / ``explicit_denial`` of mentions from negation cues."""
    by_start = {m.start: m for m in mentions}
    ordered = sorted(mentions, key=lambda m: m.start)
    position = {m.start: k for k, m in enumerate(ordered)}
    cues = _cues(norm, mentions)
    cue_at = {c.start: c for c in cues}
    consumed: set[int] = set()
    for idx, cue in enumerate(cues):
        if cue.start in consumed:
            continue
        first, parity, no_longer = _negation_target(norm, cue, by_start, cue_at, consumed)
        if first is None or first.negated_by is not None:
            continue
        chain = [first]
        k = position[first.start]
        while k + 1 < len(ordered) and _connected(norm, ordered[k], ordered[k + 1]):
            chain.append(ordered[k + 1])
            k += 1
        resolved_le = bool(_LE_AFTER.match(norm, chain[-1].end)) and not no_longer
        _negate_chain(chain, idx, parity, resolved_le)
    _apply_inner_negation(norm, mentions)
    _apply_post_negation(norm, mentions)


def _negation_target(
    norm: str, cue: _Cue, by_start: dict[int, Mention], cue_at: dict[int, _Cue], consumed: set[int]
) -> tuple[Mention | None, int, bool]:
    """The first symptom ``cue`` negates (``None`` when fillers run out first), the parity of the
    negations in a row before it (0: they cancel) and whether one of them is a 不再 / no longer.
    Inner cues stepped over are added to ``consumed``."""
    pos = cue.end
    parity = 1
    no_longer = cue.text in _NO_LONGER_ZH or cue.text in ("no longer", "no more")
    while True:
        nxt = _skip_fillers(norm, pos, by_start, cue_at)
        if nxt is None:
            return None, parity, no_longer
        if nxt in by_start:
            return by_start[nxt], parity, no_longer
        if nxt not in cue_at:
            return None, parity, no_longer
        # Two negations in a row cancel (不是没有发烧); the inner cue is used up.
        inner = cue_at[nxt]
        consumed.add(inner.start)
        parity ^= 1
        no_longer = no_longer or inner.text in _NO_LONGER_ZH
        pos = inner.end


def _negate_chain(chain: list[Mention], idx: int, parity: int, resolved_le: bool) -> None:
    """Apply cue ``idx`` to the mentions of its chain."""
    for m in chain:
        m.negated_by = idx
        if m.surface in _RESOLUTION_FORMS:
            # 不退烧 / 没退烧: the fever persists.
            continue
        if parity == 0 or m.inner_negation is not None:  # 不是嗓子不疼: a double negation
            m.status = "present"
        elif resolved_le:
            m.status = "present"
            m.resolved = True
        else:
            m.status = "denied"
            m.explicit_denial = True


def _apply_inner_negation(norm: str, mentions: list[Mention]) -> None:
    """Mentions with a negation inside (嗓子不疼) that no cue before them touched."""
    for m in mentions:
        if m.inner_negation is None or m.negated_by is not None:
            continue
        m.negated_by = -1
        if m.inner_negation == "neg" and _LE_AFTER.match(norm, m.end):
            m.resolved = True  # 头不痛了
        else:
            m.status = "denied"  # 嗓子不疼 / 头不再痛
            m.explicit_denial = True


def _apply_post_negation(norm: str, mentions: list[Mention]) -> None:
    ordered = sorted(mentions, key=lambda m: m.start)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and _connected(norm, ordered[j], ordered[j + 1]):
            j += 1
        chain = ordered[i : j + 1]
        tail = ordered[j]
        m = _POST_NEG.match(norm, tail.end)
        if m and all(c.negated_by is None for c in chain):
            word, le = m.group(1), m.group(2)
            if word in ("消失", "好", "停", "止住"):
                if word != "好" or le:
                    for c in chain:
                        c.resolved = True
            elif le:
                for c in chain:
                    c.resolved = True
            else:
                for c in chain:
                    if c.surface in _RESOLUTION_FORMS:
                        continue
                    c.status = "denied"
                    c.explicit_denial = True
                    c.negated_by = -1
        elif _POST_RESOLVED_EN.match(norm, tail.end) and all(c.negated_by is None for c in chain):
            for c in chain:
                c.resolved = True
        i = j + 1


# --------------------------------------------------------------------------------------
# Trend
# --------------------------------------------------------------------------------------

_WORSE = (
    r"加重|加剧|恶化|更厉害|更严重|越来越|严重了|厉害了|变重|更重|变多|增多|更多了|次数多了|更频繁|频繁了|升高|"
    r"(?<![a-z])(?:worse|worsening|worsened|more severe|getting bad|intensif\w*)(?![a-z])"
)
_BETTER = (
    r"好转|减轻|好多了|好些了|好一些|好一点|好点了|好点儿|缓解|轻了|减少|变少|退了|退下|降下|降了|消退|消失|"
    r"见好|恢复|好了|"
    r"(?<![a-z])(?:better|improving|improved|improves|easing|eased|subsiding|subsided|resolved|resolving|"
    r"gone away|went away|going away|settled|settling)(?![a-z])"
)
_TREND = re.compile(rf"(?P<worse>{_WORSE})|(?P<better>{_BETTER})")
_TREND_NEG_BEFORE = re.compile(
    r"(?:没有|没|不见|没见|未见|无明显|无|不|未|not|no|isn't|hasn't|wasn't|not getting|no sign of)\s*$"
)
_CLAUSE_END = re.compile(
    r"[,;。!?\n:、]|\.(?!\d)|(?<![a-z])(?:but|however)(?![a-z])|但是|但|可是|不过|就是|只是|然而|却"
)
_SENTENCE_END = re.compile(r"[;。!?\n]|\.(?!\d)")


@dataclass
class _Span:
    start: int
    end: int
    sentence: int
    mentions: list[Mention] = field(default_factory=list)


def _clauses(norm: str) -> list[_Span]:
    """Clauses between separators (punctuation, 但/就是/but ...); ``sentence`` counts sentence ends."""
    spans: list[_Span] = []
    start = 0
    sentence = 0
    for sep in _CLAUSE_END.finditer(norm):
        if sep.start() > start:
            spans.append(_Span(start, sep.start(), sentence))
        if _SENTENCE_END.match(norm, sep.start()):
            sentence += 1
        start = sep.end()
    if start < len(norm) or not spans:
        spans.append(_Span(start, max(start, len(norm)), sentence))
    return spans


class _ClauseIndex:
    """Clause lookup by position (binary search over clause starts)."""

    def __init__(self, spans: list[_Span]) -> None:
        self.spans = spans
        self._starts = [span.start for span in spans]

    def of(self, pos: int) -> int:
        """Index of the clause holding ``pos`` (the last clause starting at or before it)."""
        return max(0, bisect_right(self._starts, pos) - 1)


def trend_matches(norm: str, mentions: list[Mention]) -> list[tuple[int, int, Trend]]:
    """Trend words outside symptom spans and not negated: (start, end, trend)."""
    covered = [False] * (len(norm) + 1)
    for m in mentions:
        for k in range(m.start, m.end):
            covered[k] = True
    out: list[tuple[int, int, Trend]] = []
    for t in _TREND.finditer(norm):
        if any(covered[t.start() : t.end()]):
            continue
        if _TREND_NEG_BEFORE.search(norm[max(0, t.start() - 6) : t.start()]):
            continue
        out.append((t.start(), t.end(), "worsening" if t.group("worse") else "improving"))
    return out


# --------------------------------------------------------------------------------------
# Whole message
# --------------------------------------------------------------------------------------


@dataclass
class MessageAnalysis:
    """Mentions of one message (normalised text), with negation, trend and onset applied."""

    norm: str
    mentions: list[Mention]
    trends: list[tuple[int, int, Trend]]
    dated: list[tuple[int, int, str, ResolvedDate]]


def analyse(text: str, at_local: datetime | date) -> MessageAnalysis:
    """Find and qualify every symptom mention of ``text`` (see the module docstring)."""
    norm = normalise(text)
    mentions = find_mentions(norm)
    apply_negation(norm, mentions)
    for m in mentions:
        if (
            m.surface in _RESOLUTION_FORMS
            and m.negated_by is None
            and m.status == "present"
            and not _REMEDY_AFTER.match(norm, m.end)
            and not re.search(r"[不没未无难]\S?$", norm[max(0, m.start - 2) : m.start])
        ):
            # 退烧了 / 烧退了: going away; 不退烧 / 退烧药 are not.
            m.resolved = True
        if m.resolved:
            m.status = "present"
            m.trend = "improving"
    spans = _clauses(norm)
    index = _ClauseIndex(spans)
    for m in mentions:
        spans[index.of(m.start)].mentions.append(m)
    trends = trend_matches(norm, mentions)
    trend_clauses: set[int] = set()
    distance: dict[int, int] = {}
    for t_start, _t_end, trend in trends:
        ci = index.of(t_start)
        targets = [m for m in spans[ci].mentions if m.status == "present"]
        if not targets and ci > 0 and spans[ci - 1].sentence == spans[ci].sentence:
            targets = [m for m in spans[ci - 1].mentions if m.status == "present"]
        if targets:
            trend_clauses.add(ci)
        for m in targets:
            if m.resolved and trend == "worsening":
                continue
            # The nearest trend word wins when a clause has several.
            gap = abs(t_start - m.end)
            if id(m) not in distance or gap < distance[id(m)]:
                distance[id(m)] = gap
                m.trend = trend
    dated = _apply_onsets(norm, mentions, index, trend_clauses, at_local)
    return MessageAnalysis(norm=norm, mentions=mentions, trends=trends, dated=dated)


def _apply_onsets(
    norm: str,
    mentions: list[Mention],
    index: _ClauseIndex,
    trend_clauses: set[int],
    at_local: datetime | date,
) -> list[tuple[int, int, str, ResolvedDate]]:
    phrases = [p for p in find_time_phrases(norm, at_local, normalised=True) if p.resolved is not None]
    taken = [False] * (len(norm) + 1)
    for start, end in [(p.start, p.end) for p in phrases] + [(m.start, m.end) for m in mentions]:
        for k in range(start, end):
            taken[k] = True
    durations = [
        d for d in find_durations(norm, at_local) if d.resolved is not None and not any(taken[d.start : d.end])
    ]
    dated: list[tuple[int, int, str, ResolvedDate]] = [
        (p.start, p.end, p.phrase, p.resolved) for p in phrases if p.resolved is not None
    ]
    by_clause: dict[int, list[TimePhrase]] = {}
    for p in phrases:
        by_clause.setdefault(index.of(p.start), []).append(p)
    _date_by_phrases(index.spans, by_clause, trend_clauses)
    _date_by_durations(index, durations, trend_clauses)
    return dated


def _date_by_phrases(spans: list[_Span], by_clause: dict[int, list[TimePhrase]], trend_clauses: set[int]) -> None:
    """Date the present symptoms of each clause by its nearest time phrase, or by the phrase
    carried from an earlier clause of the sentence that had no symptom. A clause that reports a
    change (``trend_clauses``) sets no onset and carries none."""
    carried: tuple[str, ResolvedDate] | None = None
    for ci, span in enumerate(spans):
        if ci > 0 and spans[ci - 1].sentence != span.sentence:
            carried = None
        in_clause = by_clause.get(ci, [])
        present = [m for m in span.mentions if m.status == "present" and not m.resolved]
        if not present:
            if in_clause and ci not in trend_clauses:
                last = in_clause[-1]
                assert last.resolved is not None
                carried = (last.phrase, last.resolved)
            continue
        if ci in trend_clauses:
            carried = None
            continue
        for m in present:
            chosen = _nearest_phrase(m, in_clause)
            if chosen is not None and chosen.resolved is not None:
                _set_onset(m, chosen.phrase, chosen.resolved)
            elif carried is not None:
                _set_onset(m, carried[0], carried[1])
        carried = None


def _nearest_phrase(m: Mention, in_clause: list[TimePhrase]) -> TimePhrase | None:
    """The phrase of the clause nearest to ``m`` (Chinese puts it before: 昨天开始发烧; English
    after: fever since yesterday); a tie goes to the one before."""
    near = [(m.start - p.end, 0, p) for p in in_clause if p.end <= m.start]
    near += [(p.start - m.end, 1, p) for p in in_clause if p.start >= m.end]
    return min(near, key=lambda x: (x[0], x[1]))[2] if near else None


def _date_by_durations(index: _ClauseIndex, durations: list[TimePhrase], trend_clauses: set[int]) -> None:
    """A duration (咳嗽三天了) dates the present symptom it follows within 8 characters."""
    for d in durations:
        if d.resolved is None:
            continue
        ci = index.of(d.start)
        if ci in trend_clauses:
            continue
        prior = [m for m in index.spans[ci].mentions if m.end <= d.start and d.start - m.end <= 8]
        if prior and prior[-1].status == "present" and not prior[-1].resolved:
            _set_onset(prior[-1], d.phrase, d.resolved)


def _set_onset(m: Mention, phrase: str, resolved: ResolvedDate) -> None:
    if m.onset is None or resolved.start < m.onset.start:
        m.onset = resolved
        m.onset_phrase = phrase


__all__ = [
    "Lexicon",
    "MessageAnalysis",
    "Mention",
    "analyse",
    "apply_negation",
    "find_mentions",
    "load_lexicon",
    "mentions_negation",
    "normalise",
    "trend_matches",
]
