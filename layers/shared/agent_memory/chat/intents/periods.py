"""Cue families for the project's past: time anchors, event questions, lessons, decision provenance,
change over time and reports built from past reports (Chinese, English, code-switched).

A time anchor alone never makes a question historical (a subject's own past is subject data, see
:class:`~agent_memory.chat.intents.rules.RuleIntentClassifier`); an anchor combined with a question
about what happened, was decided, went wrong or was learned does. Patterns are written for NFKC +
casefolded text and describe kinds of wording, never sample sentences.
"""

from __future__ import annotations

import re

from agent_memory.history.anchors import names_period

_NUM = r"(?:\d+|[一二两三四五六七八九十半几]+)"
_EN_NUM = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|few|several|couple of)"
_EN_SPAN = r"(?:days?|weeks?|months?|quarters?|years?)"
_HOLIDAY_ZH = r"(?:春节|过年|年前|年后|国庆|中秋|元旦|五一|劳动节|端午|清明|十一长假|寒假|暑假|节前|节后|假期|长假)"
_HOLIDAY_EN = (
    r"(?:christmas|xmas|thanksgiving|easter|new year'?s?|the holidays?|holiday season|lunar new year|summer break"
    r"|(?:summer|winter) holidays?)"
)
_SEASON_EN = r"(?:spring|summer|autumn|fall|winter)"

#: A reference to a past week, period, holiday or project phase (never a subject's visit).
ANCHOR = (
    # ISO / ordinal weeks and week ranges: 第12周, W23, w 5, week 30, wk14
    r"第\s*" + _NUM + r"\s*(?:周|个?星期)"
    r"|(?<![a-z0-9])w(?:k|eek)?\s?\d{1,2}(?![\d.])"
    r"|\bweeks? \d{1,2}\b"
    # N units ago: 两个月前, 一年前, 半年以前, a year ago, 3 weeks ago
    r"|" + _NUM + r"\s*(?:个)?(?:月|周|星期|年|季度)(?:前|以前|之前)"
    r"|\b" + _EN_NUM + r" " + _EN_SPAN + r" ago\b"
    # quarters, halves, seasons, ends and starts of past years
    r"|上个?季度|上一?季|上半年|去年(?:年底|年初|年末|底|初|这个?时[候后]|此时|这会儿?|同期)?|前年|年底|年初"
    r"|\b(?:last|previous|prior|past) (?:quarter|year|summer|spring|autumn|fall|winter|month|half[- ]year)\b"
    r"|\bsince (?:the )?(?:project|study|trial) (?:started|began|start(?:ed)? up|kicked off)\b"
    r"|\bsince the (?:start|beginning) of the (?:project|study|trial)\b"
    r"|\bq[1-4]\b|\bthis time last year\b|\b(?:in|over|during) (?:the )?" + _SEASON_EN + r"\b|\bearlier this year\b"
    # spans reaching back: 最近半年, 前两个月, 过去三个月, 近几周, over the past 6 months
    r"|(?:最近|近|过去|前|这)\s*" + _NUM + r"\s*(?:个)?(?:月|周|星期|年|季度)"
    r"|\b(?:past|last|previous) " + _EN_NUM + r" " + _EN_SPAN + r"\b"
    # holidays: 春节前后, 国庆那几周, around christmas
    r"|" + _HOLIDAY_ZH + r"|\b(?:around|over|during|before|after|since) " + _HOLIDAY_EN + r"|" + _HOLIDAY_EN + r""
    # project phases: 刚启动那会儿, 启动以来, kick-off, since the start
    r"|(?:刚|才)(?:开|启动|开始|立项|上线|起步|成立)|启动(?:那会|那阵|的时候|时|之初|以来|至今|到现在)|立项(?:以来|之初|时)"
    r"|项目(?:开始|初期|早期|前期)|开项目|kick-?off|\bsince (?:the )?(?:start|beginning|launch|outset|first)\b"
    r"|\bat the (?:start|beginning)\b|\bsince (?:week|w) ?1\b"
    r"|\bsince (?:the |our |we )?(?:study|trial|project|site|we)? ?(?:started|began|launched|kicked off|opened)\b"
    # an earlier event named by 那次/那回 or "the last time"
    r"|那(?:几|两)?(?:周|个月|段时间|阵子?|会儿?)|(?:[一二三四五六七八九十]{1,3}|\d{1,2})月份?(?=那|期间|前后|中旬|上旬|下旬)"
    r"|那一?[次回]|上一?回|\bthe last time\b|\bback (?:in|then)\b"
    r"|\b(?:the|our) (?:last|previous|first) (?:audit|inspection|meeting|monitoring visit|submission|database lock|"
    r"amendment|siv|close-?out|interim analysis)\b"
)

