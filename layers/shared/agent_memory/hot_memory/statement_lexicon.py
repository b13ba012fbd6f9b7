"""Word families of the statement finder (:mod:`agent_memory.hot_memory.statement_finder`): data tables only.

Each pattern names one KIND of wording (a durable cue, a trap, a section, a filler to clean), never
a sample sentence; the kinds are those of the finder's module docstring and of README "What the
daily distillation keeps". Patterns are matched against NFKC text
(:func:`agent_memory.hot_memory.analysis.nfkc`), case-insensitively where compiled with ``_I``.
A pattern's users: the finder (cues, traps), :mod:`agent_memory.hot_memory.sentences` (cleaning)
and :func:`agent_memory.hot_memory.statements.classify_section` (sections).
"""

from __future__ import annotations

import re

_I = re.IGNORECASE

# ------------------------------------------------------------------ cues
DURABLE_ZH = re.compile(
    r"以后|今后|往后|此后|从现在起|从现在开始|从今天起|从今天开始|从今往后|从今以后|从下次起|下次起|从下(?:周|个?月)起|"
    r"下次(?=别|不要|注意|一定|记得|务必)"
)
#: 以后 after an event is a time word ("入组以后出现腹泻", "V3以后", "吃了药以后"), not a standing instruction
AFTER_EVENT = re.compile(
    r"(?:入组|出院|入院|手术|术|治疗|用药|服药|随访|访视|筛选|随机化?|溶栓|发病|给药|签署|结束|完成|开始|V\d+|\d+\s*[天周月年]|"
    # a date ("28号以后就不用了", "5月15日以后")
    r"\d{1,2}\s*[号日]|复查[\u4e00-\u9fffA-Za-z]{0,6}|血常规|化验|采血|抽血|检查|"
    # a visit or cycle code ("C2D1以后的访视", "W12以后", "第二周期以后")
    r"(?<![A-Za-z])[CDWMV]\d+(?:D\d+)?|第[0-9一二三四五六七八九十]+(?:个)?(?:周期|疗程|次访视|次随访|周|天)|基线|首剂|末次|"
    # a holiday ("五一以后头一个礼拜的排班")
    r"五一|十一|国庆|春节|元旦|端午|中秋|清明|过年|假期|放假|节)\s*$"
    r"|(?<![对好行算罢])了[\u4e00-\u9fff]{0,3}$",
    _I,
)
#: a fragment before a topic-first cue that names the topic ("汇报的时候，以后先给结论")
TOPIC_FRAGMENT = re.compile(r"^(?:关于|至于|对于).+|.+(?:的时候|时|方面|这块|这边|部分|的话)$")
DURABLE_EN = re.compile(
    r"\b(?:from now on|going forward|moving forward|from today on(?:wards)?|from here on|in (?:the )?future|"
    r"henceforth|from (?:the )?next [a-z]+(?: [a-z]+)? on(?:wards)?|starting (?:from |with )?(?:the )?next [a-z]+)\b"
    r"[,:]?\s*",
    _I,
)
#: "X should always / must never …" inside a sentence: a standing rule stated in English
ALWAYS_MODAL = re.compile(r"\b(?:should|must|shall|will|needs? to|ha(?:s|ve) to)\s+(?:always|never)\b", _I)
#: a habitual instruction without a cue ("给CRC的提醒都用中文", "周报一律按中心分组")
_HABITUAL_VERB = r"(?:用|按|以|写|填|取|保留|发|放|列|加|标|附|带|改成|改用|别|不要|不用|不再|先|推|报)"
HABITUAL_ZH = re.compile(r"(?:都|统一|一概)(?:在[^，,。]{1,8}?)?" + _HABITUAL_VERB + "|"
                         # when and how, after 一律 and before the verb ("一律当天下午5点前单独推给我")
                         r"一律(?:在[^，,。]{1,8}?)?(?:当天|当日|单独|直接|马上|立刻|第一时间|及时|"
                         r"(?:[上下中]午|晚上|早上|傍晚|凌晨)?(?:\d{1,2}|[一二三四五六七八九十]{1,2})点半?(?:前|以前|之前))*"
                         + _HABITUAL_VERB)
#: a recurring occasion before an instruction ("每次导出的时候…加一行", "每周一早上…发我", "for every
#: monitoring visit, send me …"): the instruction holds each time
RECURRING = re.compile(
    r"每次|每回|每逢|每条|每行|每一行|每份|每周[一二三四五六日天]?|每个?(?:星期|礼拜)[一二三四五六日天]?|每天|每日|每月|每个月|"
    r"每季度|"
    r"(?:不管|无论|不论)[^，,。]{0,12}[，,]?[^。]{0,16}都|"
    r"\b(?:for |on |at |before |after |ahead of )?(?:every|each|any)\s+(?:of (?:my|our|the|their|his|her|your) )?"
    r"(?:(?:subject|patient|participant)'s (?:\w+ )?)?"
    r"(?:(?:other|second|third) )?"
    r"(?:time|day|week|month|quarter|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|other (?:week|monday|tuesday|wednesday|thursday|friday)|[a-z]+ (?:visit|meeting|export|report)s?|"
    r"visit|meeting|export|report|query|deviation|site|table|listing|summary|email|reply|answer|file|document)s?\b|"
    r"\bwhenever\b", _I)
#: an instruction verb after a recurring occasion or about a recurring document
INSTRUCTION = re.compile(
    r"发|加|放|列|标|写|附|带|贴|排|汇总|提醒|推|抄送|注明|注上|标明|写明|给我|更新|出一[份版个]|只报|别报|报成|"
    r"\b(?:send|add|put|list|include|mark|show|attach|sort|group|split|flag|highlight|remind|cc|start|begin|"
    r"keep|carry|carries|use|give|have|has|goes|go|sits?|stays?|appears?|comes?)\b", _I)
