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
- an instruction that has the assistant do a forbidden act ("你按上次的值补进EDC") relaxes the
  rule without any permission word; an act on an identifier (write, send, attach, list by) asks
  for it; the investigators' part (deciding causality, answering medical questions) is a
  requirement, waived by leaving them out ("不用找研究者确认", "no need to loop in the PI");
- a safeguard's topic named with its decision handed to the assistant ("你自己…", "you just …
  yourself") is held even when the act is not in the lexicon (the net for unseen wording, tried
  last, after the rules named);
- when unsure, the statement is queued: a false alarm costs an admin a click, a promotion costs a
  safeguard. The merge also reads the whole message (:func:`agent_memory.hot_memory.merge`): a
  statement from a message that relaxes a rule is held even when the relaxing part was not kept.

Deterministic and offline; nothing is logged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_memory.domain.models import HotMemoryLine
from agent_memory.hot_memory.analysis import analyse, spaced
from agent_memory.hot_memory.analysis import nfkc as _nfkc

_I = re.IGNORECASE


def nfkc(text: str) -> str:
    """``text`` in NFKC form with a space between Han characters and Latin letters, so that the
    English words of code-switched text ("以后patient问side effect怎么处理") match as words."""
    return spaced(_nfkc(text))


@dataclass(frozen=True)
class _Concept:
    """A safeguard concept: ``all_of`` patterns must each match (an action and its object).

    ``kind``: ``forbidden`` (a rule forbids it: relaxed by a permission or an output request that
    does not negate it), ``required`` (a rule requires it: relaxed by a waiver before it) or
    ``hidden`` (a rule requires it reported: relaxed when the statement hides, drops or waives it
    anywhere). ``topic``: the index of the pattern that names the concept when a statement only
    refers to a rule ("AE因果那条", "the identifier rule"). ``removable``: naming it together with a
    removal ("身份证号那一列删掉") keeps the safeguard."""

    name: str
    kind: str  # "forbidden" | "required" | "hidden"
    all_of: tuple[re.Pattern[str], ...]
    topic: int = 0
    removable: bool = False
    #: relaxed only by a permission (a decision handed to the assistant), not by an output request
    needs_permission: bool = False
    #: the index of the pattern naming the act (write, send, decide, advise); None: no act pattern
    act: int | None = None
    #: the act is an output ("附在", "include"): an instruction doing it asks for the concept
    act_is_output: bool = False


#: a removal of what is named: the safeguard is kept ("身份证号那一列删掉", "mask the phone numbers")
#: unless the removal is waived ("手机号不用打码了")
_REMOVAL = re.compile(
    r"删掉|删除|删了|去掉|拿掉|隐藏|打码|脱敏|遮住|不显示|不要显示|"
    # kept from the assistant ("家长的名字电话地址别让助手碰")
    r"(?:别|不要|不许|不准)让\S{0,3}(?:碰|经手|处理|看到?)|(?:别|不许|不准)碰|"
    r"\b(?:removed?|drop(?:ped)?|hidden|hide|mask(?:ed)?|redact(?:ed)?|strip(?:ped)?|left out)\b",
    _I,
)
_REMOVAL_WAIVED = re.compile(r"不用|不必|无需|不需要|别|不要|\bno need\b|\bdon'?t\b|\bwithout\b|\bstop\b", _I)


def _removed_after(text: str) -> bool:
    """A removal of what stands at the start of ``text`` in the same clause, not waived."""
    clause = re.split(r"[，,。；;]", text, maxsplit=1)[0][:16]
    m = _REMOVAL.search(clause)
    return m is not None and not _REMOVAL_WAIVED.search(clause[: m.start()])
#: what identifies a subject (the identifier firewall's kinds, named as nouns): names and initials,
#: ID, passport, insurance and hospital record numbers, dates of birth, home addresses, and contact
#: details (phone, mobile, e-mail, WeChat) when they are the subjects' own
_IDENTIFIER_NOUNS = re.compile(
    r"姓名|(?<!文件)名字|全名|真名|缩写|(?:受试者|患者|病人)的?姓(?!名)|只写姓|身份证|身份标识|证件号|护照|医保号|社保号|住院号|病历号|病案号|门诊号|就诊卡号|"
    r"出生日期|出生年月|(?<![发产])生日|住址|家庭地址|居住地址|联系地址|联系方式|联系电话|手机号|电话号|微信号|病人名|患者名|隐私|个人信息|"
    r"(?:受试者|患者|病人|家属|他们|她们)(?:们)?(?:的)?(?:联系)?(?:电话号?码?|手机号?码?|邮箱|微信号?|地址)|"
    r"\b(?:patient|subject|participant|full|real|first|last|family)(?:'s|s')? names?\b|\bnames? of\b|\binitials\b|"
    r"\bdates? of birth\b|\bDOBs?\b|\bbirth ?dates?\b|\bhome address(?:es)?\b|\b(?:mobile|cell|phone|telephone) "
    r"(?:numbers?|nos?\.?)|\bmobiles?\b|\be-?mail address(?:es)?\b|\bcontact (?:details|info\w*|numbers?)\b|"
    r"\b(?:medical )?record numbers?\b|\bMRNs?\b|\bhospital numbers?\b|\bid (?:numbers?|cards?)\b|\bpassports?\b|"
    r"\binsurance numbers?\b|\bidentif|\bprivacy\b|\bthe names\b|\bpersonal (?:data|details|information)\b|"
    r"\bPII\b|\bPHI\b", _I)