#: A project milestone with a modifier ("SIV之后", "首例入组以来", "DMC会议前后", "since FPI", "around the
#: DMC meeting"): a time anchor whose date the project's hot memory gives (the resolver reads it).
MILESTONE = (
    r"[\u4e00-\u9fffa-z0-9.]{2,}(?:以来|之后|前后|过后)"
    r"|\b(?:since|around|after|following|before|ahead of|during)\s+(?:the\s+|our\s+)?(?:[a-z0-9.-]+\s+){0,2}"
    r"(?:meeting|visit|approval|amendment|lock|audit|inspection|siv|fpi|fpfv|lpi|lplv|interim analysis|dmc|dsmb|"
    r"launch|kick-?off|submission|go-?live|migration|training|site initiation|first patient in)\b"
)

#: A question about what happened, was decided, went wrong or was learned.
EVENT_Q = (
    r"(?:发生|出|冒出来?|遇到|碰到|出现|发现|暴露|提)(?:了|过)?(?:些|点)?(?:什么|啥|哪些|什么样的)"
    r"|(?:什么|啥|哪些|哪几(?:个|条|项)?)[^,;。?!]{0,8}?(?:事|情况|状况|问题|决定|决策|变化|调整|改动|"
    r"困难|麻烦|风险|意见|进展|动静|结论|措施|变动|修订|偏离|违背|差错|失误|错误|事故|投诉|延误|脱落|超窗|"
    r"不良事件|质疑|query)"
    r"|(?:问题|困难|偏离|差错|错误|风险)[^,;。?!]{0,8}?都?(?:是|有)(?:什么|啥|哪些)"
    r"|(?:决定|决策|变化|调整|问题|状况|事)(?:没|吗|没有)"
    r"|(?:定|决定|拍板|商定|讨论|改|调整|处理|解决|修改|变更|更换)(?:了|过)?(?:些|点)?(?:什么|啥|哪些)"
    r"|在(?:忙|做|干|搞)(?:什么|啥|些啥|嘛)|干了?(?:什么|啥|嘛)|卡在|卡住"
    r"|(?:做|搞|有)(?:过|了)(?:哪些|什么|啥)"
    r"|(?:改|调整|修订|修改|换|暂停|延期)(?:过|了)[^,;。?!]{0,3}?(?:几|多少)次"
    r"|(?:怎么|如何)(?:处理|解决|应对|决定|定|来)的"
    r"|(?:是)?(?:怎么|如何)[^,;。?!]{0,8}?的\s*(?:[?？]|$)"
    r"|(?:问题|困难|麻烦|风险|教训|结论|决定|阻碍|难点)(?:是|有)(?:什么|啥|哪些)"
    r"|\bwhat (?:happened|went (?:on|wrong)|changed|was (?:decided|agreed|blocking)|were we (?:doing|working on))"
    r"|\b(?:what|which|any)\b(?: \w+){0,3}? (?:problems?|issues?|blockers?|decisions?|changes?|risks?|lessons?|"
    r"setbacks?|challenges?|difficulties|deviations?|violations?|incidents?|errors?|delays?|complaints?|"
    r"dropouts?|findings)\b"
    r"|\b(?:problems?|issues?|difficulties|challenges) (?:we|the team|the site|they) (?:had|faced|ran into|hit)\b"
    # how a past project EVENT went (how a metric went over a period is a trend)
    r"|\bhow did (?:the |our |that |this )?(?:\w+ )?(?:audit|inspection|meeting|monitoring visit|submission|"
    r"database lock|siv|close-?out|pilot|launch|migration|training|rollout)s?\b[^.;?!]{0,20}?\bgo\b"
    r"|\bmain (?:blocker|problem|issue)\b|\bblocking us\b|\bwent wrong\b|\bcame up\b|\bran into\b|\brun into\b"
    r"|\bwhat did (?:we|the team|the committee|the sponsor) (?:\w+ )?(?:decide|agree|change|do|learn|conclude|find)"
    r"|\bwhat did (?:the |our )?[\w-]+ (?:decide|agree|recommend|conclude|say|find|change|approve|request|suggest)"
    r"|\bwhat (?:was|were) (?:we|the team|the site|everyone|people) (?:\w+ )?(?:focused on|working on|doing|busy with)"
)

