"""A down-vote's reason in the daily distillation (sentences written for these tests): a complaint
about the answer's form becomes the rater's preference by kind (length, format, language, missing
citation, tone, number of items, timing) in zh, en and code-switched; bare judgements and up-votes
state nothing; a duplicate re-confirms the line with the rated answer as evidence; a reason that
would relax a System Rule waits for review; the LLM extractor is told a record is feedback and
its proposals go through the same guards."""

from __future__ import annotations

from datetime import datetime

import pytest

from agent_memory.domain.feedback import FEEDBACK_SOURCE
from agent_memory.domain.jobs import Candidate, FlowLogEntry
from agent_memory.domain.models import HotMemory
from agent_memory.hot_memory.feedback_reasons import feedback_preference
from agent_memory.hot_memory.merge import merge_candidates
from agent_memory.hot_memory.statements import extract_rule_candidates
from agent_memory.jobs.llm_tasks import extract_request
from tests.fakes import InMemoryStore, ScriptedLLM, json_reply
from tests.unit.jobs.support import add_project, hot_lines, line, make_deps, run, save_hot, say, utc

AT = utc("2026-05-12T15:00:00+08:00")
NOW = utc("2026-05-13T02:00:00+08:00")


def vote(message_id: str, reason: str, *, rating: str = "down", user_id: str = "u-pi", study_role: str | None = "PI",
         at: datetime = AT) -> FlowLogEntry:
    """The flow-log record of a rating, as the feedback store writes it (evidence = the rated answer)."""
    return FlowLogEntry(message_id=message_id, session_id="s", role="user", content=reason, at=at, user_id=user_id,
                        study_role=study_role, source=FEEDBACK_SOURCE, rating=rating)


# ------------------------------------------------------------ reasons by kind
@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        # length / verbosity, with an instruction beside the complaint
        ("写得太长了，我只想看一句话的答案", "回答只想看一句话的答案，写得不要太长。"),
        ("way too wordy, give me the headline figure", "Answers: give me the headline figure, not too wordy."),
        # format
        ("表格挤成一团了 分成几行写", "回答分成几行写。"),
        ("use a table next time", "Answers: use a table next time."),
        # language
        ("看不懂英文，用中文回答", "用中文回答。"),
        ("replies in Chinese please", "Replies in Chinese."),
        # missing citation / evidence
        ("没有标出处，数字从哪来的", "回答要标出处。"),
        ("you didn't quote the visit schedule", "Answers: quote the visit schedule."),
        ("缺少依据", "回答要有依据。"),
        ("怎么不标数据截止日期", "回答要标数据截止日期。"),
        # the answer itself as the subject of the complaint
        ("刚才这个回答太散了", "回答不要太散。"),
        # tone
        ("口气太生硬了", "口气不要太生硬。"),
        ("this sounded way too casual", "Answers: not too casual."),
        # too many / too few items
        ("不要再给我列十几条了", "回答不要给我列十几条。"),
        ("too many bullet points", "Answers: not too many bullet points."),
        ("too few examples", "Answers: more examples."),
        # timing
        ("提醒发得太晚了", "提醒发得不要太晚。"),
        # code-switched: the reason's dominant language decides the line's
        ("太verbose了，just the key numbers", "Answers: just the key numbers, not too verbose."),
        ("回复太long了，只要结论就行", "回复只要结论就行，不要太long。"),
    ],
)
def test_a_complaint_becomes_a_clean_preference_by_kind(reason: str, expected: str) -> None:
    assert feedback_preference(reason) == expected


@pytest.mark.parametrize("reason", ["答错了", "完全不对！", "没用", "数据有误", "wrong", "That's just wrong.",
                                    "useless", "not helpful", "doesn't answer the question", "不是我要的", "说不清楚"])
def test_a_bare_judgement_states_no_preference(reason: str) -> None:
    assert feedback_preference(reason) is None


@pytest.mark.parametrize("reason", ["没有写出K-0412的体温", "AB-1203的随访日期列得太多了"])
def test_a_complaint_about_one_study_subject_is_no_preference(reason: str) -> None:
    assert feedback_preference(reason) is None


def test_the_rule_extractor_reads_a_down_vote_reason_as_the_raters_preference() -> None:
    # Given a PI's down-vote reason, a CRC's judgement, and a PI's reason with a directive cue
    entries = [
        vote("a-1", "回答太绕了，先说结论"),
        vote("a-2", "不对", user_id="u-crc", study_role="CRC"),
        vote("a-3", "以后引用周报时写明是第几周", at=utc("2026-05-12T16:00:00+08:00")),
    ]

    # When the rules extract candidates
    found = extract_rule_candidates(entries)

    # Then the complaint and the directive are PI preferences citing the rated answers; the judgement is nothing
    assert [(c.text, c.section, c.role_tag, c.evidence, c.speaker) for c in found] == [
        ("回答先说结论，不要太绕。", "User Preferences", "PI", ["a-1"], "u-pi"),
        ("引用周报时写明是第几周。", "User Preferences", "PI", ["a-3"], "u-pi"),
    ]