#: a document the team gets again and again, named where an instruction says what goes in it
#: ("给CRC的访视提醒里加一行", "In the weekly enrolment summary, add …")
RECURRING_DOCUMENT = re.compile(
    r"(?:提醒|周报|月报|日报|日程表|清单|名单|汇总表?|报表|列表|导出(?:文件)?|模板)(?:里|中|上|后面|末尾|开头|顶上)|"
    r"^\W*in (?:the|every|each|our|my) (?:[\w-]+ ){0,4}(?:summar(?:y|ies)|reports?|listings?|reminders?|exports?|"
    r"digests?|logs?|schedules?|tables?|dashboards?|lists?)\b", _I)
#: an output the assistant prepares again and again (a report, a list, a reminder, a listing …): a change of
#: its form or timing is a standing preference even where memory holds no line about it yet
DOCUMENT = re.compile(
    r"周报|月报|日报|季报|年报|简报|清单|名单|报表|报告|汇总|提醒|列表|纪要|日程|模板|快照|导出|议程|通知|表格?|"
    r"\b(?:weekly|monthly|daily)\b|\b(?:reports?|listings?|lists?|reminders?|summar(?:y|ies)|minutes|snapshots?|"
    r"digests?|logs?|tables?|exports?|schedules?|agendas?|datasets?|dashboards?|drafts?|letters?|tlfs?)\b", _I)
#: what the assistant sends or prepares, named as such ("发我的东西", "你出的表", "给我的日报", "the reminders you
#: send me"): an instruction about it holds for every copy
OUTPUT_OF_ASSISTANT = re.compile(
    r"(?:你|助手)(?:出|发|做|给|写|整理|准备)(?:给我|我)?的|(?:发|给)(?:我|我们|咱们|大家)(?:发)?的(?=\S)|"
    r"\b(?:the|any|all|every) [\w -]{2,30}? you (?:send|prepare|give|make|write)(?: (?:me|us))?\b|"
    r"\b(?:anything|everything|whatever)(?: (?:meant|intended))? for me\b|"
    r"\b(?:anything|everything|whatever) you send me\b", _I)
#: how an output should be, after it is named (an instruction or a measure: 尽量短, 三行以内, 不要…)
HOW_WORD = re.compile(r"尽量|以内|不超过|控制在|不要|别|只|必须|一律|统一|都|就|\b(?:only|always|never|keep|include|"
                      r"mark|flag|show|add|put|list|sort|be|have|carry|come|go)\b", _I)
#: a preference said as a wish ("我更希望…", "I'd rather …")
PREFER = re.compile(r"(?:我)?更?(?:希望|倾向于|更喜欢)|\bi'?d rather\b|\bi would rather\b|\bi'?d prefer\b", _I)
#: a rule bounded by an end ("Until the March data cut, …"): standing until then
UNTIL = re.compile(r"^\W*(?:until|till|up to|through) (?:the )?[\w -]{2,30},", _I)
#: a complaint about how it is now, not a wish for how it should be
COMPLAINT = re.compile(r"根本|没空|顾不上|看不过来|看不出|看不清|分不清|不方便|太早|太晚|太慢|又\S{0,6}了|\bno time\b|"
                       r"\bi keep having to\b|\bwon'?t (?:open|load|work)\b|\bdoesn'?t work\b|"
                       r"\bcan'?t (?:open|read)\b|"
                       r"有点(?:早|晚|慢|多|少|长|短|乱)|(?:早|晚|慢)了点|老事忘|老忘|总忘|记不住|想不起来|"
                       r"\btoo (?:early|late|slow)\b",
                       _I)
#: what an output has now falls short ("光写名字日期转归不够用", "太简单了", "too thin"): how it is, not a request
FALLS_SHORT = re.compile(r"太少|不够|太简单|太粗|看不出|\btoo (?:thin|little|sparse|basic)\b|\bnot enough\b", _I)
#: a request put as a question ("Can you send me … from now on?", "能不能以后…"): a directive, not a question
REQUEST = re.compile(r"^\W*(?:(?:ok|great|thanks|hi)\W+)*(?:can|could|would|will) (?:you|the|all|any|your)\b|"
                     r"\b(?:would|could) it be possible (?:to|for)\b|"
                     r"(?<!问)能不能|可不可以|能否|^\W*可以(?:帮我|麻烦|以后|每)|^\W*麻烦", _I)
#: a new focus of the project ("接下来的重点放到…", "current focus is now …")
FOCUS_CHANGE = re.compile(
    r"(?:当前|目前|现在|接下来|下一步|下阶段|下个阶段|后面|这个月|本月)的?(?:工作)?重点"
    r"(?:是|放到|放在|改成|换成|转到|转向|调整为)|"
    r"(?:接下来|下一步|下阶段)(?:的工作)?(?:全力|主要|集中精力|重点)(?:搞|抓|做|推进|放在|转向|冲|攻|保)|"
    # a period before the focus ("接下来到5月15号，重点是…")
    r"(?:接下来|下一步|下阶段)[^。；;]{1,16}?[，,]\s*重点(?:是|放在|放到|转到)|"
    # where the effort goes next ("接下来劲儿往评估完整性上使", "下一步精力都放到数据清理上")
    r"(?:接下来|下一步|下阶段|后面|这个月|本月|节后|年后|假期后|开学后|之后|往后)[^，,。；;]{0,4}?"
    r"(?:劲儿?|精力|力气|心思|功夫|人手)(?:全|都|要|得|先)*"
    r"(?:往|放在|放到|用在|花在|集中到|集中在)|"
    r"(?:现在|目前|当前|接下来|这个月|本月)?(?:的)?重中之重(?:是|就是)|"
    r"\b(?:current |next )?focus (?:is now|now is|shifts? to|moves? to|changes? to)\b|"
    r"\b(?:that|this|it)(?:'s| is) (?:our|the) (?:focus|priority|top priority) (?:now|from now on)\b|"
    r"\ball hands on deck\b", _I)