#: Lessons and pitfalls of the project (past experience by nature).
LESSON = (
    r"踩(?:过|了)?的?(?:什么|啥|哪些|些)?坑|坑是|教训|经验教训|吸取|弯路|走偏|犯(?:过|了)?(?:哪些|什么|啥)?错"
    r"|\blessons?(?: learned| learnt)?\b"
    r"|\bwhat did we learn\b|\bpitfalls?\b|\btakeaways?\b|\blearnings\b"
)

#: A lesson handed to the assistant to keep ("这个坑记住：…", "note this lesson"): distillation
#: material, not a question about the past.
LESSON_TOLD = r"记住|记一下|记下|记着|备注|\bnote (?:this|that|down)\b|\bremember (?:this|that)\b|\bkeep in mind\b"

#: Who decided, when something was decided, how a decision came about.
PROVENANCE = (
    r"(?:谁|哪位|什么时候|何时|哪一?(?:周|天|个月|次会)|几月份?|哪个月)[^,;。?!]{0,4}?"
    r"(?:定|决定|拍板|批准|同意|签|提出|发起|改)"
    r"|(?:决定|定下来|拍板|改)(?:的|了)?[^,;。?!]{0,2}(?:是谁|是哪|什么时候)"
    r"|怎么来的|怎么决定的|怎么定下来的"
    r"|\b(?:who|when did (?:we|the team|they)) (?:\w+ )?(?:decided?|signed off|approved|agreed|chose|made the call)"
    r"|\bwho (?:signed off|approved|made the call|decided)\b"
    r"|\bwhen (?:was|were) (?:the |that |this )?(?:decision|call|choice)s? (?:made|taken)\b"
    r"|\bwho made the (?:decision|call)\b"
    r"|\b(?:what|which) (?:decisions|changes) (?:have|had|did) (?:we|the team)\b"
    r"|\b(?:reasoning|rationale|thinking|reasons?) (?:behind|for)\b"
    r"|\bwas there (?:ever |a |any )*(?:discussion|decision|debate|meeting)\b"
    r"|\b(?:did|has|have) (?:anyone|anybody|we|the team|the sponsor) (?:ever )?"
    r"(?:propose|suggest|raise|bring up|push for)"
    r"|\bhow did (?:we|the team) (?:end up|come to|arrive)"
)