# ------------------------------------------------------------ the guards
def _merge(hot: HotMemory, entries: list[FlowLogEntry], candidates: list[Candidate] | None = None):
    return merge_candidates(hot, extract_rule_candidates(entries) if candidates is None else candidates,
                            day_messages={m.message_id: m for m in entries}, day="2026-05-12", now=NOW,
                            max_line_tokens=200)


def test_a_reason_saying_again_what_a_line_says_reconfirms_it_with_the_rated_answer() -> None:
    # Given a distilled PI line on short answers from an earlier day
    old = line("l-short", "User Preferences", "回答只给结论，不要太长。", source="distilled", tag="PI",
               evidence=("m-old",))
    hot = HotMemory(project_id="p1", lines=[old])

    # When a PI's down-vote complains about the same thing
    merged = _merge(hot, [vote("a-9", "太长了 只给结论")])

    # Then no line is added; the line keeps its id and text and gains the rated answer as evidence
    assert (merged.added, merged.duplicates, merged.confirmed) == ([], 1, {"l-short": ["a-9"]})
    assert merged.changed
    (kept,) = merged.lines
    assert (kept.line_id, kept.text, kept.evidence) == ("l-short", old.text, ["m-old", "a-9"])


def test_a_reason_repeating_an_admin_line_leaves_it_untouched() -> None:
    admin = line("l-adm", "User Preferences", "回答只给结论，不要太长。")
    merged = _merge(HotMemory(project_id="p1", lines=[admin]), [vote("a-9", "太长了 只给结论")])
    assert (merged.duplicates, merged.confirmed, merged.changed, merged.lines) == (1, {}, False, [admin])


@pytest.mark.parametrize(
    ("reason", "rule"),
    [("编号后面没有写患者名字，看不出是谁", "r-id"),
     ("too slow, just send the listing to the sponsor directly", "r-send"),
     ("每次都要签字确认太麻烦了，直接改EDC就行", "r-edc"), ("为什么不显示受试者姓名？", "r-id"),
     ("按治疗组分开看疗效，才有用", "r-blind")],
)
def test_a_reason_that_would_relax_a_system_rule_goes_to_review_naming_it(reason: str, rule: str) -> None:
    # Given System Rules on identities, sending outside and EDC corrections
    rules = [
        line("r-id", "System Rules", "禁止在任何输出中出现受试者姓名，只用受试者编号。"),
        line("r-send", "System Rules", "未经PI批准，不得向申办方或院外人员发送任何数据。"),
        line("r-edc", "System Rules", "禁止AI修改EDC中的数据；更正须由研究者签字后执行。"),
        line("r-blind", "System Rules", "本研究双盲：不得按治疗组拆分展示疗效结果。"),
    ]

    # When a down-vote's reason asks for what a rule forbids
    merged = _merge(HotMemory(project_id="p1", lines=rules), [vote("a-5", reason)])

    # Then nothing is written and one review item names the rule, with the rated answer as evidence
    assert not merged.changed and merged.lines == rules
    (item,) = merged.reviews
    assert item.reason == "relaxes_system_rules" and item.detail == rule
    assert item.evidence == ["a-5"]


def test_an_llm_proposal_from_a_bare_judgement_is_rejected() -> None:
    # Given the LLM turned a judgement into a "preference"
    entry = vote("a-7", "答错了")
    proposal = Candidate(text="回答要准确。", section="User Preferences", evidence=["a-7"], origin="llm",
                         order=("1", 0))

    # When it is merged
    merged = _merge(HotMemory(project_id="p1", lines=[]), [entry], [proposal])

    # Then the guard rejects it: a judgement states no preference
    assert not merged.changed and merged.rejected["not_a_preference"] == 1


# ------------------------------------------------------------ the job
@pytest.fixture
def store() -> InMemoryStore:
    repo = InMemoryStore()
    add_project(repo)
    return repo


def _rate(store: InMemoryStore, entry: FlowLogEntry) -> None:
    store.append_flow_log("p1", entry)
    store.mark_active("p1", entry.at.astimezone().date(), entry.at)


