"""Active Context and Lessons Learned said in everyday wording: a new focus said without the word
重点, a risk flagged to watch or under a label, a risk resolved (it replaces the risk line it
resolves), a temporary state of a site or a system, and a lesson told with its rule. Look-alikes
(a question about a risk, a worry about a one-off, someone else's worry, a past story, a plan
for one task, a one-off heads-up) add nothing. Each message goes through the rule extractor and
the merge, as the nightly distillation runs them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_memory.domain.jobs import FlowLogEntry
from agent_memory.domain.models import HotMemory, HotMemoryLine
from agent_memory.hot_memory.merge import MergeResult, merge_candidates
from agent_memory.hot_memory.statements import extract_rule_candidates

SAID = datetime(2026, 5, 11, 2, 0, tzinfo=UTC)


def _distil(message: str, lines: list[HotMemoryLine] | None = None) -> MergeResult:
    said = FlowLogEntry(message_id="m-1", session_id="s", role="user", content=message, at=SAID, user_id="u-a",
                        study_role="PI")
    hot = HotMemory(project_id="p1", lines=list(lines or []))
    return merge_candidates(hot, extract_rule_candidates([said]), day_messages={"m-1": said}, day="2026-05-11",
                            now=datetime(2026, 5, 11, 18, 0, tzinfo=UTC), max_line_tokens=200)


def _active(line_id: str, text: str) -> HotMemoryLine:
    return HotMemoryLine(line_id=line_id, section="Active Context", text=text, source="distilled", role_tag=None,
                         created_at=datetime(2026, 4, 1, tzinfo=UTC), created_by="distiller", evidence=["m-old"],
                         stated_by="u-b")


def _new(result: MergeResult, before: list[HotMemoryLine] | None = None) -> list[HotMemoryLine]:
    old = {ln.line_id for ln in before or []}
    return [ln for ln in result.lines if ln.line_id not in old]


FOCUS = "Active Context", ("当前重点：", "Current focus: ")
RISK = "Active Context", ("风险：", "Risk: ")
CLOSED = "Active Context", ("风险解除：", "Risk closed: ")
STATE = "Active Context", ("",)
LESSON = "Lessons Learned", ("",)


@pytest.mark.parametrize(
    ("message", "where", "kept"),
    [
        # a new focus said without 重点
        ("接下来三周大家集中精力把V4访视的缺失数据补齐，别的事往后放", FOCUS, "V4访视的缺失数据补齐"),
        ("这个月的首要任务是把02中心的SDV做完", FOCUS, "02中心的SDV做完"),
        ("Over the next month we're all-in on closing the open queries before database lock.", FOCUS,
         "closing the open queries before database lock"),
        ("Our top priority for the next two weeks is the interim safety listings.", FOCUS,
         "the interim safety listings"),
        ("current priority：把 site 07 的 SDV backlog 清掉", FOCUS, "site 07 的 SDV backlog 清掉"),
        ("The team's main job until the end of March is getting every site's eCRF signed off.", FOCUS,
         "getting every site's eCRF signed off"),
        ("未来两周全组的头等大事是准备稽查", FOCUS, "准备稽查"),
        ("下一步的focus是 follow-up 的失访追踪", FOCUS, "follow-up 的失访追踪"),
        # a risk flagged to watch, or under a label
        ("最近02中心的随访电话老是打不通，担心失访会越来越多，这个大家留意一下", RISK, "担心失访会越来越多"),
        ("08中心的药房下个月要搬家，发药可能会中断几天，这个要盯紧", RISK, "发药可能会中断几天"),
        ("New concern: the central lab courier has missed two pickups at site 05 this month, so samples may "
         "arrive haemolysed.", RISK, "missed two pickups at site 05"),
        ("Site 09's only CRC goes on maternity leave in May and data entry there could slip. Worth keeping an "
         "eye on.", RISK, "data entry there could slip"),
        ("隐患：06中心的冰箱温度记录仪经常掉线", RISK, "06中心的冰箱温度记录仪经常掉线"),
        ("Risk: the sponsor may change the primary endpoint definition after the interim.", RISK,
         "primary endpoint definition"),
        ("new risk：site 03 的 IRB 续期材料还没交，可能会过期", RISK, "IRB 续期材料还没交"),
        ("最近几个中心的eCRF录入都在拖，担心月底锁库赶不上，这个得盯着", RISK, "担心月底锁库赶不上"),
        # a risk resolved
        ("02中心的冷链记录仪已经换好了，之前担心的温度记录缺失不会有了", CLOSED, "冷链记录仪已经换好了"),
        ("The site 05 courier problem is fixed and pickups are back on schedule, so that risk is gone.", CLOSED,
         "courier problem is fixed"),
        ("06中心的伦理批件拿到了，启动延期这个风险可以撤了", CLOSED, "伦理批件拿到了"),
        ("Good news: the backup CRC at site 09 is trained, so the data-entry risk is off the table.", CLOSED,
         "backup CRC at site 09 is trained"),
        # a temporary state of a site or a system
        ("提醒大家：04中心这两周在做系统迁移，EDC暂停录入", STATE, "EDC暂停录入"),
        ("Heads up: the EDC is frozen for the interim lock until 20 March, so no new entries.", STATE,
         "EDC is frozen for the interim lock"),
        ("FYI site 11 is closed to recruitment until their new PI is approved.", STATE,
         "site 11 is closed to recruitment"),
        ("07中心入组暂停了，等新版知情同意书批下来再恢复", STATE, "07中心入组暂停了"),
        ("Heads up: drug shipments to site 02 are on hold while customs clears the new batch.", STATE,
         "drug shipments to site 02 are on hold"),
        ("随机化系统这周在升级，暂时停用，预计下周一恢复", STATE, "随机化系统这周在升级"),
        # a lesson told with its rule
        ("Lesson learned: the week-12 window was counted from consent instead of randomisation and four visits "
         "fell outside it. Visit windows are counted from the randomisation date.", LESSON,
         "counted from the randomisation date"),
        ("教训：02中心上次把筛选失败的受试者也录进了随机化系统，导致编号跳号。随机化前必须先确认入排标准全部符合",
         LESSON, "随机化前必须先确认入排标准全部符合"),
        ("We learned the hard way that unblinded lab values can leak through the listings: any listing with lab "
         "data goes through the unblinded statistician first.", LESSON, "unblinded statistician first"),
        ("踩过的坑：导出listing时没锁定数据版本，两份报表对不上。导出前都要先标明数据截止日期", LESSON,
         "标明数据截止日期"),
        ("lesson：上次 DSMB pack 里混进了 unblinded 数据，所有给DSMB的材料必须先过统计师", LESSON,
         "所有给DSMB的材料必须先过统计师"),
    ],
)
def test_a_context_statement_becomes_one_line_of_its_section(
        message: str, where: tuple[str, tuple[str, ...]], kept: str) -> None:
    section, labels = where
    [new] = _new(_distil(message))
    assert new.section == section
    assert new.text.startswith(labels), new.text
    assert kept.casefold() in new.text.casefold()


@pytest.mark.parametrize(
    "message",
    [
        "现在最大的风险是什么？",  # a question about a risk
        "Is the cold-chain delay still a risk for site 02?",
        "那个风险解除了吗？",
        "Did the drug supply issue at site 02 get sorted?",
        "我们的重点是什么来着？",
        "我担心你发错了，再检查一下附件",  # a worry about a one-off
        "I'm worried you sent the wrong version of the listing.",
        "申办方说他们担心入组进度跟不上",  # someone else's worry
        "The sponsor's PM mentioned she's worried about enrolment at site 04.",
        "03中心的PI担心你发的版本不对",
        "去年那个项目冷链老是延误，后来换了供应商就好了",  # a past story, no current state
        "上次03中心暂停入组是因为药房执照过期，后来三周就恢复了",
        "The EDC was down for an hour this morning, all fine now.",
        "会上讨论了一下风险，大家都挺担心的",
        "接下来我去开会，有事微信",  # a plan for one task
        "接下来帮我把04中心的AE汇总导一下",
        "Heads up, I'm out tomorrow.",  # a one-off heads-up
        "如果03中心暂停入组，我们的入组目标会不会受影响",  # hypothetical
        "The monitor said site 06 is paused for enrolment.",  # reported state
        "风险评估表发我一份",  # a task naming risks
        "上次的教训你还记得吗？",  # a question about a lesson
        "Lesson 3 of the GCP training is due on the 20th.",
        "他们组之前吃过亏，所以现在什么都双人核对",
        "For the next hour I'm on a call, ping me after that.",
        "下午帮我记着提醒一下02中心交SAE随访报告",  # a task to remember, not a risk to watch
    ],
)
def test_a_look_alike_adds_no_line(message: str) -> None:
    assert _new(_distil(message)) == []


def test_a_resolved_risk_replaces_the_risk_line_it_resolves() -> None:
    risk = _active("hm-risk", "风险：02中心冷链记录仪没电，温度记录可能缺失。")
    other = _active("hm-other", "风险：08中心随访失访，已经两例联系不上。")
    result = _distil("02中心的冷链记录仪已经换好了，之前担心的温度记录缺失不会有了", [risk, other])
    [new] = _new(result, [risk, other])
    assert [ln.line_id for ln in result.lines] == [new.line_id, "hm-other"]
    assert result.replaced == {"hm-risk": new.line_id}


def test_an_english_resolved_risk_replaces_its_risk_line() -> None:
    risk = _active("hm-risk", "Risk: site 05 courier keeps missing pickups, samples may arrive haemolysed.")
    result = _distil("The site 05 courier problem is fixed and pickups are back on schedule, so that risk is gone.",
                     [risk])
    [new] = _new(result, [risk])
    assert new.text.startswith("Risk closed: ")
    assert result.replaced == {"hm-risk": new.line_id}


def test_a_new_focus_said_without_the_word_replaces_the_focus_line() -> None:
    focus = _active("hm-focus", "当前重点：完成06中心启动访视。")
    risk = _active("hm-risk", "风险：06中心入组慢，近一个月仅1例。")
    result = _distil("接下来三周大家集中精力把V4访视的缺失数据补齐，别的事往后放", [focus, risk])
    [new] = _new(result, [focus, risk])
    assert result.replaced == {"hm-focus": new.line_id}
    assert [ln.line_id for ln in result.lines] == [new.line_id, "hm-risk"]


def test_a_risk_flagged_to_watch_joins_the_other_risks() -> None:
    risk = _active("hm-risk", "风险：06中心入组慢，近一个月仅1例。")
    result = _distil("08中心的药房下个月要搬家，发药可能会中断几天，这个要盯紧", [risk])
    [new] = _new(result, [risk])
    assert [ln.line_id for ln in result.lines] == ["hm-risk", new.line_id]
    assert new.text == "风险：08中心的药房下个月要搬家，发药可能会中断几天。"