#: a risk named without the word ("现在头疼的是…", "最担心的是…", "the main worry now is …")
RISK_SAID = re.compile(
    r"(?:现在|目前|当前|眼下|接下来)?(?:最|比较)?(?:要)?(?:头疼|担心|麻烦|棘手|发愁|要盯|操心|犯愁|头大)的(?:是|就是)|"
    r"(?:最大|主要)的?(?:问题|隐患)(?:是|在于)|"
    r"\b(?:the )?(?:main |biggest |big )?(?:worry|concern|headache) (?:now )?is\b", _I)
#: "don't … any more" ("发我的东西别再截表格图了", "stop sending …"): a standing instruction by itself
NEVER_AGAIN = re.compile(r"(?:别再|不要再|不用再)(?!改回|换回|变回)|别老是?|别总是?|"
                         r"\bstop (?:sending|doing|using|putting|attaching)\b|"
                         r"\bno more\b", _I)
#: a tentative thought ("以后可能得…", "maybe we should …"): not a standing instruction yet
#: the speaker has not decided yet ("我还在想…没拿定主意"): read on the whole sentence
UNDECIDED = re.compile(r"还在想|没拿定主意|还没想好|拿不准|还没定|\bhaven'?t decided\b|\bstill thinking\b", _I)
TENTATIVE = re.compile(r"可能得|可能要|也许|或许|说不定|估计得|大概得|看情况|\bmaybe\b|\bmight\b|\bperhaps\b", _I)
ALWAYS_EN = re.compile(r"\s*(?:(?:ok(?:ay)?|also|and|so|btw|please|pls|plz)\b[,:]?\s*)*"
                       r"(?P<kw>always|never)\b(?!\s+mind)", _I)
CHANGE = re.compile(
    r"改成|改为|改到|换成|换到|调整为|调整成|调成|定在|定为|还是定|统一用|统一为|"
    # "no change to my tables" changes nothing
    r"\b(?:switch(?:ed)? to|(?<!\bno )(?<!\bany )change(?:d)? (?:it )?to|move(?:d)? (?:it )?to)\b",
    _I,
)
REMEMBER = re.compile(
    r"(?<!我)(?<!已)(?<!还)(?<!你)(?:请|要)?(?:记住|牢记|记得)(?!了|住了|吗|不)\s*[:：]?\s*|"
    r"(?<!do you )(?<!you )\b(?:please\s+)?(?:remember(?: this(?: one)?| that)?|keep in mind(?: that)?)\b"
    r"(?!\s+(?:what|when|how|why|whether|if)\b)\s*[:：,]?\s*",
    _I,
)
NOTE = re.compile(
    # not what was not recorded ("一路上温度啥也没记下来")
    r"(?<!没)(?<!没有)(?<!未)(?:你|帮我|也|请)?(?:记一下|记下来|记下(?!来)|记录一下|备注一下|记一笔)(?!了)\s*[:：]?\s*|"
    r"(?:顺手|顺便)?记(?:个|一个|一条)\s*(?:lesson|教训|坑|事)\s*[:：]\s*|"
    r"\b(?:note this(?: down)?|for the record)\s*[:：]\s*",
    _I,
)
LESSON = re.compile(
    r"教训|踩坑|踩过的?坑|这个坑|[有个]个?坑|被坑|坑了|吃过亏|长个?记性|吃一堑|上次.{0,12}(?:失败|出错|错误|搞错|超时)|"
    r"(?:下回|下次|以后)别再踩|"
    r"因为.{0,20}(?:失败|出错|错误)|"
    r"(?<![A-Za-z])lessons?(?![A-Za-z])|\blearned\b|\bthe hard way\b",
    _I,
)
LESSON_LABEL = re.compile(
    r"^\s*(?:这个|这条|一个|个)?(?:教训|经验|坑|lesson)(?:\s*(?:for|给)\s*(?:the\s+)?(?:team|大家|全组))?"
    r"\s*[:：]?\s*", _I)
IMPERATIVE = re.compile(
    r"别|不要|不用|不必|不能|禁止|必须|务必|一律|只|要|请|应|需|用|按|发|写|列|给|放|"
    r"\b(?:don'?t|do not|never|always|only|must|should|please|use|send|put|list|write|give|report)\b",
    _I,
)
#: a fragment asking for something NOW ("这周的先发我", "现在先帮我跑一下01中心的", "先把P015的数据给我看看",
#: "send me this week's now"): a task of the message, never part of a standing statement
ACT_NOW = re.compile(
    r"现在|今天|马上|立刻|这周的|本周的|这个月的|这次|先(?:把|对|帮|给我看|查一下|查一遍|跑|发我|生成|出一)"
    r"|\bnow\b|\btoday\b|\bright away\b|\bthis week'?s\b",
    _I,
)
ACK = re.compile(r"(?:我|已|已经)?(?:记住了|记下了|知道了|了解了?|明白了?|收到)|\b(?:noted|got it|will do)\b", _I)

