"""Cue families of the rule classifier (Chinese and English): each pattern family says what kind of
wording it catches; never sample sentences. Patterns are written for NFKC + casefolded text.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from agent_memory.domain.models import Intent

# --------------------------------------------------------------------------------------
# Rule classifier: cue families
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cue:
    """One family of wording that signals an intent. ``kind`` lets the resolution rules
    treat cues of the same intent differently (e.g. a bare subject id vs. a data question)."""

    intent: Intent
    kind: str
    pattern: re.Pattern[str]
    note: str


def _rx(pattern: str) -> re.Pattern[str]:
    # Text is NFKC-normalised and casefolded before matching, so patterns are lower case.
    return re.compile(pattern)


# Shared vocabularies (lower case, half-width: text is normalised first).
_NUM = r"(?:\d+|[一二两三四五六七八九十半]+)"
_PAST_ZH = (
    r"(?:之前|以前|上次|上回|当时|当初|曾经|那会儿?|那时候?|早先|先前|此前|原先|前段时间|前阵子|"
    r"上个?月|上周|上星期|去年|前年|上个?季度|上半年|年初|" + _NUM + r"月份?(?!\d))"
)
_DECISION_ZH = (
    r"(?:讨论|商量|商定|决定|决策|定的|定了|拍板|结论|"
    r"怎么解决|如何解决|解决的|怎么处理的|如何处理的|调整|暂停|中止|终止|停掉|叫停|取消|放宽|收紧|"
    r"改成|改为|改了|修改|更改|换了|换成|更换|砍掉|采取|措施|开会|会上|会议|考虑过|尝试过|试过|说好)"
)
_WHY_WORDS = r"为什么|为啥|为何|什么原因|啥原因|因为什么|何故|\bwhy\b"
_WHY_ZH = r"(?:" + _WHY_WORDS + r")"
_REASON_ZH = r"(?:" + _WHY_WORDS + r"|原因|理由)"
_PROJECT_WE_ZH = r"(?:我们|咱们|项目组|课题组|研究组|团队|大家|申办方|伦理)"
_DECISION_VERB_PAST_ZH = (
    r"(?:暂停|停止|停掉|叫停|中止|终止|取消|调整|放宽|收紧|改|换|决定|选择|延长|缩短|剔除|关闭|不让|不再|不准|不允许|不用|不做|"
    r"撤|砍|加|增加|减少|推迟|提前)[^,;。?!]{0,12}?(?:了|过)"
)
_PERIOD_ZH = (
    r"(?:去年|前年|往年|历年|以往|同期|今年|本年|上个?季度|本季度|这个?季度|上个?月|本月|这个月|"
    r"上周|本周|这周|上半年|下半年|各月|每月|每周|逐月|按月|" + _NUM + r"(?:个)?(?:月|季度|年|周))"
)
_LONG_PAST_ZH = (
    r"(?:去年|前年|往年|历年|以往|上半年|今年以来|全年|上个?季度|这几个月|这半年|"
    r"(?:过去|近|最近|前)\s*" + _NUM + r"\s*(?:个)?(?:月|周|年|季度|星期))"
)
_EN_NUM = r"(?:\d+|few|several|two|three|four|five|six|nine|twelve|eighteen)"
_EN_PERIOD = r"(?:days?|weeks?|months?|quarters?|years?)"
_EN_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|q[1-4]|\d{4}|the spring|the summer|the autumn|"
    r"the fall|the winter)"
)
_EN_DECISION = (
    r"(?:decid|decision|discuss|agree|conclu|why|reason|rational|chang|paus|stop|drop|switch|"
    r"halt|cancel|amend|settle|chose|choose)"
)

# Subject identifiers: P001, pt-12, subject 7, 受试者 12, 003号受试者 (kind "subject").
_SUBJECT_ID = (
    r"(?:(?<![a-z0-9])(?:p|pt|sub|subj|subject|patient|participant)\s*[-_#]?\s*\d{1,5}(?![\d.])"
    r"|(?:受试者|患者|病人|病例|编号)\s*[-_#]?\s*[a-z]?\d{1,5}(?![\d.])"
    r"|\d{1,5}\s*号\s*(?:受试者|患者|病人|病例))"
)

# Single-character or everyday surface forms of the symptom lexicon that are too ambiguous
# in research chat (哑铃, 热闹, 泡沫, 泄露, 绿色, 点点...). Longer forms of the same symptoms stay.
# ("吐" comes back below with a guard against 吐槽/吐露.)
_AMBIGUOUS_SURFACE = frozenset(
    {"哑", "闹", "臭", "泡", "泄", "吐", "哭", "绿色"}
    | {"点点", "小点", "喝水", "咀嚼", "泡泡", "白点", "口水", "臭味"}
)

_TCM_AND_COMMON_SYMPTOMS = (
    # Common adult / TCM complaints missing from the paediatric lexicon.
    r"怕冷|恶寒|畏寒|发冷|怕风|不出汗|无汗|自汗|出虚汗|乏力|没劲|疲倦|疲劳|口干|口苦|咽干|心慌|心悸|胸闷|"
    r"气短|多梦|腰酸|酸痛|关节痛|手脚冰凉|四肢冰冷|便秘|便溏|尿频|舌苔|反酸|烧心|感冒|着凉|发抖|不舒服|"
    r"(?:头|胃|肚子|肚|腰|腿|背|胸|嗓子|喉咙|牙|眼睛|耳朵|脖子|肩膀?|膝盖?|关节|肌肉|身上|浑身)"
    r"[^,;。?!]{0,4}?(?:疼|痛)|"
    r"吐(?!槽|露|字|词|出真|血本)|孩子.{0,6}哭|一直哭|烧到|烧了|烧得|"
    r"(?<![\d.])(?:3[7-9]|4[0-2])(?:\.\d)?\s*(?:度|°c)"
)
_SYMPTOM_EN = (
    r"\b(?:fever|feverish|temperature of|cough(?:ing)?|headaches?|migraine|runny nose|stuffy nose|"
    r"blocked nose|sore throat|vomit(?:ing|ed)?|throwing up|threw up|diarrh(?:o)?ea|rash|itch(?:y|ing)|"
    r"tired|fatigue|exhausted|dizzy|dizziness|nause(?:a|ous)|chills?|shiver(?:ing)?|sweat(?:s|ing)?|"
    r"stomach ?ache|tummy|belly ?ache|can'?t sleep|insomnia|short(?:ness)? of breath|wheez(?:e|ing)|"
    r"sneez(?:e|ing)|congested|sore|aching|aches|hurts?|painful|pain in|feel(?:ing)? (?:sick|unwell|cold))\b"
)


@lru_cache(maxsize=1)
def _symptom_surface_pattern() -> re.Pattern[str]:
    """Alternation of the packaged symptom lexicon's surface forms (minus ambiguous ones)."""
    raw = resources.files("agent_memory.consultation.symptoms.data").joinpath("symptom_lexicon.json").read_text("utf-8")
    lexicon: dict[str, list[str]] = json.loads(raw)
    forms = {
        unicodedata.normalize("NFKC", f).casefold()
        for name, surface in lexicon.items()
        for f in [name, *surface]
    }
    forms = {f for f in forms if f and f not in _AMBIGUOUS_SURFACE}
    ordered = sorted(forms, key=len, reverse=True)
    return re.compile("|".join(re.escape(f) for f in ordered) + "|" + _TCM_AND_COMMON_SYMPTOMS)