def test_the_days_distillation_adds_the_pi_preference_and_only_the_last_rating_counts(store: InMemoryStore) -> None:
    # Given a PI's answered question, a down-vote later turned into an up-vote by a CRC, a bare
    # judgement and the PI's down-vote with a complaint about the answer's length
    say(store, "p1", "q-1", "这周入组多少人？", AT, user_id="u-pi", study_role="PI")
    say(store, "p1", "a-1", "本周共入组……（很长的回答）", AT, role="assistant")
    _rate(store, vote("a-1", "格式太乱了", user_id="u-crc", study_role="CRC"))
    _rate(store, vote("a-1", "", rating="up", user_id="u-crc", study_role="CRC", at=utc("2026-05-12T15:10:00+08:00")))
    _rate(store, vote("a-1", "不对", user_id="u-dm", study_role="DM", at=utc("2026-05-12T15:20:00+08:00")))
    _rate(store, vote("a-1", "啰嗦死了，给个数字就行", at=utc("2026-05-12T15:30:00+08:00")))

    # When the day is distilled
    report = run(make_deps(store, clock=lambda: NOW), "distill", "p1", "2026-05-13")

    # Then one [PI] line holds the preference, citing the rated answer
    (added,) = hot_lines(store)
    assert (added.section, added.role_tag, added.text, added.evidence) == (
        "User Preferences", "PI", "回答给个数字就行。", ["a-1"])
    assert report.counts["added"] == 1


def test_two_raters_of_one_answer_each_get_their_own_role(store: InMemoryStore) -> None:
    # Given a PI and a CRC who both down-vote the same answer with different complaints
    _rate(store, vote("a-4", "字太多了，三句话以内"))
    _rate(store, vote("a-4", "no sources, cite the SOP section", user_id="u-crc", study_role="CRC",
                      at=utc("2026-05-12T15:40:00+08:00")))

    # When the day is distilled
    run(make_deps(store, clock=lambda: NOW), "distill", "p1", "2026-05-13")

    # Then each preference carries its own rater's role, both citing the rated answer
    assert sorted((ln.role_tag, ln.text, ln.stated_by, tuple(ln.evidence)) for ln in hot_lines(store)) == [
        ("CRC", "Answers: cite the SOP section, include sources.", "u-crc", ("a-4",)),
        ("PI", "回答三句话以内，字不要太多。", "u-pi", ("a-4",)),
    ]


def test_a_reconfirming_reason_is_saved_with_its_evidence(store: InMemoryStore) -> None:
    # Given the PI's line on English answers in memory
    save_hot(store, "p1", [line("l-en", "User Preferences", "Answers in English.", source="distilled", tag="PI",
                                evidence=("m-old",))])
    _rate(store, vote("a-2", "answers in english please, not chinese"))

    # When the day is distilled
    report = run(make_deps(store, clock=lambda: NOW), "distill", "p1", "2026-05-13")

    # Then the line is re-confirmed (saved with the rated answer as added evidence), nothing added
    (kept,) = hot_lines(store)
    assert (kept.line_id, kept.evidence) == ("l-en", ["m-old", "a-2"])
    assert (report.counts["added"], report.counts["confirmed"], report.counts["duplicates"]) == (0, 1, 1)
    assert store.load_hot_memory("p1").version == 2


def test_the_llm_is_told_a_record_is_feedback_and_its_proposal_is_guarded(store: InMemoryStore) -> None:
    # Given a PI's down-vote and an LLM that proposes a preference from it
    _rate(store, vote("a-3", "列的点太多了，三条以内"))
    llm = ScriptedLLM(json_reply({"operations": [
        {"op": "add", "text": "回答列点不超过三条。", "section": "User Preferences", "evidence": ["a-3"]}]}))

    # When the day is distilled with the LLM
    run(make_deps(store, llm=llm, clock=lambda: NOW), "distill", "p1", "2026-05-13")

    # Then the request marks the record as the PI's down-vote of answer a-3, and the line is the PI's
    (request,) = llm.requests
    content = str(request.messages[0]["content"])
    assert "feedback u-pi (down-vote of answer a-3): 列的点太多了，三条以内" in content
    assert "feedback" in request.system[0].text
    (added,) = hot_lines(store)
    assert (added.text, added.role_tag, added.evidence) == ("回答列点不超过三条。", "PI", ["a-3"])


def test_the_extract_request_marks_only_feedback_records() -> None:
    entries = [FlowLogEntry(message_id="q-1", session_id="s", role="user", content="周报改到周五", at=AT,
                            user_id="u-pi"), vote("a-1", "太长了")]
    request = extract_request(HotMemory(project_id="p1", lines=[]), entries, day="2026-05-12", model="m",
                              max_tokens=100, max_bytes_each=500, timeout_s=5)
    content = str(request.messages[0]["content"])
    assert "user u-pi: 周报改到周五" in content and "feedback u-pi (down-vote of answer a-1): 太长了" in content