#: Change-over-time wording: a direction of change asked about, a comparison with an earlier
#: state, before/after an event.
CHANGE_ZH = (
    r"(?:上升|下降|提升|提高|降低|加快|放缓|变快|变慢|变好|变差|改善|好转|恶化|增加|减少|增多|变多|变少|升高|回升|"
    r"恢复|回落|下滑|增长|减缓|少了|多了|高了|低了|快了|慢了|越来越[^,;。?!\s]|起色|改观|提速|加速|减速)"
)
CHANGE_Q = (
    r"是不是(?:在|有|还在)?(?:变得?)?" + CHANGE_ZH
    + r"|在(?:变|上升|下降|增加|减少|增长|下滑|回落|\s*(?:increase|decrease|rise|drop|decline|grow))"
    + r"|" + CHANGE_ZH + r"(?:了)?(?:没有?|吗|没|了吗|了没)"
    + r"|有没有(?:明显)?(?:的)?" + CHANGE_ZH
    + r"|(?:还是|或是)(?:变)?(?:快|慢|多|少|高|低|好|差)"
    + r"|规律|波动|(?:逐|按|每个?)(?:月|周|季度)的?[^,;。?!]{0,6}?(?:数(?!据)|数量|人数|例数|情况)"
    + r"|(?:变)?(?:好|差)(?:点|些|一些)(?:了)?(?:没|吗)|(?:变)?(?:好|差)了(?:没|吗)|趋势|趋式|走势|曲线"
)
CHANGE_EN = (
    r"\b(?:getting|gotten|got|been getting) (?:worse|better|faster|slower)\b"
    r"|\b(?:gone|going|went|trending|creeping|moving) (?:up|down)\b"
    r"|\b(?:is|are|been|be|keeps?|still)\b[^.;?!]{0,30}?\b(?:increas|decreas|declin|improv|worsen|dropp|ris|fall|shrink|grow)ing\b"
    r"|\b(?:increas|decreas|declin|improv|worsen|dropp|ris|fall|shrink|grow)ing (?:since|over|lately|recently|again)\b"
    r"|\b(?:has|have|did)\b[^.;?!]{0,50}?"
    r"\b(?:increased|decreased|declined|improved|worsened|risen|fallen|dropped|changed|shifted)\b"
    r"[^.;?!]{0,30}?\bsince\b"
    r"|\b(?:faster|slower|better|worse|higher|lower|more|fewer|less) than (?:we were |it was |they were )?"
    r"(?:before|earlier|last|previous|a year ago|at the start|back then|in )"
    r"|\bstack(?:s)? up against\b|\bcompare[sd]? (?:with|to|against|w/)\b|\bcompared (?:with|to|w/)\b"
    r"|\bhow (?:has|have|did) [^.;?!]{0,40}?\b(?:evolv|develop|shift|progress|mov)"
    r"|\b(?:month|week|quarter)[- ]by[- ](?:month|week|quarter)\b"
    r"|\b(?:monthly|weekly|quarterly) (?:breakdown|numbers|counts|figures|totals)\b"
)
#: Before/after an event or a period boundary ("换了X以后", "X前后", "since we added").
BEFORE_AFTER = (
    r"(?:以后|之后|后|前后|以来)[^;。?!]{0,12}?" + CHANGE_ZH
    + r"|前后[^;。?!]{0,8}?(?:对比|比较|比)"
)

#: A report assembled from several past weekly reports (a report AND a review of a period).
FROM_REPORTS = (
    r"(?:(?:几|各|所有|多|这些|过去|最近|上个?月|这个季度|本季度|上个?季度)[^,;。?!]{0,8}?(?:份|篇|期)?的?(?:周报)"
    r"[^,;。?!]{0,8}?(?:汇总|整理|合并|合成|归纳|总结|summari[sz]e|compile)"
    r"|(?:汇总|整理|合并|合成|归纳|总结)[^,;。?!]{0,12}?(?:几|各|所有|多|过去|最近)[^,;。?!]{0,6}?周报)"
    r"|\b(?:summari[sz]e|compile|consolidate|roll up|combine|digest|recap)\b[^.;?!]{0,30}?"
    r"\b(?:last|past|previous|recent|all|these|the)\b[^.;?!]{0,20}?\bweekly reports?\b"
    r"|\b(?:past|last|previous) " + _EN_NUM + r" weeks?\b[^.;?!]{0,20}?weekly reports?[^.;?!]{0,20}?summari"
)

#: Weekly reports summarised (with a past anchor: a report built from past reports).
REPORT_SUMMARY = (
    r"(?:周报|weekly reports?)[^,;。?!]{0,8}?(?:汇总|整理|合并|合成|归纳|总结|summari[sz]e|compile|consolidate)"
)