#: an act on identifiers: writing, showing, sending, keeping or using them
_ACT_ON_IDENTIFIERS = re.compile(
    r"发|写|加|列|放|标|填|显示|出现|提到|带上|告诉|提供|导出|(?<![不没])用|使用|保存|存|留|记|贴|打印|附|转|按|说|讲|叫|称呼|输出|展示|呈现|透露|公开|给|"
    r"处理|"
    r"\b(?:include|list|put|add|show|send|share|use|display|give|tell|provide|export|record|store|keep|print|"
    r"attach|forward|post|mention|appear|contain|refer|by|with|output|reveal|expose|disclose|print)\w*\b", _I)
#: the patients, subjects and their families (whom medical advice would reach; a dose looked up for
#: the staff is not said to them)
_PATIENTS = re.compile(r"患者|病人|受试者|家属|家长|患儿|孩子|小孩|老人家?|大爷|大妈|大叔|老太太|老爷子|病友|"
                       r"\bpatients?\b|\bsubjects?\b|\bparticipants?\b|"
                       r"\bfamil(?:y|ies)\b|\bparents?\b|\bkids?\b|\bchild(?:ren)?\b|\bcarers?\b|\bcaregivers?\b", _I)
_CONCEPTS: tuple[_Concept, ...] = (
    _Concept("identity", "forbidden", (_IDENTIFIER_NOUNS, _ACT_ON_IDENTIFIERS), removable=True, act=1,
             act_is_output=True),
    _Concept("record_write", "forbidden", (
        # (补上 of what was already done, "C02、C05都补上了" of supplies, is news, no act)
        re.compile(r"修改|删除|删掉|删了|清掉|清除|补填|补进|补录|补上(?!了)|改掉|改了|改(?![成为到用发在])|更正|编辑|填进|填入|填到|填上|"
                   r"对调|调换|换回|调回|"
                   # a recorded value changed to another ("把72改成27", "从72改成27")
                   r"[0-9.]+\s*(?:kg|公斤|mmHg|%)?\s*改(?:成|为)\s*[0-9.]+|把[^，,。；;]{0,16}?[0-9.]+\S{0,4}改(?:成|为)|"
                   r"写进|写入|"
                   r"录进|导入|覆盖|换算|替换|"
                   r"\b(?:edit|modify|delete|remove|change|correct|fix|overwrite|update|backfill|"
                   r"fill(?:s|ed|ing)? (?:(?:it|them|that|those) )?in|"
                   r"populate|impute|amend|enter|input|import|writes? (?:in)?to|"
                   r"clean(?:s|ed|ing)? up)\w*\b", _I),
        re.compile(r"EDC|eCRF|记录|数据|受试者|系统里|系统中|数据库|库里|库中|访视日期|字段|数值|化验值|录入|单位|检验|"
                   r"(?<![记收])录(?![音像取用])|填成|写成|录成|实验室值|检验值|检查值|缺失值|缺失的|\blab values?\b|"
                   r"读数|读值|测量值|测值|\breadings?\b|\bmeasurements?\b|"
                   # what subjects or their parents enter themselves (a diary, a score)
                   r"日记|评分|得分|[分值]填反|\bdiar(?:y|ies)\b|\bscores?\b|"
                   r"\bmissing values?\b|"
                   r"\bfields?\b|\bvalues?\b|\brecords?\b|\bentr(?:y|ies)\b|\bdata\b|"
                   r"\bsubjects?\b|\bdatabase\b", _I),
    ), topic=1, act=0, needs_permission=True),
    _Concept("external_send", "forbidden", (
        re.compile(r"发|抄送|抄给|转给|\b(?:send|sent|forward|cc|share|e-?mail)\w*\b", _I),
        re.compile(r"院外|外部|对外|CRA|药企|申办方|伦理|其他中心|\bsponsor|\bethics|\bexternal|\boutside", _I),
    ), topic=1, act=0),
    _Concept("dosing", "forbidden", (re.compile(r"剂量|用量|给药方案|\bdos(?:e|es|ing|age)\b|\bmg\b", _I),)),
    _Concept("arm_split", "forbidden", (re.compile(
        r"双盲|揭盲|破盲|治疗组|按组|组别|\bby arms?\b|\bper arm\b|\bsplit by arm|\btreatment (?:arm|group)s?\b|"
        r"\bunblind|\bblinding\b|\ballocation\b|\bwhich (?:arm|group)\b|"
        r"\b(?:on|in) (?:the )?(?:placebo|active)(?: arm| group)?\b|"
        r"(?:哪个|哪一|哪)组|分组情况|猜.{0,6}(?:组|安慰剂|真药)|安慰剂组|\bguess\w*\b[^.]{0,30}\barms?\b|"
        # two arms named side by side ("5mg组和10mg组", "A组/B组"), compared between arms
        r"(?:[A-Za-z0-9.]{1,6}\s?(?:mg|毫克)?|[高低中]剂量|试验|对照|干预|安慰剂|治疗|[甲乙丙])\s?组\s*"
        r"(?:和|与|跟|、|/|对比|vs\.?)?\s*(?:[A-Za-z0-9.]{1,6}\s?(?:mg|毫克)?|[高低中]剂量|试验|对照|干预|安慰剂|治疗|[甲乙丙])\s?组|"
        # which of two named arms each site or subject is in ("每个社区是强化组还是常规组")
        r"是[\u4e00-\u9fff]{1,4}组还是[\u4e00-\u9fff]{1,4}组|"
        # grouped by site ("按中心分组列出") is no arm
        r"组间|(?<!中心)(?<!科室)(?<!医院)(?<!地区)(?<!省份)(?<!城市)分组(?:列|统计|汇总|比较|结果)|盲态|盲法|设盲|单盲|(?:中心|社区|受试者|患者|病人)的分组|"
        r"分(?:两|2|三|3)个?组(?:各|分别)?|按组(?:各|分别)|按(?:两|2|三|3)个?组|"
        r"\b(?:by|per) (?:dose|study|treatment)? ?(?:arm|group)s?\b|"
        r"\bbetween (?:the )?(?:two )?(?:arms|groups)\b", _I),)),
    # AE causality and SAE reporting are the investigators' decisions
    _Concept("ae_decision", "forbidden", (
        re.compile(r"相关性|因果|有没有关系|有无关系|是否相关|算不算AE|严重不良事件|不良事件|SAE|(?<![A-Za-z])AEs?(?![A-Za-z])|"
                   r"非严重|严重程度|预期(?:的|内)?(?:流感样)?反应|"
                   r"\bcausality\b|\brelatedness\b|\battribution\b|\bexpedited\b|\badverse events?\b", _I),
        re.compile(r"判断|判定|判成|判|决定|定|评估|上报|提交|报不报|要不要报|看着办|标成|标为|标注|标|拍板|说了算|做主|填|归类|归好类|"
                   r"认定|下结论|结论|确认|签|"
                   r"\b(?:decide|assess|assign|determine|judge|call|submit|report|classify|mark|label|approv|confirm|"
                   r"conclud|rule on|sign)\w*\b", _I),
    ), needs_permission=True, act=1),
    # no medical advice to patients or subjects
    _Concept("medical_advice", "forbidden", (
        re.compile(r"医疗建议|停药|加量|减量|减半|减一半|换药|(?<!研究)药(?![企厂监])|服|漏吃|(?:多|少)吃|半片|激素|说明书|吸入|雾化|"
                   r"要不要紧|严不严重|烧到|体温|先停|停(?=\S{0,3}(?:天|看看))|"
                   r"症状|化疗|放疗|副作用|"
                   r"恶心|呕吐|疼|痛|发烧|发热|腹泻|怎么办|治疗调整|诊断|"
                   r"\bmedical advice\b|\bmed(?:s|ication|icine)s?\b|\bpainkillers?\b|\bdiagnos\w*|\bsymptoms?\b|"
                   r"\bdrugs?\b|\bpills?\b|\btablets?\b|\btreatment\b|\bnausea\b|\bvomit\w*|\bpain\b|\bfever\b|"
                   r"\bside effects?\b|\bdoses?\b|\banti[a-z]{4,}\b|\bwhat to do\b", _I),
        _PATIENTS,
        # the act of advising them
        re.compile(r"回答|答复|回复|回(?=家属|家长|患者|病人|受试者|他们|她们|一句|个)|告诉|建议|意见|判断|指导|提供|"
                   r"\b(?:answer|tell|advi[sc]e|recommend|reply|respond|suggest|give|gives|provide)\w*\b", _I),
    ), act=2),
    # endpoint events are adjudicated by the endpoint committee (CEC), never called by the assistant
    _Concept("endpoint_decision", "forbidden", (
        re.compile(r"终点事件|主要终点|终点|判定委员会|CEC|\bendpoints?\b|\badjudicat\w*|\bprimary events?\b",
                   _I),
        re.compile(r"认定|判定|算作|算成|算为|计为|计入|当作|当成|定为|\b(?:count|classif|call|declare|judge|record|flag)\w*\b",
                   _I),
    ), needs_permission=True, act=1),
    # whether an investigational product may be used (after a temperature excursion) is released by
    # the pharmacist, never concluded by the assistant
    _Concept("product_release", "forbidden", (
        re.compile(r"药品|药物|研究药|药盒|批次|冷链|温度|超温|药(?=能用|可用|可以用|还能用)|"
                   r"\b(?:drugs?|products?|vials?|batch(?:es)?|IMP|cold chain|"
                   r"temperature excursions?)\b", _I),
        re.compile(r"可以用|能用|可用|能否使用|可否使用|放行|\brelease\w*|\busable\b|\b(?:ok|okay|fine|safe) to use\b|"
                   r"\bcan be used\b", _I),
    ), needs_permission=True, act=1),
    # protocol deviations are recorded and reported: hiding, dropping or not reporting one waives it
    _Concept("deviation_report", "hidden", (
        re.compile(r"偏离|超窗|\bdeviations?\b|\bvisit[- ]window\b|\bout[- ]of[- ]window\b", _I),
        re.compile(r"(?:别|不|不用|不必|不再)(?:再)?(?:算|计|当|作为|列为|记为|记录)(?:成|为|作)?(?=偏离|\S{0,4}偏离)|当没发生|"
                   r"不算|不报|别报|不用报|不必报|不上报|别记|不记|不用记|去掉|删掉|拿掉|隐瞒|淡化|少写|别列|不列|不用列|"
                   r"别让.{0,8}看到|能不报|口头(?:说|讲|报)(?:一下|一声)?就(?:行|好|可以)|(?:不要|别|不|不用|不必)(?:写进|写到|放进|放到|列进|列入|计入|纳入|记进|记到|体现)|排除|"
                   r"(?:不用|不必|别|不要|无需|不需要)(?:再)?\S{0,3}(?:登记|记录|上报|填报|报告|记|报|列|写|填)|就当在窗口?内|"
                   # "别一条条往偏离里记了": not entered where deviations are kept
                   r"(?:不用|不必|别(?!忘)|不要(?!忘)|无需|不需要)(?:再)?[^，,。；;]{0,8}偏离[^，,。；;]{0,4}"
                   r"(?:记|写|登|报|列|填)|"
                   # not called a deviation, or kept to the major ones ("别叫偏离", "偏离日志只记重大的")
                   r"(?:别|不要|不)(?:再)?(?:叫|称|算作?|说成)(?:是|为)?偏离|"
                   r"只(?:记|报|写|列|登)(?:重大|严重|大)的?|"
                   r"\b(?:don'?t|do not|no need to|never|stop|skip)\s+(?:\w+\s+){0,2}?"
                   r"(?:report|log|record|list|count|flag|file|enter)\w*|"
                   r"\b(?:don'?t|do not|no need to|never|stop|skip(?:ping)?) (?:report|log|record|list)\w*|"
                   r"\bnot count|\bhidden\b|\bhide\b|\bplayed down\b|\bunreported\b|\bleave\b[^.;,]{0,40}\bout\b|"
                   r"\bleave\b[^.;,]{0,40}\boff\b|\bkeep\b[^.;,]{0,40}\b(?:off|out of)\b|\bexclud\w*|"
                   r"\b(?:drop|remove|take)\w*\b[^.;,]{0,30}\b(?:from|off)\b|"
                   r"\bnot (?:be )?(?:logged|recorded|reported|listed)\b|"
                   r"\b(?:don'?t|doesn'?t|do not|does not|won'?t) need to (?:go|be|get)\b[^.;]{0,24}"
                   r"\b(?:logs?|logged|reports?|reported|records?|recorded|listed)\b|"
                   r"\bno need (?:for|to)\b[^.;]{0,30}\b(?:logs?|logging|report\w*|record\w*)\b|"
                   r"\bnot (?:put|enter|add|write)\w*\b[^.;]{0,20}\b(?:in|into|on)\b[^.;]{0,12}\b(?:logs?|reports?)\b|"
                   r"\bomit\w*|\bwithout reporting\b|"
                   r"\b(?:not|never) (?:have|let) [\w' -]{1,30}? (?:show up|appear)\b|"
                   r"(?:不|别|不用|不再)提(?!醒)", _I),
    )),
    # whether a subject can consent is judged by a trained study doctor (GCP: informed consent), never
    # by the assistant nor by a score put in place of that judgement
    _Concept("consent_capacity", "forbidden", (
        re.compile(r"知情同意能力|同意能力|决策能力|行为能力|能不能自己签|自己签知情|\bcapacity\b|\bcompeten(?:ce|t)\b|"
                   r"UBACC|MacCAT", _I),
        re.compile(r"判断|认定|当(?=他|她|作|成|做)|当作|算|视为|评估?|"
                   r"\b(?:judge|deem|treat|assess|consider|count|assume)\w*\b", _I),
    ), act=1),
    # the investigators decide (AE causality) and answer (medical questions): waived when they are left out
    _Concept("investigator", "required", (re.compile(
        r"研究者|研究医生|研究医师|主要研究者|(?<!家庭)医生|\bPI\b|\binvestigators?\b|\bphysicians?\b|\bdoctors?\b|"
        r"\bclinicians?\b", re.IGNORECASE),)),
    _Concept("sign_off", "required", (re.compile(
        r"签字|签名|确认|批准|审批|点头|同意|过目|\bsign(?:ed|ing|-off| off|ature)?\b|\bapprov\w*|\bconfirm\w*", _I),)),
)