# ------------------------------------------------------------------ traps
HYPOTHETICAL = re.compile(r"如果|要是|假如|万一|假设|若是|倘若|\bif\b|\bin case\b|\bsuppose\b|\bwhat if\b", _I)
QUESTION_WORDS = re.compile(
    r"是不是|要不要|能不能|可不可以|需不需要|有没有|为什么|为啥|为何|何时|[吗么]\s*$|"
    # 谁 / 哪位 / 什么时候 are a universal, not a question, after 不管 / 无论 or before …都 ("谁问偏离都带上日期")
    # or after 看到 / 发现 / 只要 ("以后只要看到谁家里量的收缩压低于100就…"), or before 一律 later in the sentence
    r"(?<!不管)(?<!无论)(?<!不论)(?<!不管给)(?<!无论给)(?<!不管是)(?<!无论是)(?<!不论是)(?<!不管发给)(?<!无论发给)"
    r"(?<!看到)(?<!发现)(?<!只要)(?<!要是)(?<!一旦)"
    r"(?:谁|哪位|什么时候)(?![^，,。；;]*都)(?![^。；;？?]*一律)"
    r"|\bshould we\b|\bdo we\b|\bwhy\b|\bwho\b|\bwhen did\b", _I)
POSTPONE = re.compile(
    r"以后再(?:说|议|讲|看|定|聊|考虑|弄)|回头再(?:说|议|看)|改天再|先放放|放一放|缓一缓|(?:明年|下次|下回|到时候)再(?:说|议|看)|"
    r"\blater\b|\bsome other time\b|\bpark (?:that|this|it)\b|\bput (?:that|this|it) on hold\b", _I
)
#: the end of a postponement ("以后有机会再说", "那就以后再讨论吧")
LATER = re.compile(r"再(?:说|议|讨论|商量|研究|看看?)[吧啊哈了]*$|\blater\b|\bsome day\b", _I)
#: a body that only points back ("这个都这么办"): nothing to remember without its context
ANAPHORA = re.compile(r"^(?:这个|那个|这样|那样|就)?(?:都|也)?(?:这么|这样|那样|照此)(?:办|做|来|处理)?。?$")
CONDITIONAL_HEAD = re.compile(r"^(?:要是|如果|凡是|只要|一旦|每当|\bif\b|\bwhen(?:ever)?\b)", _I)
TIME_WORD = re.compile(r"以后的|以后(?=[0-9一二三四五六七八九十两几]+(?:天|周|个月|年))")
#: what makes "以后的X" a standing instruction after all ("大家以后的提醒都用中文"): a rule of how X is done
RULE_AFTER_TIME_WORD = re.compile(r"都|一律|统一|全部|必须|务必|别|不要|不用|只")
REPORTED = re.compile(
    # the speaker's own "提个要求：" / "一个建议，" is not someone else's
    r"(?<!我)(?<!我想)(?<!我再)(?:说|讲|提到|表示|(?<!个)(?<!我的)(?:建议|要求)|问)(?:他们科?|她们|他|她|那边|科里)?[:：,，]?\s*$|"
    r"\b(?:said|says|told us|asked|mentioned|suggested)\b[^.]{0,20}$", _I
)
ONE_OFF = re.compile(
    r"今天|今晚|明天|明早|明晚|后天|待会|一会儿|马上|下(?:周|礼拜|星期)[一二三四五六日天]|这周[一二三四五六日天]|本周[一二三四五六日天]|"
    r"下(?:周|礼拜|星期)的|下个?月的|"
    r"这次|本次|这份|这个表|把这|\btoday\b|\btonight\b|\btomorrow\b|\bthis (?:time|once|afternoon|morning|evening)\b|"
    r"\bnext (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    _I,
)
CLINICAL_ORDER = re.compile(
    r"医嘱|会诊|出院|每天测|各测|测一次|监测|血糖|血压|峰流速|服用|口服|继续吃|注射|雾化|剂量|用药|服药|吃药|复查|复诊|化验|抽血|"
    r"血常规|查血|血小板|中性粒|微克|μg|"
    r"肝功|肾功|停(?=[\u4e00-\u9fff]{1,6}(?:平|片|素|霉|星|林|酮|胺|醇|钠|钾|药))|起停|非药物|躁动|镇静|"
    r"减成|减量|加量|加用|停用|\b(?:discharge|prescrib\w*|take \d|recheck|labs?|tid|bid|qd|qid|qn|prn)\b|"
    r"(?<![A-Za-z])mg(?![A-Za-z])|先停[一两三\d]?[天周]?|(?:减|降|加)到\s*\d+\s*(?:mg|毫克|片|粒)", _I
)
#: a dosing regimen ("以后每天早晚各一片", "每日两次，每次5mg"): a patient's treatment, never an instruction to
#: the assistant, whether or not the message names the subject
DOSE_REGIMEN = re.compile(
    r"(?:每天|每日|每晚|每早|早晚|一天|一日|睡前|饭后|饭前)[^，,。；;]{0,8}?[一两二三四五半0-9.]+\s*(?:片|粒|支|袋|mg|毫克|ml|毫升|单位|iu)"
    r"|\b\d+(?:\.\d+)?\s*mg\s+(?:once|twice|three times) (?:a|per) day\b"
    # an amount and its interval ("按200毫克每两周一次打", "300 mg every 4 weeks")
    r"|\d+(?:\.\d+)?\s*(?:mg|毫克|微克|μg|ml|毫升|单位|iu)\s*(?:每|隔)?[一两二三四五六七八九十\d]*\s*(?:天|日|周|个月|月|小时)一次"
    r"|(?:每|隔)[一两二三四五六七八九十\d]*\s*(?:天|日|周|个月|月|小时)一次[，,]?\s*\d+(?:\.\d+)?\s*(?:mg|毫克|微克|μg|ml|毫升|单位|iu)"
    r"|\b\d+(?:\.\d+)?\s*(?:mg|mcg|ml|units?|iu)\s+(?:every|each|per|q)\s*\d*\s*(?:h|hours?|days?|weeks?|months?|w|d)\b"
    # what the doctor had the patient do ("我让他先停两周", "让她减到135微克")
    r"|让(?:他|她|患者|病人|受试者)[^，,。]{0,4}(?:停|减|加|换|吃|服|恢复)", _I)