def cue_families() -> tuple[Cue, ...]:
    I = Intent  # noqa: E741 - short alias keeps the table readable
    return (
        # ---------------- QUERY_DATA: current clinical data ----------------
        Cue(I.QUERY_DATA, "subject", _rx(_SUBJECT_ID), "a subject identifier (P001, 受试者 12, 003号患者)"),
        Cue(
            I.QUERY_DATA,
            "medhist",
            _rx(
                r"病史|既往|过敏史|家族史|手术史|用药史|合并用药|medical history|history of|"
                r"past medical|prior (?:\w+ )?(?:surger|medication|illness|treatment|therap|condition)"
            ),
            "a patient's OWN past (medical history, prior medication): patient data, never project history",
        ),
        Cue(
            I.QUERY_DATA,
            "noun_query",
            _rx(
                r"(?:入组|筛选|随访|访视|不良事件|sae|(?<![a-z])ae(?![a-z])|化验|检验|实验室|血常规|肝功|肾功|"
                r"血压|心率|体重|用药|给药|剂量|知情同意|脱落|退出|crf|数据|例数|人数|进度|query|质疑)"
                r"[^,;。?!]{0,12}?"
                r"(?:多少|几(?:个|例|人|位|次|级|天)?|吗|么|没有|了没|是什么|什么|哪些|哪个|有没有|是否|怎么样|如何|情况|状态)"
                r"|(?:多少|几)\s*(?:个|例|位|名|条)?\s*(?:受试者|患者|病人|病例|人|例|open query|query|质疑)"
                r"|(?:查|查询|查看|看下|看一下|看看|列出|列一下|统计一下|告诉我)[^,;。?!]{0,12}?"
                r"(?:入组|筛选|随访|访视|不良事件|化验|检验|血压|用药|剂量|知情同意|脱落|数据|例数|人数)"
            ),
            "a Chinese data noun (入组/访视/不良事件/化验...) asked about (多少/几/吗/有没有/查/看)",
        ),
        Cue(
            I.QUERY_DATA,
            "noun_query",
            _rx(
                r"\b(?:how many|how much|what(?:'s| is| are| was)|show me|list|look up|pull up|status of|"
                r"tell me|give me|has|have|did|is|are|was|were)\b[^.;?!]{0,60}?"
                r"\b(?:enrol(?:l)?(?:ed|ment|ments)?|screen(?:ed|ing)|subjects?|patients?|participants?|"
                r"visits?|adverse events?|aes?|saes?|labs?|lab results|vitals|blood pressure|medications?|"
                r"dos(?:e|es|ing)|consent(?:ed)?|withdr[ae]wn?|drop(?:ped)? ?outs?|e?crfs?)\b"
            ),
            "an English data question (how many / show me / has ... had) about a data noun",
        ),
        Cue(
            I.QUERY_DATA,
            "current",
            _rx(r"现在|目前|当前|截至目前|截止目前|\bso far\b|\bcurrently\b|\bright now\b|\bto date\b"),
            "explicit 'now' marker (only reinforces a data question, never stands alone)",
        ),
        # ---------------- QUERY_HISTORY: the project's past decisions ----------------
        Cue(
            I.QUERY_HISTORY,
            "past_decision",
            _rx(_PAST_ZH + r"[^;。?!]{0,20}?" + _DECISION_ZH),
            "a past marker (之前/上次/当时/曾经/去年/三月) COMBINED with a decision word "
            "(讨论/决定/怎么解决/调整/暂停/改); the marker alone is not enough",
        ),
        Cue(
            I.QUERY_HISTORY,
            "past_reason",
            _rx(
                _PAST_ZH + r"[^;。?!]{0,20}?" + _REASON_ZH + "|" + _WHY_ZH + r"\s*(?:要|会|是)?\s*" + _PAST_ZH
            ),
            "a past marker with a reason word (上个月为什么/为啥当初); about a SUBJECT it is subject data "
            "(P003 上次访视为什么没来), see RuleIntentClassifier",
        ),
        Cue(
            I.QUERY_HISTORY,
            "why_we",
            _rx(
                _WHY_ZH
                + r"[^,;。?!]{0,16}?"
                + _DECISION_VERB_PAST_ZH
                + "|"
                + _PROJECT_WE_ZH
                + r"[^;。?!]{0,6}?"
                + _WHY_ZH
                + r"[^;。?!]{0,16}?"
                + _DECISION_VERB_PAST_ZH.replace(r"(?:了|过)", r"")
            ),
            "why + a project action in the past aspect (为什么暂停了/我们为什么取消)"
            " - asks for the reason of a decision",
        ),
        Cue(
            I.QUERY_HISTORY,
            "discussed",
            _rx(r"(?:讨论|商量|研究|开会|决定|商定)过|有没有(?:讨论|商量|定|决定)|是怎么定的|怎么定的"),
            "perfective discussion/decision verbs (讨论过/商量过/是怎么定的)",
        ),
        Cue(
            I.QUERY_HISTORY,
            "en",
            _rx(
                r"\bwhy (?:did|were|was|had|have) (?:we|the team|the committee|the sponsor|the steering committee|"
                r"the site|the study|the trial|screening|enrol(?:l)?ment)\b"
                r"|\bwhy (?:we|the team|the committee) \w+ed\b"
                r"|\bwhy (?:was|were) (?:the|our|this|that|these|those) [^.;?!]{0,40}?"
                r"\b(?:\w+ed|chosen|made|taken|cut|shut|put on hold|withdrawn)\b"
                r"|\bwhat (?:did|had) (?:we|the team|the committee|the steering committee|the dsmb|the sponsor) "
                r"(?:decide|agree|conclude|settle|choose|say|discuss)"
                r"|\b(?:did|have|had) we (?:ever |already |previously )?"
                r"(?:discuss|talk|consider|decide|agree|tr(?:y|ied)|look into)"
                r"|\bremind me (?:why|what|how|when|whether|if) (?:we|the)\b"
                r"|\bwhat was the (?:reason|rationale|decision|outcome|conclusion)\b"
                r"|\bhow did we (?:solve|resolve|handle|deal|fix|address|decide)\b"
                r"|\bthe decision (?:to|on|about)\b|\bwe (?:decided|agreed|discussed)\b"
                r"|\b(?:back in|back then|at the time|in the past|previously|earlier this year|last year)\b"
                r"[^.;?!]{0,60}?"
                + _EN_DECISION
                + r"|"
                + _EN_DECISION
                + r"[^.;?!]{0,60}?\b(?:back in "
                + _EN_MONTH
                + r"|back then|at the time)\b"
            ),
            "English: why did we / what did we decide / did we discuss / remind me why / back in <month> + decision",
        ),
        Cue(
            I.QUERY_HISTORY,
            "past_record",
            _rx(
                _PAST_ZH + r"[^;。?!]{0,8}?(?:周报|月报|报告|纪要|会议记录|记录|总结)[^;。?!]{0,8}?"
                r"(?:提到|写了|写的|说了|说的|记录了|记了|有没有|是什么|什么|哪些)"
                r"|(?:周报|月报|纪要|会议记录)里[^;。?!]{0,12}?(?:提到|写了|说了|记录|有没有|什么|哪些)"
                r"|" + _PAST_ZH + r"(?:这个时候|那个时候|那段时间)?[^;。?!]{0,6}?"
                r"(?:我们|咱们|项目|团队)?[^;。?!]{0,4}?(?:在做什么|做了什么|发生了什么|出了什么(?:事|问题))"
                r"|\b(?:last week'?s|last month'?s|previous|earlier|past|old|archived)"
                r" (?:weekly )?(?:reports?|minutes)\b"
                r"|\bwhat (?:happened|went wrong|were we doing)\b[^.;?!]{0,40}?"
                r"\b(?:last (?:week|month|year|quarter)|back in|in " + _EN_MONTH + r"|before)\b"
            ),
            "a question about the project's past records (上周的周报里提到了什么, 去年这个时候我们在做什么, "
            "last week's report): answered from the history book",
        ),
        # ---------------- ANALYZE_TREND: comparison and review over periods ----------------
        Cue(I.ANALYZE_TREND, "review", _rx(r"回顾|复盘"), "review wording (回顾/复盘)"),
        Cue(
            I.ANALYZE_TREND,
            "trend_word",
            _rx(
                r"趋势|走势|变化曲线|同比|环比|增速|增长率|下降率|越来越(?:快|慢|多|少)|有没有(?:加快|放缓|变快|变慢)"
            ),
            "trend vocabulary (趋势/走势/同比/环比/越来越...)",
        ),
        Cue(
            I.ANALYZE_TREND,
            "compare_period",
            _rx(
                r"(?:对比|比较|相比|比起|相较|\bvs\.?\b|versus|和|跟|与)[^;。?!]{0,20}?"
                + _PERIOD_ZH
                + r"[^;。?!]{0,16}?(?:对比|比较|相比|比|变化|差异|区别|快|慢|多|少|涨|降)"
                + r"|(?:对比|比较|相比|比起|相较|\bvs\.?\b|versus)[^;。?!]{0,20}?"
                + _PERIOD_ZH
                + r"|"
                + _PERIOD_ZH
                + r"[^;。?!]{0,20}?(?:对比|比较|相比|\bvs\.?\b|versus)"
            ),
            "a comparison (对比/比较/相比/vs) involving a period (去年/上季度/同期/今年...)",
        ),
        Cue(
            I.ANALYZE_TREND,
            "long_past_summary",
            _rx(
                r"(?:总结|汇总|分析|梳理|盘点|统计)[^;。?!]{0,12}?"
                + _LONG_PAST_ZH
                + r"|"
                + _LONG_PAST_ZH
                + r"[^;。?!]{0,16}?(?:总结|汇总|分析|梳理|盘点|变化|怎么样|表现|情况如何|进展|进度)"
            ),
            "summary / analysis of a LONG past period (总结去年/过去三个月...); a current-period summary is a report",
        ),
        Cue(
            I.ANALYZE_TREND,
            "en",
            _rx(
                r"\btrends?\b|\btrending\b|\bover time\b"
                r"|\b(?:year|month|quarter|week)[- ]over[- ](?:year|month|quarter|week)\b"
                r"|\byoy\b|\b(?:compared? (?:with|to)|compares? (?:with|to)|comparison with|vs\.?|versus|relative to)"
                r" (?:the )?(?:last|previous|prior|same period|earlier)\b"
                r"|\bsince last (?:week|month|quarter|year)\b"
                r"|\b(?:speeding|slowing) (?:up|down)\b|\bpicking up\b|\bgoing (?:up|down)\b"
                r"|\b(?:accelerat|decelerat)\w*"
                r"|\b(?:over|in|during|across|for) the (?:past|last|previous) "
                + _EN_NUM
                + r" "
                + _EN_PERIOD
                + r"\b"
                r"|\b(?:over|in|during|across) the (?:past|last|previous) (?:year|quarter|half[- ]year)\b"
                r"|\blast year'?s\b|\bhow (?:has|have|did) [^.;?!]{0,40}?chang"
                r"|\breview (?:of )?(?:last|the past|the previous|previous)\b"
                r"|\b(?:how (?:did|was|were)|summar\w+|overview of|recap)\b[^.;?!]{0,40}?"
                r"\b(?:last|previous|past) (?:year|quarter|half|six months|12 months)\b"
            ),
            "English: trend / compared with last quarter / speeding up / over the past N months / since last year",
        ),
        # ---------------- QC_TASK: data quality work ----------------
        Cue(
            I.QC_TASK,
            "qc",
            _rx(
                r"质控|质量控制|质量检查|(?<![a-z])qc(?![a-z])|核查|数据核对|核对数据|一致性(?:检查|核对|校验)|"
                r"缺失值|缺失数据|漏填|漏录|(?<![a-z])sdv(?![a-z])|源数据(?:核查|核对|核实|验证)|数据清理|数据清洗|"
                r"数据质量|逻辑校验|逻辑检查|逻辑错误|范围检查|稽查|超出[^,;。?!]{0,6}?范围|超范围|完整性(?:检查|核查|校验)|"
                r"(?:日期|时间)[^,;。?!]{0,10}?(?:早于|晚于)|"
                r"(?:crf|表单|源文件|原始病历|原始记录|病历|数据)[^,;。?!]{0,20}?(?:核对|比对|核实|校对)|"
                r"(?:核对|比对|核实|校对)[^,;。?!]{0,20}?(?:crf|表单|源文件|原始病历|原始记录|病历|数据)|"
                r"(?:检查|核对|核实|审核|查一?下|查查)[^,;。?!]{0,16}?(?:错误|错漏|异常值|不一致|遗漏|漏填|缺失|问题)"
            ),
            "Chinese QC vocabulary (质控/核查/一致性检查/缺失值/SDV/源数据核查/数据质量), reconciling "
            "CRF with source (CRF 和原始病历核对), or check + errors",
        ),
        Cue(
            I.QC_TASK,
            "en",
            _rx(
                r"\bquality (?:check|checks|control|review|issues?)\b|\bdata quality\b"
                r"|\bdata (?:checks?|checking|validation|cleaning|verification|review|queries)\b"
                r"|\b(?:edit|consistency|logic|logical|range|completeness) checks?\b"
                r"|\bmissing (?:values?|data|fields?|pages?)\b|\bsource data verification\b"
                r"|\binconsisten\w*|\bdiscrepanc\w*|\bout[- ]of[- ]range\b"
            ),
            "English QC vocabulary (quality check, data quality, edit checks, missing values, discrepancies)",
        ),
        # ---------------- GENERATE_REPORT: a report for the current period ----------------
        Cue(
            I.GENERATE_REPORT,
            "report_noun",
            _rx(
                r"(?:生成|写|出|做|起草|拟|整理|准备|撰写|产出|来一?份|弄|发)[^,;。?!]{0,10}?"
                r"(?:周报|月报|季报|年报|日报|报告|简报|小结|汇报材料|汇报)"
                r"|(?:周报|月报|季报|年报|日报|报告|简报|小结)[^,;。?!]{0,6}?"
                r"(?:生成|写|出|做|起草|整理|准备|发)(?:一下|下|了|好|出来)?"
                r"|(?:写|做|出|起草|撰写|准备)(?:一份|份|个|一个)?[^,;。?!]{0,4}?(?:年度|季度|月度|阶段|中期)(?:总结|小结|报告)"
                r"|(?:本周|这周|本月|这个月)\s*的?\s*(?:周报|月报)(?![^,;。?!]{0,8}?(?:里|中|提到|写了|说了))"
            ),
            "a generate verb (生成/写/出/起草) with a report noun (周报/月报/报告/小结)",
        ),
        Cue(
            I.GENERATE_REPORT,
            "summary",
            _rx(
                r"(?:总结|小结|汇总)(?:一下|下)|(?:做|写|出|来|给我)(?:个|一个|一份|份)?[^,;。?!]{0,8}?(?:总结|汇总)"
            ),
            "a summary request (总结一下); dropped when the clause is about a long past period (that is a trend)",
        ),
        Cue(
            I.GENERATE_REPORT,
            "en",
            _rx(
                r"\b(?:generate|draft|write|prepare|create|produce|compile|put together|give me|send|run)\b"
                r"[^.;?!]{0,40}?\b(?:report|summary|update|digest|newsletter|write-?up)s?\b"
                r"|\bsummari[sz]e\b[^.;?!]{0,40}?\b(?:this|today|current)\b"
            ),
            "English: generate/draft/write ... report|summary, or summarise this week",
        ),
        # ---------------- MEMORY_RECALL: what the user told the assistant (hot memory) ----------------
        Cue(
            I.MEMORY_RECALL,
            "told",
            _rx(
                r"我[^,;。?!]{0,6}?(?:跟|和|对|给|同)你(?:说|讲|提|交代|强调|嘱咐|叮嘱|要求|定)"
                r"|我(?:说过|讲过|提过|交代过|强调过|要求过|定过)|我的[^,;。?!]{0,4}?(?:偏好|习惯|要求|规矩|喜好)|我定的(?:规矩|规则)"
                r"|我(?:上回|上次|之前|以前|刚才|早先)(?:说|讲|提|交代|要求)|(?:交代|嘱咐|叮嘱|告诉)(?:过)?你的"
                r"|我[^,;。?!]{0,6}?(?:让|叫|要)你(?:记|注意)"
                r"|\b(?:what|something|the thing|anything)\b[^.;?!]{0,10}?\bi (?:told|said|mentioned|asked)\b"
                r"|\bwhat did i (?:tell|say|mention|ask)\b|\bas i (?:said|mentioned|told you)\b"
                r"|\bi (?:told|asked) you\b|\bmy (?:preferences?|rules?|instructions?)\b|\bhow i like\b"
                r"|\b(?:remember|recall) (?:that |when |how )?i (?:said|told|asked|mentioned|wanted)\b"
            ),
            "the user's own earlier instruction or preference (我跟你说过/我的偏好/what did I tell you)",
        ),
        Cue(
            I.MEMORY_RECALL,
            "remember",
            _rx(
                r"(?<!我)(?<!我还)记得|记不记得|没忘吧|忘了没|忘记了吗|记住(?:了)?(?:吗|没有?)"
                r"|\bdo you (?:still )?(?:remember|recall)\b|\byou remember\b|\bremember (?:what|how|when) i\b"
            ),
            "'do you remember' wording; yields to a history cue about a project decision in the same clause",
        ),
        # ---------------- CONSULTATION: a patient or parent describing symptoms ----------------
        Cue(
            I.CONSULTATION,
            "symptom",
            _symptom_surface_pattern(),
            "symptom lexicon surface forms + TCM/adult complaints",
        ),
        Cue(
            I.CONSULTATION,
            "course",
            _rx(
                r"(?:症状|病情|情况)[^,;。?!]{0,4}?(?:加重|好转|缓解|减轻|反复|没好|不见好|更严重)|生病了|病了"
                r"|发(?:过|了)?(?:一|两|几)?(?:次|回)?烧|烧起来|又烧|(?:这次|这回)(?:更|又|比较)严重"
            ),
            "course of an illness (症状加重/病情好转/病了)",
        ),
        Cue(
            I.CONSULTATION,
            "child",
            _rx(
                r"(?:孩子|宝宝|小孩|儿子|女儿|宝贝|娃)[^,;。?!]{0,10}?(?:症状|不舒服|生病|病了|发烧|咳|吐|拉|疼|痛|哭)"
            ),
            "a child plus symptom wording (孩子/宝宝 + 症状/不舒服/发烧)",
        ),
        Cue(
            I.CONSULTATION,
            "en",
            _rx(_SYMPTOM_EN),
            "English symptom words (fever, headache, runny nose, tired)",
        ),
    )