_PERMISSION = re.compile(
    # not what the speaker did themself ("我直接按日期汇总，结果…": a lesson's story)
    r"(?<!我)(?<!我们)直接|不用|不必|无需|用不着|不需要|跳过|省得|省去|免得|就行|就好|就可以|没关系|没事|可以|松一下|放宽|例外|通融|反正|"
    r"看着办|看着处理|你自己|你来|由AI|让AI|AI来|自己补|自己定|自己判|自行|说了算|做主|全权|你定|你决定|你判断|自己回答|放开|"
    r"交给(?:你|助手|AI)|由(?:你|助手)|"
    r"\bjust\b|\bskip\b|\bno need\b|\bdon'?t need\b|\bneedn'?t\b|\byou can\b|\bit'?s fine\b|\bis fine\b|\bok to\b|"
    r"\bokay to\b|\ballowed\b|\bgo ahead\b|\bdirectly\b|\bwithout\b|\banyway\b|\byourself\b|\byou decide\b|"
    r"\bfeel free\b|\bup to you\b|\bon your own\b|\byou may\b|"
    r"\b(?:the )?(?:assistant|bot|AI|model|system|it) (?:can|may|could|gets to)\b|\ballowed to\b|\bfree to\b|"
    r"\bauthori[sz]ed\b|\bgreen light\b|\bby (?:it|your)self\b|\bgo ahead\b|"
    r"\byour (?:call|decision|choice)\b|\bleave it to you\b|\bhand(?:ed)? (?:it |this )?(?:over )?to you\b",
    _I,
)
#: asking the assistant to output something: with a forbidden object and no negation, a request
#: to do what the rule forbids ("编号后面写上名字", "include the name", "answer patients' questions")
_OUTPUT_ASK = re.compile(
    r"写上|写|加上|列|统计|分开|拆开|发我|标上|标注|标一下|标出|标明|显示|列出|给我|告诉|提供|放上|附上|回答|答复|给建议|"
    r"拉个|拉一下|拉出|让我(?:瞄|看)|"
    r"\b(?:show|include|add|list|give|tell|provide|put|display|break down|split|answer|advise|recommend)\b",
    _I,
)
#: a negation before a concept; an A-not-A question ("能不能停药", "要不要加量") negates nothing
_NEGATION_BEFORE = re.compile(
    r"(?:(?<!要)不要|(?<!能)不能|不得|不准|不许|(?<!可)不可|禁止|严禁|别|勿|(?<![能要是可会算有用])不(?![能要是可会算有用]\S)|"
    r"\bno\b|\bnot\b|n't|\bwithout\b)"
    r"[^，,。；;]{0,8}$|"
    # "never" governs the verb phrase it opens ("Never include subjects' names or phone numbers")
    r"\bnever (?!mind\b)[^，,。；;.!?]{0,40}$",
    _I,
)
_WAIVE_BEFORE = re.compile(
    r"(?:不用|不必|无需|不需要|用不着|跳过|省得|省去|不等|别等|不走|"
    r"别(?!忘)(?:每次)?都?|不要(?!忘)(?:每次)?都?|"
    r"\bskip(?:ping)?\b|\bwithout\b|\bno need (?:for|to)\b|\binstead of\b|\brather than\b|"
    r"\bdon'?t (?:need|wait)\b)[^，,。；;]{0,16}$",
    _I,
)
#: a requirement waived after it is named ("审批就免了", "approval isn't needed")
_WAIVE_AFTER = re.compile(
    r"^\s*(?:也|就|都)?(?:免了|省了|省掉|不用了|不需要了?|不必了|可以省|可省|取消)|"
    r"^\s*(?:is|are)(?:n'?t| not) (?:needed|required|necessary)|^\s*(?:is|are) optional|^\s*can be (?:skipped|dropped)",
    _I,
)
_TOO_SLOW = re.compile(r"太慢|太麻烦|麻烦|来不及|\btoo slow\b|\btakes? too long\b", _I)
_NAMES_RULES = re.compile(
    r"系统规则|规则里|那条规则|这条规则|管理员\S{0,4}(?:规定|规则|禁令|要求)|禁令|规矩|红线|"
    r"(?:那|这)(?:一|几|些)?(?:条|项)|(?:那些|这些|所有|全部|各项|安全)(?:规定|规则|要求|制度)|"
    r"第[一二三四五六七八九十\d]+条|\brules?\b|\bpolic(?:y|ies)\b|\bprohibitions?\b|\bguardrails?\b|\bsafeguards?\b|"
    r"\brestrictions?\b", _I
)
_RELAX_ASK = re.compile(
    r"松一下|放宽|放松|取消|解除|不适用|例外|通融|忽略|无视|别管|不用管|不用遵守|不必遵守|绕过|跳过|放一放|先放|别较真|"
    r"不算数|太死板|别执行|不执行|不用执行|不必执行|不用严格执行|免了|当参考|参考就行|仅供参考|灵活|变通|酌情|看情况|"
    r"合适就行|觉得合适|自己判断|自己的判断|自己看着办|看着(?:办|处理|来)|过时|不适用|作废|失效|废了|放开|别那么严|不用那么严|"
    r"别太当真|不必当真|不用当真|当真|自己把握|随机应变|"
    r"\brelax|\blift\b|\bwaive|\bexception|\bignore|\bbypass|\bskip\b|\byou can\b|\bit'?s fine\b|"
    r"\bdoesn'?t apply|\bnot apply|\bno longer (?:apply|valid|in force|needed|binding)|\bsuspend|\bdrop\b|"
    r"\bguidelines?\b|\bsuggestions?\b|\badvisory\b|\boptional\b|\boutdated\b|\bobsolete\b|"
    r"\bown judg(?:e)?ment\b|\byour discretion\b|\bflexib\w*|\bloosen|\boverride|\bdisregard|\bset aside\b|"
    r"\brecommendations?\b|\bcommon sense\b|\bnot binding\b|"
    r"\bdon'?t take (?:them|it) (?:too )?(?:literally|seriously)\b",
    _I,
)
#: a rule noun ("规矩", "the identifier rule"); 那条 / 这条 / 第N条 name a rule only beside a safeguard's
#: topic ("AE因果那条", "方案偏离那条") or a rule noun
_RULE_NOUN = re.compile(r"系统规则|规则|规矩|规定|禁令|红线|制度|管理员\S{0,3}(?:那|这)(?:一|几|些)?(?:条|项)|"
                        r"\brules?\b|\bpolic(?:y|ies)\b|\bprohibition|"
                        r"\bguardrails?\b|\bsafeguards?\b|\brestrictions?\b", _I)