RESTATED = re.compile(r"之前说过|刚才说了|说过的|说过了|我说过|我讲过|老规矩|再强调|再重申|重申一下|再说一遍|"
                      r"再\s*(?:confirm|确认)\s*一下|"
                      r"还记得吧|都还记得|"
                      r"再提醒一遍|"
                      r"\bsame as before\b|\bas (?:i )?said\b|"
                      r"\bi (?:told you|said)\b", _I)
WITHDRAW = re.compile(
    r"(?:先)?不要了|不用了|取消(?:了|吧|掉)?|撤(?:了|掉|销|回)|作废|(?<!就)算了|不(?:用|要)?(?:加|放|发|列)了|"
    # "拉sheet那个收回哈" (not "空药盒都要收回": a task's object)
    r"(?:那个|这个|那条|这条)收回(?:了|吧|哈|啊)*(?=[，,。；;!！\s]|$)|"
    r"\bnever mind\b|\bscratch (?:that|the|this|my)\b|\bcancel\b|\bforget (?:it|that|about)\b|\bdrop (?:that|the)\b|"
    r"\bforget (?:the|my|our) (?:[\w-]+ ){0,4}(?:thing|request|idea|part|bit|one)\b|"
    r"\b(?:disregard|ignore) (?:what i (?:said|asked|wrote)|my (?:earlier |last )?(?:request|message|note)|that)\b",
    _I,
)
#: the speaker's own promise ("以后我会注意的", "I'll send it earlier"): an acknowledgement, not memory
OWN_PROMISE = re.compile(r"^(?:我|我们)(?:会|一定|尽量|保证|争取)|^(?:我|我们)[^，,。你]{0,6}?都会|"
                         r"^(?:i|we)(?:'ll| will| shall)\b|"
                         r"^[^，,。给发让叫替帮]{0,8}(?<![给发让叫替帮])(?:我|我们)(?:都|也|就|还)?"
                         r"(?:会|一定会|保证|争取)|"
                         # "我每周五下午把进度发到群里": what the speaker will do, told to the team
                         r"^(?:我|我们)(?:以后|今后|每|都|也)[^，,。你]{0,12}?把[^，,。]{1,24}?"
                         r"(?:群|同步|大家|各位)", _I)
#: a note that is a reminder of an appointment ("记一下 明天下午开会"): a one-off, not memory
REMINDER = re.compile(r"提醒我|\bremind me\b", _I)
#: a decision of the project ("决定 4 月起…改为…") is history for the weekly report, not memory
DECISION = re.compile(r"决定|决议|会上定|拍板|定的|定下|\bdecided\b|\bagreed\b", _I)
BACK_REFERENCE = re.compile(r"早上|上午|刚才|(?<![\u4e00-\u9fffA-Za-z0-9])之前|之前(?:说|讲|提|定|那)|"
                            r"昨天|那个|那条|那件|\bthat\b|\bthe one\b|\bearlier\b|"
                            r"\bthis morning\b|\bthe [\w-]+(?: [\w-]+)? thing\b", _I)

# ------------------------------------------------------------------ sections
FOCUS = re.compile(r"重点|主要精力|\bfocus\b|\bpriority\b", _I)
RISK = re.compile(r"风险|\brisks?\b", _I)
#: a state of the project (not a status named as a label: "未关闭query", "待关闭")
STATE = re.compile(r"暂停|恢复|停止入组|(?<![未待已])关闭|上线|升级|"
                   r"\bon hold\b|\bpaused\b|\bsuspended\b|\bresumed\b", _I)

# ------------------------------------------------------------------ cleaning
LEAD_FILLER = re.compile(
    r"^(?:[，,：:、\s]|对了|另外|还有|然后(?:就是)?|就是(?=[\s，,]|以后|每)|所以|(?:小|AI)?助手(?=[\s，,:：])|那么?(?![种个些条次样份])|嗯+|好的?|好吧|行|算了|哦|噢|ok(?:ay)?\b|also\b|and\b|so\b|btw\b|"
    r"quick one\b|oh\b|by the way\b|please\b|pls\b|plz\b|你们?|咱们|我们|大家|请你?|麻烦你?|都|就|也|要(?!是)|"
    r"一律|统一)+",
    _I,
)
CONTINUE = re.compile(
    r"^(?:比如|例如|譬如|别|不要|不用|不必|直接|只|必须|需|一律|都|先|再|按|用|改|放|把|写|附|加|列|发|给|要么|或者|并且|同时|且|另外附|还是|"
    r"括号里|注明|标明|写明|标注|"
    r"能不能|可不可以|能否|"
    r"don'?t|do not|just|only|always|never|please|and|also|put|use|send|list|keep|include|add|group|sort)",
    _I,
)
#: a fragment giving a reason, a complaint or someone else's situation: never part of the line
REASON = re.compile(
    r"^(?:我|你这样|你这么|这样|这么|他|她|他们|她们|家属|有几个|有些|因为|由于|不然|否则|省得|免得|看着|根本|反正|问|上周|上次|昨天|之前|刚才|"
    r"since\b|because\b|as\b|i\b|i'm\b|we\b|they\b|last\b|yesterday\b)|费劲|麻烦|来不及|太.{0,3}了?$|真服|烦死|累死",
    _I,
)
ALSO = re.compile(r"也|都|还|同样|\balso\b|\btoo\b", _I)
ENDS_IMPERATIVE = re.compile(r"(?:就行|就好|就可以|即可|就够了)[吧啊哈了呀～~]*$")
ZH_TAIL = re.compile(
    r"[，,、\s]*(?:谢谢你?|谢谢了|谢啦|多谢|感谢|好吗|好不好|可以吗|行吗|哈|啊|呀|哦|呢|吧|啦|了|哈)+\s*$"
)
EN_TAIL = re.compile(r"[,\s]*(?:please|pls|thanks|thank you|thx|lol|ok\?|okay\?)+\s*$", _I)
ZH_NEG_LEAD = re.compile(r"^(?:别再|别|不要再|千万别|千万不要)")