#: Retrieving or dumping stored weekly reports (the history book itself).
REPORT_RETRIEVAL = (
    r"(?:周报|weekly reports?|\breports?\b)[^,;。?!]{0,16}?"
    r"(?:调出来|翻出来|找出来|拿出来|贴出来|列出来|导出|发我|发给我|给我看|看看|看下|原封不动|全文|"
    r"原文|原样|全部|都发|\bdump\b|提到|写了|写的|说了|记录了|里面?)"
    r"|\b(?:pull up|show me|open|dump|print|send me|give me)\b[^.;?!]{0,20}?\breports?\b"
)
#: All or past weekly reports as such ("所有周报", "历史周报", "every weekly report").
PAST_REPORTS = (
    r"(?:所有|全部|历史|历次|以前的|过去的|之前的|往期)[^,;。?!]{0,4}?(?:周报|weekly reports?)"
    r"|\b(?:all|every|each|past|old|previous|archived) (?:the |of the )?(?:\w+ )?weekly reports?\b"
)
#: A standing preference about the future ("周报以后改成周一发", "from now on"): never a request
#: for a report or a look-up now.
PREFERENCE = (
    r"(?:以后|今后|往后|从今天起|从现在起|从下周起)[^,;。?!]{0,8}?"
    r"(?:改成|改为|都|就|要|请|别|不要|只|统一|加上|去掉|换成|用|提醒)"
    r"|\bfrom now on\b|\bgoing forward\b|\bin (?:the )?future\b"
)
#: Explicit change-over-time wording: with it a question about a period is a trend, without it a
#: question about what happened in a period ("what were the biggest problems over the past quarter")
#: is history.
TREND_EXPLICIT = (
    r"趋势|趋式|走势|变化|对比|比较|相比|同比|环比|越来越|增|降|升|快|慢|多|少|曲线|回顾|复盘|总结|汇总|梳理|盘点"
    r"|\btrend|\bcompar|\bvs\b|\bversus\b|\bover time\b|\bspeed|\bslow|\bfast|\bup\b|\bdown\b|\bincreas"
    r"|\bdecreas|\bchang|\bgrow|\bdeclin|\bimprov|\bworse|\bbetter|\breview|\brecap|\bsummar|\boverview"
)
#: Decisions named as such; with a time anchor they are the project's past.
DECISION_NOUN = (r"决策|决议|决定|定下|拍板|被判定|判定为|被认定|\bdecisions?\b|\bdecided\b|\bagreed\b|"
                 r"\b(?:were|was) (?:judged|deemed|assessed as|adjudicated)\b")
#: Why / for what reason (with a time anchor: the reason of a past event).
REASON = r"为什么|为啥|为何|什么原因|啥原因|原因|理由|\bwhy\b|\breason"
#: Current-period marker: a report of this period is generated, not looked up.
CURRENT_PERIOD = r"本周|这周|这一周|本月|这个月|今天|今日|\bthis (?:week|month)\b|\btoday\b"
#: Review / recap wording (with a time anchor: a review of a past period).
#: A review of a period ("回顾", "春节前后入组进展如何", "how did recruitment go")
REVIEW = (r"回顾|复盘|(?:进展|进度|情况)(?:如何|怎么样|怎样)|\breview\b|\brecap\b|\blook back\b"
          r"|\bhow did (?:it|things|enrol\w*|recruitment) go\b")
#: Comparison markers (with a past reference: a comparison between periods).
COMPARE = (
    r"比较(?=一下|下|了|\s*(?:今年|去年|本|上|这|前|第|w|q|两|各|和|与))|比(?![较如])|对比|相比|相较"
    r"|\bvs\.?(?=\s)|\bversus\b|\bcompar|\bstack(?:s)? up\b|\bthan\b"
)
#: Past references that a comparison may be made against.
PAST_REF = r"以前|之前|原来|当初|那会|那阵|过去|上周|上个?月|去年|同期|节前|年初|\bbefore\b|\bearlier\b|\bago\b"
#: QC named as a noun, not asked for ("质控发现的问题", "QC findings", "数据质量好点没").
QC_NOMINAL = (
    r"(?:质控|核查|qc|sdv)[^,;。?!]{0,3}?(?:发现|查出|结果|问题|错误|findings|issues|errors|results)"
    r"|\b(?:qc|quality) (?:findings|issues|errors|results)\b|数据质量|\bdata quality\b"
    r"|(?:决定|定下|定了|规定|改成|改为|讨论|商量|商定|decid\w* (?:to|on|about)|decision (?:to|on|about)"
    r"|agree\w* (?:to|on|about)|discuss\w*|talk\w* about)[^,;。?!]{0,12}?(?:质控|核查|qc|sdv)"
    # QC as the topic of a plan or rule: its frequency, schedule, SOP, process ("QC frequency", "质控频率")
    r"|(?:质控|核查|qc|sdv)\s*(?:的)?\s*(?:频率|频次|周期|计划|流程|方案|规则|制度|标准|范围|节奏|安排"
    r"|frequency|schedule|cadence|plan|process|sop|rules?|scope|criteria|policy)"
)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