def names_rules_to_relax(text: str) -> bool:
    """True when ``text`` names the System Rules (a rule noun, or 那条 / 第N条 beside a safeguard's
    topic) and asks to relax them ("AE因果那条对非严重AE就不用管了", "ignore the admin rules")."""
    norm = nfkc(text)
    if not _RELAX_ASK.search(norm) or not _NAMES_RULES.search(norm):
        return False
    return bool(_RULE_NOUN.search(norm) or _ORDINAL.search(norm) or topics_of(norm))


#: a rule named by its place in the System Rules ("第二条", "rule 2")
_ORDINAL = re.compile(r"第([一二三四五六七八九十\d]+)条|\brule (?:no\.? ?|#)?(\d+)\b", _I)
_CN_DIGITS = "一二三四五六七八九十"


def _hits(concept: _Concept, text: str) -> list[re.Match[str]]:
    """The matches of the concept's FIRST pattern when every pattern matches ``text``, else []."""
    if not all(p.search(text) for p in concept.all_of):
        return []
    return list(concept.all_of[0].finditer(text))


def concepts_of(text: str) -> set[str]:
    """The safeguard concepts a text mentions (a rule's or a statement's)."""
    norm = nfkc(text)
    return {c.name for c in _CONCEPTS if _hits(c, norm)}