# ------------------------------------------------------------------ Active Context and lessons
# (:mod:`agent_memory.hot_memory.context_statements`: what the team works on, worries about, has
# closed, the state a site or a system is in, a lesson told with its rule)

#: a time span ahead ("接下来一个月", "这两周", "for the next six weeks")
_SPAN_ZH = (r"(?:接下来|下一步|下阶段|下个阶段|这个?月|本月|这两?周|本周|这个季度|本季度|这段时间|近期|未来|最近)"
            r"(?:[一二三四五六七八九十两几\d]+个?(?:天|周|星期|月|季度))?")
_TEAM_ZH = r"(?:大家|全组|全员|全体|我们|咱们|团队|项目组)"
#: a new focus said without 重点 ("接下来一个月全力盯…", "这个月的首要任务是…", "focus 接下来是…", "For the next six
#: weeks the whole team is heads-down on …", "Our top priority for the next two weeks is …")
FOCUS_SAID = re.compile(
    _SPAN_ZH + r"的?" + _TEAM_ZH + r"?的?(?:(?:全力|集中精力|全部精力|主要精力)(?:都)?(?:放在|放到|在)?|"
    r"(?:主要|首要|核心|头等|第一)(?:任务|工作|目标|大事|的事)(?:就|都)?是)|"
    r"(?<![A-Za-z])(?:(?:current|next|main|top)\s*)?(?:focus|priority)\s*(?:接下来|现在|目前|这两?周|这个?月|now)?\s*(?:是|为|[:：])|"
    r"(?:^|\b(?:our|the team'?s|the)\s+)(?:top|main|first|number one|biggest|overriding)\s+(?:priority|job|task|goal)"
    r"\b[^,.;]{0,40}?\s+(?:is|will be)\s+|"
    r"\b(?:for|over|during) the (?:next|coming) [\w -]{2,24}?,?\s+(?:the whole team|the team|everyone|we|all of us)"
    r"(?:'re| are| is| will be)?\s+(?:all[- ]in|heads[- ]down|focused|focusing|concentrating|all hands)\s+on\s+|"
    r"\b(?:the whole team|the team|everyone|we)(?:'re| are| is)\s+(?:all[- ]in|heads[- ]down)\s+on\s+", _I)
#: a label opening a risk ("风险：", "隐患：", "risk:", "New worry:", "new concern:")
RISK_LABEL = re.compile(
    r"^\W*(?:新的?|又一个)?(?:风险点?|隐患)\s*[:：]\s*|"
    r"^\W*(?:(?:a |one )?(?:new|another|fresh)\s+)?(?:risks?|worry|concern|headache)\s*[:：]\s*", _I)
#: asking the team to keep watching what was just said ("这个要盯着", "这个先记着", "Keep that on the radar")
WATCH = re.compile(
    r"(?:这个|这事|这件事|这点|这块|这)?(?:大家)?(?:先|要|得|需要|还得|必须|都)?(?:多)?"
    r"(?:记着|盯着|盯紧|盯一下|留意一下|留意着?|关注一下|关注着|注意一下)|"
    r"\bkeep (?:that|this|it) on (?:the|our|your) radar\b|\bkeep an eye on (?:it|that|this)\b|"
    r"\bworth (?:keeping an eye on|watching|watching out for)\b|\bsomething to watch\b", _I)
#: what makes a watched note a risk: a worry, a delay, an uncertainty ("担心…", "可能会拖", "could slip")
WORRY = re.compile(
    r"担心|怕|可能|会不会|恐怕|延误|拖|赶不上|来不及|不确定|没把握|风险|隐患|掉线|打不通|超温|失访|"
    r"\b(?:worr\w*|concern\w*|could|might|risk\w*|slip\w*|delay\w*|late|behind|unsure|uncertain)\b", _I)
#: a risk closed ("之前担心的…不存在了", "启动延期这个风险可以撤了", "so that risk is closed", "no longer a concern")
RISK_CLOSED = re.compile(
    r"(?:风险|隐患)(?:已经|已|也|基本)?(?:解除|消除|排除|不存在|没了|可以撤|撤了|可以关)|"
    r"(?:担心|顾虑)的[^，。；]{0,20}?(?:已经|也)?(?:不存在|不会有|没有了|解除|不用担心|可以放心)|"
    r"\b(?:risk|worry|concern)s? (?:is|are|has been|can be) (?:now )?"
    r"(?:closed|gone|resolved|cleared|over|off the table)\b|"
    r"\bno longer a (?:risk|concern|worry)\b|\bstop worrying about\b|\bclose (?:that|the|this) risk\b", _I)
#: a temporary state of a site, a system or a supply ("site 03 is paused for new enrolment", "EDC暂停录入")
STATE_NOW = re.compile(
    r"暂停|停用|冻结|维护中|在升级|在迁移|停止入组|关闭|暂时(?:不能|无法|没法|停)|(?:入组|筛选|发药)(?:先|暂时|暂)?停|(?:主任|PI|负责人|联系人|CRC)换(?:了|成)|"
    # an arrangement of the sites already changed ("随访都挪到周六上午做了")
    r"(?:挪到|改到|改在|调到|移到|改成)[^，,。；;]{1,14}?(?:做|进行|开展|办)?了|"
    # a site moved ("S09皮肤科整体搬到东院区了")
    r"(?:整体|整个|全部)?(?:搬到|搬去|迁到|迁至|迁往|搬迁到)|"
    r"\b(?:paused|on hold|suspended|frozen|closed (?:to|for)|offline|unavailable|down for)\b", _I)