ANCHOR_RX = _rx(ANCHOR + "|" + MILESTONE)
PAST_REPORTS_RX = _rx(PAST_REPORTS)
DECISION_NOUN_RX = _rx(DECISION_NOUN)
REASON_RX = _rx(REASON)
CURRENT_PERIOD_RX = _rx(CURRENT_PERIOD)
REVIEW_RX = _rx(REVIEW)
COMPARE_RX = _rx(COMPARE)
PAST_REF_RX = _rx(PAST_REF)
QC_NOMINAL_RX = _rx(QC_NOMINAL)
PREFERENCE_RX = _rx(PREFERENCE)
TREND_EXPLICIT_RX = _rx(TREND_EXPLICIT)
EVENT_Q_RX = _rx(EVENT_Q)
CHANGE_RX = _rx(CHANGE_Q + "|" + CHANGE_EN)
BEFORE_AFTER_RX = _rx(BEFORE_AFTER)
REPORT_RETRIEVAL_RX = _rx(REPORT_RETRIEVAL)
LESSON_RX = _rx(LESSON)
REPORT_SUMMARY_RX = _rx(REPORT_SUMMARY)
LESSON_TOLD_RX = _rx(LESSON_TOLD)
PROVENANCE_RX = _rx(PROVENANCE)
FROM_REPORTS_RX = _rx(FROM_REPORTS)
#: A definition or how-it-works question about a term ("什么是同比", "what does YoY mean"):
#: general knowledge, not a request about the project's data or past.
DEFINITION_RX = _rx(
    r"什么是|什么叫|是什么意思|啥意思|含义|定义|解释一下|怎么算|如何计算"
    r"|(?:一般|通常|平时|往往)(?:是|都|会|在)?(?:每周|每月|每天|周几|哪|几|什么时候|多久)"
    r"|\bwhat (?:is|are|does) (?:a |an |the )?\w+(?: \w+)? mean\b|\bdefine\b|\bdefinition of\b"
    r"|\bhistory of (?!the (?:project|study|trial))|\b(?:in general|usually|typically)\b"
    r"|\bhow (?:do|to|can|should) (?:i |we |you )?(?:calculate|compute|measure|define|interpret)\b"
)


def period_flags(clause: str) -> set[str]:
    """Which period kinds a normalised clause carries (a subset of the names below; empty for
    none): ``anchor`` (a time anchor of :data:`ANCHOR` or :data:`MILESTONE`, or any period the
    resolver :func:`~agent_memory.history.anchors.names_period` reads), ``event``, ``change``,
    ``before_after``, ``report_retrieval``, ``lesson``,
    ``provenance``, ``from_reports``, ``definition``, ``past_reports``, ``decision``, ``reason``,
    ``current``, ``review``, ``compare``, ``past_ref``, ``qc_nominal``, ``preference``,
    ``trend_explicit``, ``lesson_told``, ``report_summary``."""
    flags = {
        name
        for name, rx in (
            ("anchor", ANCHOR_RX),
            ("event", EVENT_Q_RX),
            ("change", CHANGE_RX),
            ("before_after", BEFORE_AFTER_RX),
            ("report_retrieval", REPORT_RETRIEVAL_RX),
            ("lesson", LESSON_RX),
            ("report_summary", REPORT_SUMMARY_RX),
            ("lesson_told", LESSON_TOLD_RX),
            ("provenance", PROVENANCE_RX),
            ("from_reports", FROM_REPORTS_RX),
            ("definition", DEFINITION_RX),
            ("past_reports", PAST_REPORTS_RX),
            ("decision", DECISION_NOUN_RX),
            ("reason", REASON_RX),
            ("current", CURRENT_PERIOD_RX),
            ("review", REVIEW_RX),
            ("compare", COMPARE_RX),
            ("past_ref", PAST_REF_RX),
            ("qc_nominal", QC_NOMINAL_RX),
            ("preference", PREFERENCE_RX),
            ("trend_explicit", TREND_EXPLICIT_RX),
        )
        if rx.search(clause)
    }
    if "anchor" not in flags and names_period(clause):
        # the time-anchor resolver's own detection: every period kind it reads, by wording
        flags.add("anchor")
    return flags


__all__ = ["period_flags"]