#: A subject identifier (P001, 受试者 12, 003号患者).
SUBJECT_ID_RX = _rx(_SUBJECT_ID)

# Words that place a message in research work: symptom words there describe subject data,
# not a consultation ("P002 AE 里记的头痛是几级").
RESEARCH_CONTEXT = _rx(
    _SUBJECT_ID
    + r"|受试者|(?:患者|病人)(?!的?(?:母亲|父亲|妈妈|爸爸|家属|家长|本人))|入组|不良事件|(?<![a-z])s?ae(?![a-z])|crf|"
    r"访视|研究方案|试验方案|方案偏离|申办方|"
    r"研究中心|分中心|各中心|伦理|发生率|治疗组|对照组|试验组|组间|队列|项目|"
    r"\b(?:subjects?|participants?|enrol\w*|visits?|protocol|site|sponsor|trial|study|adverse events?|"
    r"recorded|incidence|arms?|cohorts?)\b"
)

# Clause boundaries: sentence ends and connectives that start a new request. Commas are NOT
# boundaries (they often join a time marker to its question: "Back in January, what did...").
_CLAUSE_SPLIT = _rx(
    r"[;。?!\n]+|\.(?=\s|$)|\s[-\u2014]+\s|\u2014+"
    r"|(?:,\s*)?(?:另外|顺便|此外|并且|再(?=[对帮说看跑做查生出写把给告列])|并(?=[告和给把帮说列对查看生写出]))"
    r"|,\s*(?:同时|然后|还有|以及|另)"
    r"|,?\s+(?:and\s+)?(?:also|then|plus)\b,?"
    r"|,?\s+and\s+(?=(?:also |then )?(?:remind|tell|show|run|generate|draft|write|"
    r"check|give|list|summar|qc|what|why|how|did|do|send|prepare|compare|look)\b)"
)

def normalise(text: str) -> str:
    """NFKC (full-width -> half-width) and casefold: the form every cue pattern is written for."""
    return unicodedata.normalize("NFKC", text).casefold()


def split_clauses(text: str) -> list[str]:
    """Split normalised text into request clauses (sentence ends and connectives like 另外/顺便/also)."""
    return [c.strip() for c in _CLAUSE_SPLIT.split(text) if c and c.strip()]