#: what a state note is about: a site, a system, a supply, enrolment
STATE_SUBJECT = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]\d{2}(?![\d-])|中心|医院|药房|系统|EDC|IWRS|IRT|数据库|随机|入组|发药|供药|冷链|实验室|伦理|社区|随访|访视|门诊|筛选|"
    r"\b(?:site|sites|edc|database|system|portal|pharmacy|enrol+ment|recruitment|shipments?|supply|lab|irb|"
    r"randomi[sz]ation)\b", _I)
#: a heads-up label before a note ("Heads up:", "FYI", "提醒大家：", "通知一下：")
HEADS_UP = re.compile(r"^\W*(?:heads[- ]up|fyi|psa|update|提醒(?:一下)?大家|(?:跟|和|给)?(?:大家)?(?:通知|同步)一?下|"
                      r"(?:跟|和|给)大家说一声|"
                      r"告诉大家)"
                      r"(?![a-z])\s*[:：,，]?\s*", _I)
#: a past story, no current state ("上次…暂停入组", "去年…", "The EDC was down …")
PAST_STORY = re.compile(r"上次|上回|去年|那时|当时|后来|曾经|过了|停过|暂停过|\b(?:was|were|had been|had|used to|"
                        r"last (?:year|time|month|week)|back then)\b", _I)
#: someone else's words or worry ("申办方说他们担心…", "The PM mentioned she's worried …")
SAID_BY_OTHER = re.compile(r"(?<!明)说(?!明)|讲|提到|表示|听说|反映|\b(?:said|says|told|mentioned|heard)\b|"
                           r"(?<!其)他们?|她们?|\b(?:she|he|they)(?:'s|'re| is| are| was)?\b", _I)
#: a lesson opening its message ("Lesson learned:", "教训：", "踩过的坑：", "吃一堑长一智：")
LESSON_OPENING = re.compile(
    r"^\W*(?:经验教训|教训|踩过的坑|踩坑|吃一堑长一智|lessons? learned|lesson)\s*[:：]\s*|"
    r"^\W*(?:we|i) learned (?:this )?the hard way(?: that)?\s*", _I)
#: a rule in a lesson ("必须先…", "一律…", "any new lab import gets …", "… goes through …")
LESSON_RULE = re.compile(r"必须|一律|务必|都要|都得|一定要|先[^，。]{1,16}再|"
                         r"\b(?:any|every|each|all)\b[^.;]{0,60}\b(?:gets?|goes|go|must|has to|have to|needs?)\b|"
                         r"\b(?:must|always|never)\b", _I)

# ------------------------------------------------------------------ the statement finder's clauses
#: a wish or an order in a clause ("…吧", "放/改/用/按…", "make / switch / send …")
WISH = re.compile(r"吧|还是(?:放|发|用|按|定|给)|改|换|放|用|按|挪|调|发|提前[^，,。]{0,8}提醒|希望|倾向于|更喜欢|"
                  r"\b(?:make|switch|send|use|move|keep|put|sort|group|order)\b|"
                  r"\b(?:come|arrive|go out|be sent)\b[^.?!]{0,40}\binstead\b|\bi'?d rather\b|\bi would rather\b|"
                  r"^[\w -]{0,30}?\b(?:listings?|reports?|lists?|reminders?|summar(?:y|ies)|datasets?|tables?|"
                  r"exports?|snapshots?) (?:as|in)\b|"
                  r"\bi'?d (?:like|prefer)\b|\bi (?:want|prefer)\b|"
                  r"\b(?:can|should) go\b", re.IGNORECASE)

#: a question whether something still holds ("这个没变吧", "还是这样对吧", "still the same, right?")
CONFIRMING = re.compile(r"(?:没变|不变|对|是|没错|照旧|一样|这样)吧\W*$|\bright\W*$|\bstill the same\b", re.IGNORECASE)

#: a conditional rule for an output: a condition, then 就 and an instruction ("如果同一个受试者一周里被开了三条以上
#: query，就把他单独拎出来放清单最前面", "whenever …, put …")
CONDITIONAL_RULE = re.compile(r"(?:^|[，,：:]\s*)(?:如果|要是|只要|一旦|凡是|每当|假如)(?:[^，,。]{2,40}[，,]\s*){1,2}"
                              # "…，就把…", "…，当天就发我", "…，周五那张表里把它那一行标红" (no 就 nor 我)
                              r"(?:(?:当天|马上|立刻|第一时间|及时)?就\s*(?:马上|立刻|第一时间)?|[^，,。我]{0,10}?(?=把))"
                              r"(?:把|放|标|列|单独|发|写|加|提醒|告诉|通知|@|在群里|打电话|跟我说)|"
                              r"^\W*whenever\b[^.]{2,60},\s*(?:put|list|flag|mark|send|add|move)\b", re.IGNORECASE)

#: the speaker is to be told ("@我一下", "告诉我", "通知我"): what the rule's instruction sends
TELL_ME = re.compile(r"[告通]诉我|通知我|@我|发我|提醒我|跟我说|找我|\b(?:tell|ping|notify|message|alert) me\b",
                     re.IGNORECASE)

#: an English instruction to keep an output a certain way ("For the CRCs, keep the visit reminders in Chinese only")
KEEP_EN = re.compile(r"^\W*(?:for [\w -]{2,30},\s*)?(?:please\s+|pls\s+)?(?:keep|make sure|stick to)\b", re.IGNORECASE)

#: a sentence opening with the document it is about ("query清单的排法我想换一下", "周报别走微信了")
OPENS_WITH_DOCUMENT = re.compile(r"^([\u4e00-\u9fffA-Za-z0-9-]{0,10}?(?:清单|名单|周报|月报|日报|报表|表|报告|"
                                 r"汇总|提醒|列表|纪要|记录|日程|文件|导出|模板|快照|listings?|reports?|snapshots?))"
                                 r"(?:的(?:排法|排序|顺序|格式|发法|时间|频率|内容|写法|事)|这块|这个事|的话)?"
                                 r"(?=我|你|别|不要|不用|还是|改|换|以后|能|可以|得|要|的|这|太|才|老|总|又|还|也|都|一|每|现在|目前|，|,|:|\s)",
                                 re.IGNORECASE)