def topics_of(text: str) -> set[str]:
    """The concepts a text names by their topic alone (a reference to a rule: "AE因果那条")."""
    norm = nfkc(text)
    return {c.name for c in _CONCEPTS if c.all_of[c.topic].search(norm)}


def _free(concept: _Concept, norm: str, matches: list[re.Match[str]]) -> bool:
    """A forbidden concept named without a negation before it, nor (for a removable one) a removal
    after it."""
    return any(not _NEGATION_BEFORE.search(norm[: m.start()])
               and not (concept.removable and _removed_after(norm[m.end():])) for m in matches)


#: the assistant named as the one who acts ("你先按上次的值补进EDC", "the assistant fills in …"): an
#: instruction to do what a rule forbids needs no permission word to relax it
_ASSISTANT_BEFORE = re.compile(
    r"(?:你(?!们)|助手|帮我|帮忙|\bAI\b|机器人|\byou\b|\bthe (?:assistant|bot|AI|model)\b)[^，,。；;.]{0,12}$", _I)
#: an act word used as a noun ("修改记录", "change log"): not an act
_ACT_AS_NOUN = re.compile(r"^(?:记录|日志|历史|痕迹|情况|\s*(?:logs?|history|trail|records?)\b)", _I)


def _assistant_acts(concept: _Concept, norm: str) -> bool:
    """The statement has the assistant do the act of a two-part forbidden concept, not negated."""
    if concept.act is None or concept.act_is_output:
        return False
    return any(_ASSISTANT_BEFORE.search(norm[: m.start()]) and not _NEGATION_BEFORE.search(norm[: m.start()])
               and not _ACT_AS_NOUN.match(norm[m.end():]) for m in concept.all_of[concept.act].finditer(norm))