#: an English sentence opening with the document it is about ("And the listings: …")
OPENS_WITH_DOCUMENT_EN = re.compile(r"^(?:(?:and|so|also|about)\s+)?((?:the|our|my)\s+[\w -]{0,24}?"
                                    r"(?:listings?|reports?|reminders?|lists?|summar(?:y|ies)|snapshots?|tables?|"
                                    r"exports?))\b", re.IGNORECASE)

#: an English noun phrase naming an output ("those PDF screening logs", "the weekly AE listing")
EN_OUTPUT = re.compile(r"(?:\b(?!(?:me|you|us|them|it|please|stop|send\w*|e-?mail\w*|get\w*|giv\w*)\b)[\w-]+\s+){0,3}?"
                       r"\b(?:listings?|reports?|logs?|lists?|summar(?:y|ies)|tables?|"
                       r"exports?|files?|datasets?|digests?|reminders?|snapshots?)\b", re.IGNORECASE)
#: a reminder on an occasion ("每次访视前都提醒我…"): a standing preference the reminder skill cannot schedule
ON_AN_OCCASION = re.compile(r"每次|每逢|每回|每当|碰到|遇到|遇上|赶上|凡是|一旦|的时候|之前|前一天|"
                            r"\b(?:before|when|after) (?:each|every)\b", re.IGNORECASE)
#: asks to be reminded of something ("每月31号提醒我做数据备份", "remind me to …"); not "提醒我的时候…"
ASKS_REMINDER = re.compile(r"提醒我(?!的|们)[\u4e00-\u9fffA-Za-z0-9]|\bremind me (?:to|at|every|on|in)\b",
                           re.IGNORECASE)
#: "教训是…" leading the rule: the label, not the rule
LESSON_IS = re.compile(r"^(?:教训|经验)(?:就)?是[:：]?\s*")
#: a statement saying what not to do any more ("别再…了", "不要…", "stop …", "no more …")
NO_MORE = re.compile(r"别|不要|不用|不再|\bstop\b|\bno more\b|\bdon'?t\b|\bnever\b", re.IGNORECASE)


#: "太…了": how it is now, a complaint
TOO = re.compile(r"太\S{1,4}了")

#: a clause that opens without a subject ("还是给我Word", "改到周五")
NO_SUBJECT = re.compile(r"^(?:还是|改|用|就|直接|换|先按|按|发我|发给|给我|都|只|提前|每例|每条|每位|每个受试者|"
                        r"能不能改|"
                        r"(?:sort|group|order|send|put|list|split|keep) (?:them|it)\b)", re.IGNORECASE)

#: how it is now ("现在是全部人混在一起按due date排的"): a description before the change, no value to keep
NOW_IS = re.compile(r"^(?:现在|目前|眼下)(?:都|还|一直)?是.*的\W*$")

#: a statement that only keeps things as they are ("Keep the lists exactly as they were.", "保持原样就行")
AS_BEFORE = re.compile(r"^\W*(?:please )?(?:keep|leave) (?:\w+ ){0,3}(?:exactly |just )?"
                       r"as (?:they|it) (?:were|was|are|is)\W*$|"
                       r"^\W*(?:还是|就)?(?:保持原样|照旧|跟原来一样|和以前一样)(?:就行|就好|吧)?\W*$", re.IGNORECASE)
#: a pleasantry left as the body of a cue ("Starting next week would be great.", "以后就好")
PLEASANTRY = re.compile(r"^\W*(?:that |it )?(?:would be|is) (?:great|nice|good|perfect|lovely)\W*$|"
                        r"^\W*(?:thanks?|thank you|谢谢|辛苦了?|麻烦了)\W*$", re.IGNORECASE)
#: someone doing it now ("周六还在改PPT", "正在改表"): a description, no value to keep
DOING_NOW = re.compile(r"还在|正在|在(?=改|做|弄|写|赶)")

#: what a thing is needed for ("周五跟主任们汇报要用"): the use of a one-off, not a value to keep
PURPOSE = re.compile(r"(?:要|得|需要|准备|打算)用[了的吧呢]?\W*$")

#: a short noun phrase naming a document before the cue's clause ("日记卡缺失清单，以后按…排"): Han
#: characters and codes ending in a document noun, no verb or particle of a clause
NOUN_TOPIC = re.compile(r"(?=[\u4e00-\u9fffA-Za-z0-9]{3,14}$)(?!.*[了吗呢吧啊呀哦是有在要说做看发想觉得会能把被让给])"
                        r"[\u4e00-\u9fffA-Za-z0-9]*(?:清单|名单|表|报|报告|汇总|提醒|列表|记录|日程|文件|导出|日志|模板)")

#: a clause stating an exception ("周报还是周一发，但是节假日后的第一周改成周二发", "…, except in …")
EXCEPT = re.compile(r"但是?|不过|除了|除非|唯独|\b(?:but|except|unless)\b", re.IGNORECASE)

#: a recurring morning ("每天早上给我一份…") is no back-reference to this morning
EVERY_MORNING = re.compile(r"每(?:天|日|个?工作日|周[一二三四五六日天]?)(?:早上|上午)")

#: what makes a habitual 都 a task now: a 把 / 帮我 request, a "do it once" ending, what is at hand
TASK_NOW = re.compile(r"把|帮我|帮忙|麻烦|请你|一下|出来|这周|本周|这个月|本月|"
                      r"上周(?![一二三四五六日天末])|这批|这些|这几|那几|这[份个张]")