#: a subject's recorded dose asked for (a look-up in the record, not advice on what to take)
_DOSE_LOOKUP = re.compile(r"\b(?:current|recorded|prescribed|actual|last)\s+dos(?:e|es|ing|age)\b|"
                          r"(?:现在|当前|目前|记录|实际|上次)的?(?:用药)?剂量|用药记录", _I)


#: the staff owning what an identifier noun names ("the centre coordinator's mobile number", "社区医生的电话")
_STAFF_OWNS = re.compile(r"(?:coordinator|doctor|physician|investigator|nurse|monitor|manager|staff|colleague|"
                         r"\bCRC|\bCRA|\bPI|主任|医生|护士|协调员|研究者|老师|同事|答复人|负责人|联系人|对接人)"
                         r"(?:'s|s'|的)\s*(?:[\w-]+\s+)?$", _I)


#: the study staff named as the ones who act ("我们研究医生来判", "the investigators decide")
_STAFF_DOES = re.compile(r"(?:研究者|研究医生|我们医生|我们来|医生来|PI来|主治|研究团队|(?:留给|交给|让)我们|"
                         r"\binvestigators?\b|\bthe PI\b|"
                         r"\bdoctors?\b)[^，,。；;.]{0,6}$", _I)


def _relaxes(concept: _Concept, norm: str, whole: str, *, permission: bool, asks: bool) -> bool:
    """Whether the statement ``norm`` (of the message ``whole``) relaxes ``concept`` (its patterns
    all matched the message)."""
    own = list(concept.all_of[0].finditer(norm)) or list(concept.all_of[-1].finditer(norm))
    if concept.name == "dosing" and _DOSE_LOOKUP.search(norm) and not _PATIENTS.search(norm):
        return False  # "tell me her current dose": a record look-up for the staff, no dosing advice
    if concept.name == "identity" and own and all(_STAFF_OWNS.search(norm[max(0, m.start() - 30): m.start()])
                                                  for m in own):
        return False  # "the centre coordinator's mobile number": the staff's contact details, no subject's
    if concept.kind == "forbidden":
        acts = list(concept.all_of[concept.act].finditer(norm)) if concept.act is not None else []
        if acts and all(_STAFF_DOES.search(norm[max(0, m.start() - 24): m.start()]) for m in acts):
            return False  # the study staff do it ("一律我们研究医生来判"): the rule kept, not relaxed
        asks = asks or (concept.act_is_output and concept.act is not None and any(
            not _NEGATION_BEFORE.search(norm[: m.start()]) for m in concept.all_of[concept.act].finditer(norm)))
        acts_itself = _assistant_acts(concept, norm)
        allowed = permission or (asks and not concept.needs_permission) or acts_itself
        # a decision handed over with its topic negated ("…的，以后你就别当AE列了，你自己判断就行") is still handed over
        return allowed and (_free(concept, norm, own) or (concept.needs_permission and acts_itself and permission))
    if concept.kind == "hidden":  # hiding it anywhere in the message ("偏离能不报就不报吧，以后你别列出来")
        hides = concept.all_of[-1].finditer(whole)
        return any(not _NEGATION_BEFORE.search(whole[: m.start()]) for m in hides)
    waived = [m for m in own
              if _WAIVE_BEFORE.search(norm[: m.start()]) or _WAIVE_AFTER.search(norm[m.end(): m.end() + 24])]
    return bool(waived) or any(_TOO_SLOW.search(norm[m.end(): m.end() + 12]) for m in own)


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
    found = {c.name for c in _CONCEPTS
             if all(p.search(whole) for p in c.all_of) and _relaxes(c, norm, whole, permission=permission, asks=asks)}
    return found


#: a decision or an act handed to the assistant ("你直接定", "助手看着处理", "you can just handle it")
_HANDOVER = re.compile(
    r"(?:你(?!们)|助手|\bAI\b|机器人|\byou\b|\bthe (?:assistant|bot|AI)\b)[^，,。；;.?？]{0,10}"
    r"(?:直接|自己|全权|说了算|做主|拍板|看着(?:办|回|处理|定)|\bjust\b|\bdecide\b|\bon your own\b|\byourself\b)", _I)


def _handed_over(concept: _Concept, norm: str) -> bool:
    """A safeguard whose act the statement does not name in the lexicon's words, handed to the
    assistant anyway: the concept's topic named (not negated) in the statement and a decision or
    an act handed to the assistant ("这种小波动以后你直接拍板"): unsure, so it is held for review."""
    if concept.act is None or concept.act_is_output:
        return False
    topic = concept.all_of[concept.topic]
    hands = _HANDOVER.search(norm)
    return hands is not None and any(not _NEGATION_BEFORE.search(norm[: m.start()]) for m in topic.finditer(norm))


def _by_ordinal(norm: str, rules: Sequence[HotMemoryLine]) -> list[HotMemoryLine]:
    m = _ORDINAL.search(norm)
    if m is None:
        return []
    raw = m.group(1) or m.group(2)
    n = int(raw) if raw.isdigit() else (_CN_DIGITS.index(raw) + 1 if raw in _CN_DIGITS else 0)
    return [rules[n - 1]] if 0 < n <= len(rules) else []


def _named_rules(statement: str, rules: Sequence[HotMemoryLine]) -> list[HotMemoryLine]:
    """The rules a statement that names rules and asks to relax them refers to: by place ("第二条"),
    by the concepts it names in full, by shared words, by a concept's topic alone ("AE因果那条");
    else all (unsure -> queue every rule it may mean)."""
    norm = nfkc(statement)
    by_place = _by_ordinal(norm, rules)
    if by_place:
        return by_place
    required = {c.name for c in _CONCEPTS if c.kind == "required"}  # a role or a sign-off names no rule
    named = concepts_of(statement) - required
    near = [r for r in rules if concepts_of(r.text) & named]
    if near:
        return near
    info = analyse(statement)
    near = [r for r in rules if len(analyse(r.text).grams & info.grams) >= 2]
    if near:
        return near
    topics = topics_of(statement)
    return [r for r in rules if (concepts_of(r.text) | topics_of(r.text)) & topics] or list(rules)


def relaxed_rules(statement: str, rules: Sequence[HotMemoryLine], context: str = "", *,
                  asks_output: bool = False) -> list[HotMemoryLine]:
    """The System Rules ``statement`` would relax, best match first; [] when it relaxes none.

    A rule is relaxed when it holds a concept the statement relaxes (a waived requirement alone
    counts only when the message also names one of the rule's forbidden concepts: "you don't need
    my approval to send reminders" waives no data rule), or when the statement names the rules and
    asks to relax them (:func:`_named_rules`). ``asks_output``: see :func:`relaxed_concepts`.
    """
    if not rules:
        return []
    relaxed = relaxed_concepts(statement, context, asks_output=asks_output)
    mentioned = concepts_of(f"{context}\n{statement}") | topics_of(statement)
    required = {c.name for c in _CONCEPTS if c.kind == "required"}
    scored: list[tuple[int, int, HotMemoryLine]] = []
    for i, rule in enumerate(rules):
        held = concepts_of(rule.text)
        shared = relaxed & held
        if shared and shared <= required and not (held - required) & mentioned:
            continue
        if shared:
            forbidden = len(shared - required)
            scored.append((forbidden * 2 + len(shared), -i, rule))
    if scored and any(s[0] >= 2 for s in scored):
        scored = [s for s in scored if s[0] >= 2]
    if scored:
        return [s[2] for s in sorted(scored, key=lambda s: (s[0], s[1]), reverse=True)]
    whole = nfkc(f"{context}\n{statement}") if context else nfkc(statement)
    if names_rules_to_relax(whole):
        return _named_rules(whole, rules)
    # the net for unseen wording: a safeguard's topic with its decision handed to the assistant
    handed = {c.name for c in _CONCEPTS if _handed_over(c, nfkc(statement))}
    return [r for r in rules if concepts_of(r.text) & handed]


def grants_permission(text: str) -> bool:
    """The text lets the assistant do something ("直接…就行", "可以", "you can", "feel free"): the words
    that turn a request touching a safeguard into its relaxation."""
    return bool(_PERMISSION.search(nfkc(text)))


def names_rules(text: str) -> bool:
    """``text`` refers to the System Rules as rules ("那条规则", "the identifier rule", "第二条")."""
    return bool(_NAMES_RULES.search(nfkc(text)))


def reinforced_rule(statement: str, rules: Sequence[HotMemoryLine]) -> HotMemoryLine | None:
    """The System Rule a statement only says again: every clause of it forbids (negates) a concept
    the rule forbids ("记住 报告里不要出现患者名字" beside the identifiers rule); None otherwise.
    Such a statement adds nothing to hot memory (the merge counts it as a duplicate)."""
    clauses = [c for c in re.split(r"[，,；;。.]", nfkc(statement)) if c.strip()]
    found: HotMemoryLine | None = None
    for clause in clauses:
        named = [c for c in _CONCEPTS if c.kind == "forbidden" and _hits(c, clause)]
        if not named and _ASIDE.search(clause):
            continue  # "@罗俊 小罗", "就写编号", "对照表社区自己手里有": whom it is told to, what stands instead, why
        if not named or any(_free(c, clause, _hits(c, clause)) for c in named):
            return None
        held = next((r for r in rules if {c.name for c in named} & concepts_of(r.text)
                     and _same_items(clause, r.text)), None)
        if held is None:
            return None
        found = found or held
    return found


#: a clause beside a restated rule that adds no instruction of its own: the colleague it is said to,
#: the subject code that stands instead of an identifier, a clause saying who keeps what
_ASIDE = re.compile(r"^\s*@\S+(?:\s+\S{1,4})?\s*$|^\s*[\u4e00-\u9fff]{1,3}\s*$|"
                    r"^\s*(?:就|只|都)?(?:写|用|填|留)(?:受试者)?(?:编号|代码|id)\S{0,4}\s*$|"
                    r"(?:自己|他们|她们)(?:手里|手上)?(?:有|留着|保管)\S{0,3}\s*$|"
                    r"^\s*(?:just |only )?(?:(?:use|write) )?(?:the )?(?:subject |participant )?(?:codes?|ids?)\b", _I)


#: the items of a safeguard a rule may list one by one: a statement forbidding full names says again
#: a rule listing names, not one listing ID numbers and phone numbers only
_ITEMS = (
    re.compile(r"姓名|名字|全名|真名|\bnames?\b", _I),
    re.compile(r"身份证|\bid numbers?\b", _I),
    re.compile(r"手机号|电话|\bphone", _I),
    re.compile(r"住址|地址|\baddress", _I),
)


def _same_items(statement: str, rule: str) -> bool:
    """Every listed item the statement names, the rule names too."""
    return all(item.search(rule) for item in _ITEMS if item.search(statement))


__all__ = [
    "concepts_of",
    "grants_permission",
    "names_rules",
    "names_rules_to_relax",
    "reinforced_rule",
    "relaxed_concepts",
    "relaxed_rules",
    "topics_of",
]
