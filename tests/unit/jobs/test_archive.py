"""Weekly archiving on the in-memory store: the previous ISO week of the project's calendar (year
boundaries, week 53), evidence on every point, bounded size, no write and no LLM call for an
empty week, never overwriting a report, idempotent re-runs."""

from __future__ import annotations

import re

import pytest

from agent_memory.domain.llm import LLMResponse, Usage
from agent_memory.domain.models import WeeklyReport
from agent_memory.domain.text import utf8_len
from agent_memory.jobs.llm_tasks import ReportOutput
from tests.fakes import FakeClock, InMemoryStore, ScriptedLLM, json_reply, text_reply
from tests.unit.jobs.support import add_project, make_deps, run, say, utc
from tests.unit.structured_support import assert_structured_request, assert_valid_reply, fallbacks, usage_metrics

POINT = re.compile(r"^\[(进度|决策|问题)\] \d\d-\d\d .+ \[[^\]]+\]$")
OVERVIEW = re.compile(r"^\d{4}-W\d\d 本周小结：进度 \d+ 项，决策 \d+ 项，问题与教训 \d+ 项（据 \d+ 条消息）。$")


def _points(report: WeeklyReport | None) -> list[str]:
    """The point lines of a stored report, after its one-line overview (which must be there)."""
    assert report is not None
    first, *rest = report.summary.splitlines()
    assert OVERVIEW.match(first), first
    return rest


def test_week_53_covers_2026_12_28_to_2027_01_03(store: InMemoryStore) -> None:
    # Given messages just outside and inside ISO week 2026-W53 (Asia/Shanghai)
    add_project(store)
    say(store, "p1", "m-w52", "P010 完成 V3 随访。", utc("2026-12-27T23:59:59+08:00"))
    say(store, "p1", "m-first", "P011 完成筛选，下周入组。", utc("2026-12-28T00:00:00+08:00"))
    say(store, "p1", "m-last", "决定元旦后恢复筛选。", utc("2027-01-03T23:59:59+08:00"))
    say(store, "p1", "m-w01", "P012 入组完成。", utc("2027-01-04T00:00:00+08:00"))

    # When archiving runs on Monday 2027-01-04
    report = run(make_deps(store, clock=FakeClock(utc("2027-01-04T03:00:00+08:00"))),
                 "archive", "p1", "2027-01-04")

    # Then one report for 2026-W53 holds exactly the week's messages
    assert report.details["iso_week"] == "2026-W53"
    assert report.details["window_utc"] == ["2026-12-27T16:00:00+00:00", "2027-01-03T16:00:00+00:00"]
    stored = store.get_weekly_report("p1", "2026-W53")
    assert stored is not None
    assert sorted(stored.evidence) == ["m-first", "m-last"]
    assert "[决策] 01-03 决定元旦后恢复筛选。 [m-last]" in stored.summary.splitlines()


def test_week_1_of_2026_starts_in_2025(store: InMemoryStore) -> None:
    # Given a message on 2025-12-30 (ISO week 2026-W01)
    add_project(store, created_at=utc("2025-12-01T09:00:00+08:00"))
    say(store, "p1", "m-1", "伦理批件已获得，EDC 完成上线。", utc("2025-12-30T10:00:00+08:00"))

    # When archiving runs on Monday 2026-01-05
    report = run(make_deps(store), "archive", "p1", "2026-01-05")

    # Then the report is 2026-W01 and cites the 2025 message
    assert report.details["iso_week"] == "2026-W01"
    stored = store.get_weekly_report("p1", "2026-W01")
    assert stored is not None and stored.evidence == ["m-1"]


def test_empty_week_writes_nothing_and_calls_no_llm(store: InMemoryStore) -> None:
    # Given a project without a message in 2026-W11 and a recording LLM
    add_project(store)
    say(store, "p1", "m-other-week", "P001 完成 V2 随访。", utc("2026-03-16T10:00:00+08:00"))
    llm = ScriptedLLM(json_reply({"progress": [], "decisions": [], "problems": []}))
    before = store.snapshot()

    # When 2026-W11 is archived after it is over
    report = run(make_deps(store, llm=llm, clock=FakeClock(utc("2026-03-16T03:00:00+08:00"))),
                 "archive", "p1", "2026-03-16")

    # Then nothing is written and the LLM was never called
    assert report.counts["messages"] == 0 and not report.changed
    assert llm.requests == []
    assert store.snapshot() == before


def test_existing_report_is_never_overwritten(store: InMemoryStore) -> None:
    # Given an admin-corrected report for 2026-W10 and that week's messages
    add_project(store)
    corrected = WeeklyReport(project_id="p1", iso_week="2026-W10", summary="[进度] 管理员修订：本周入组 2 例。",
                             revision=2, created_at=utc("2026-03-10T09:00:00+08:00"), created_by="u-pi-zhang")
    store.put_weekly_report(corrected)
    say(store, "p1", "m-1", "P005 入组完成。", utc("2026-03-05T10:00:00+08:00"))
    llm = ScriptedLLM(json_reply({"progress": [], "decisions": [], "problems": []}))
    before = store.snapshot()

    # When archiving runs again for that week
    report = run(make_deps(store, llm=llm), "archive", "p1", "2026-03-09")

    # Then the report is untouched and no LLM was called
    assert report.details["existing_report"] is True
    assert store.get_weekly_report("p1", "2026-W10") == corrected
    assert llm.requests == []
    assert store.snapshot() == before


def test_offline_report_has_progress_decisions_problems_each_citing_messages(store: InMemoryStore) -> None:
    # Given a week of user and assistant messages
    add_project(store)
    say(store, "p1", "m-1", "P007 今天完成 V2 随访。", utc("2026-03-02T10:00:00+08:00"), user_id="u-crc-wang")
    say(store, "p1", "m-2", "P007 入组了吗？", utc("2026-03-02T10:05:00+08:00"))
    say(store, "p1", "m-3", "【离线模式 offline】P007 已入组，入组日期 2026-02-26。", utc("2026-03-02T10:05:02+08:00"),
        role="assistant")
    say(store, "p1", "m-4", "周三 PI 会议决定：暂停筛选间质性肺炎既往史患者。", utc("2026-03-04T15:00:00+08:00"))
    say(store, "p1", "m-5", "EDC 同步失败了，中心编码参数填错。", utc("2026-03-05T09:00:00+08:00"))
    say(store, "p1", "m-6", "好的。", utc("2026-03-05T09:01:00+08:00"))

    # When 2026-W10 is archived offline
    report = run(make_deps(store), "archive", "p1", "2026-03-09")

    # Then every line is a [进度]/[决策]/[问题] point with its local date and message ids; no questions
    stored = store.get_weekly_report("p1", "2026-W10")
    assert stored is not None
    lines = _points(stored)
    assert all(POINT.match(ln) for ln in lines), lines
    assert lines == [
        "[进度] 03-02 P007 今天完成 V2 随访。 [m-1]",
        "[进度] 03-02 P007 已入组，入组日期 2026-02-26。 [m-3]",
        "[决策] 03-04 周三 PI 会议决定：暂停筛选间质性肺炎既往史患者。 [m-4]",
        "[问题] 03-05 EDC 同步失败了，中心编码参数填错。 [m-5]",
    ]
    assert stored.evidence == ["m-1", "m-3", "m-4", "m-5"]
    assert report.details["summariser"] == "offline" and report.changed


def test_report_size_is_bounded_in_utf8_bytes_with_whole_points(store: InMemoryStore) -> None:
    # Given a busy week of long messages
    add_project(store)
    for i in range(30):
        distinct = "".join(chr(0x4E00 + 97 * i + k) for k in range(80))  # no two points alike
        say(store, "p1", f"m-{i:02d}", f"第{i}条：决定调整随访窗口，" + distinct + "🩺。",
            utc(f"2026-03-03T{8 + i // 4:02d}:{(i % 4) * 10:02d}:00+08:00"))

    # When archived with a 1,500-byte cap
    report = run(make_deps(store, report_max_bytes=1500, report_point_max_bytes=300), "archive", "p1",
                 "2026-03-09")

    # Then the summary fits, holds whole points only (each within its own cap) and counts the rest
    stored = store.get_weekly_report("p1", "2026-W10")
    assert stored is not None
    assert utf8_len(stored.summary) <= 1500
    assert "\ufffd" not in stored.summary
    assert all(POINT.match(ln) for ln in _points(stored))
    assert report.counts["points_dropped"] > 0
    assert report.counts["summary_bytes"] == utf8_len(stored.summary)


def test_llm_report_keeps_only_points_citing_messages_of_the_week(
    store: InMemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a week of messages and an LLM citing one real and one invented message
    add_project(store)
    say(store, "p1", "m-1", "P007 今天完成 V2 随访。", utc("2026-03-02T10:00:00+08:00"))
    payload = {
        "progress": [{"text": "P007 完成 V2 随访。", "evidence": ["m-1"]}],
        "decisions": [{"text": "决定放宽入排标准。", "evidence": ["m-404"]}],
        "problems": [],
    }
    usage = Usage(input_tokens=3000, output_tokens=250, cache_creation_input_tokens=1200, cache_read_input_tokens=0)
    llm = ScriptedLLM(json_reply(payload, usage=usage))

    # When archived (with a per-task effort)
    report = run(make_deps(store, llm=llm, archive_effort="medium"), "archive", "p1", "2026-03-09")

    # Then only the grounded point is kept and the other is counted
    stored = store.get_weekly_report("p1", "2026-W10")
    assert stored is not None
    assert _points(stored) == ["[进度] 03-02 P007 完成 V2 随访。 [m-1]"]
    assert report.counts["ungrounded"] == 1 and report.details["summariser"] == "llm"
    # and the call was a structured output (no forced tool) the answer is valid against
    (request,) = llm.requests
    assert_structured_request(request, ReportOutput, task="archive")
    assert_valid_reply(request, payload)
    assert request.effort == "medium"
    # and the report carries the call's usage, the metrics count it, no fallback is counted
    assert report.details["llm_calls"] == 1
    assert report.details["llm_usage"] == usage.as_dict()
    out = capsys.readouterr().out
    assert fallbacks(out) == []
    assert usage_metrics(out) == {"archive": {
        "LLMInputTokens": 3000.0, "LLMOutputTokens": 250.0, "LLMCacheReadTokens": 0.0, "LLMCacheWriteTokens": 1200.0,
    }}


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        pytest.param(json_reply({"progress": [{"text": "P00", "evidence": ["m-1"]}], "decisions": [], "problems": []},
                                stop_reason="max_tokens"), "truncated", id="cut-but-parses"),
        pytest.param(text_reply('{"progress": [{"text": "P00', stop_reason="max_tokens"), "truncated", id="cut"),
        pytest.param(text_reply("I can't help with that.", stop_reason="refusal"), "refused", id="refusal"),
        pytest.param(text_reply("本周 P007 完成 V2 随访。"), "invalid_json", id="prose"),
        pytest.param(LLMResponse(content=[], stop_reason="end_turn", provider="anthropic", model="m"), "no_text",
                     id="no-text"),
        pytest.param(json_reply({"progress": [{"text": "", "evidence": ["m-1"]}], "decisions": [], "problems": []}),
                     "invalid_output", id="schema-violation"),
    ],
)
def test_unusable_llm_report_is_not_used_and_the_offline_summary_is_written(
    store: InMemoryStore, reply: LLMResponse, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an LLM reply that cannot be used (cut by max_tokens, refused, not JSON, invalid)
    add_project(store)
    say(store, "p1", "m-1", "P007 今天完成 V2 随访。", utc("2026-03-02T10:00:00+08:00"))
    llm = ScriptedLLM(reply)

    # When archived
    report = run(make_deps(store, llm=llm), "archive", "p1", "2026-03-09")

    # Then nothing of the reply is used: the offline summary is stored; the fallback is counted
    stored = store.get_weekly_report("p1", "2026-W10")
    assert stored is not None and _points(stored) == ["[进度] 03-02 P007 今天完成 V2 随访。 [m-1]"]
    assert report.details["summariser"] == "offline"
    assert report.details["fallback_reason"] == reason
    assert report.details["llm_calls"] == 1
    assert fallbacks(capsys.readouterr().out) == [("archive", reason)]


def test_llm_report_without_a_grounded_point_falls_back_and_is_counted(
    store: InMemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    add_project(store)
    say(store, "p1", "m-1", "P007 今天完成 V2 随访。", utc("2026-03-02T10:00:00+08:00"))
    llm = ScriptedLLM(json_reply({"progress": [{"text": "P007 完成 V2 随访。", "evidence": ["m-404"]}],
                                  "decisions": [], "problems": []}))
    report = run(make_deps(store, llm=llm), "archive", "p1", "2026-03-09")
    assert (report.details["summariser"], report.details["fallback_reason"]) == ("offline", "no_grounded_points")
    assert fallbacks(capsys.readouterr().out) == [("archive", "no_grounded_points")]


def test_rerunning_archive_changes_nothing(store: InMemoryStore) -> None:
    # Given an archived week
    add_project(store)
    say(store, "p1", "m-1", "P007 今天完成 V2 随访。", utc("2026-03-02T10:00:00+08:00"))
    deps = make_deps(store)
    first = run(deps, "archive", "p1", "2026-03-09")
    before = store.snapshot()

    # When the same run is delivered again, and a manual run on another day of the next week
    again = run(deps, "archive", "p1", "2026-03-09")
    manual = run(deps, "archive", "p1", "2026-03-12")

    # Then nothing changed
    assert first.changed and not again.changed and not manual.changed
    assert store.snapshot() == before


# ------------------------------------------------------------------ a week still in progress
def test_archiving_the_current_week_writes_nothing_and_says_so(store: InMemoryStore) -> None:
    # Given a message on Tuesday of 2026-W11, a recording LLM and a clock on Tuesday noon
    add_project(store)
    say(store, "p1", "m-tue", "今天 PI 会议决定：S02 中心暂停筛选一周。", utc("2026-03-10T10:00:00+08:00"))
    llm = ScriptedLLM(json_reply({"progress": [], "decisions": [], "problems": []}))
    before = store.snapshot()

    # When the current week is archived by hand (`make job JOB=archive DATE=2026-03-10`: run date 03-16)
    report = run(make_deps(store, llm=llm, clock=FakeClock(utc("2026-03-10T12:00:00+08:00"))),
                 "archive", "p1", "2026-03-16")

    # Then no report and no marker are written, no LLM is called, and the report says why
    assert not report.changed and report.details["reason"] == "period_not_over"
    assert report.details["iso_week"] == "2026-W11"
    assert store.snapshot() == before and llm.requests == []


def test_scheduled_archive_after_a_manual_run_of_the_current_week_covers_the_whole_week(
    store: InMemoryStore,
) -> None:
    # Given 2026-W11 archived by hand on Tuesday, then a later decision on Friday of that week
    add_project(store)
    say(store, "p1", "m-tue", "P021 今天完成筛选并入组。", utc("2026-03-10T10:00:00+08:00"))
    run(make_deps(store, clock=FakeClock(utc("2026-03-10T12:00:00+08:00"))), "archive", "p1", "2026-03-16")
    say(store, "p1", "m-fri", "周五 PI 会议决定：S02 中心暂停筛选一周。", utc("2026-03-13T15:00:00+08:00"))

    # When the scheduled run archives the week on Monday 2026-03-16
    report = run(make_deps(store, clock=FakeClock(utc("2026-03-16T03:00:00+08:00"))),
                 "archive", "p1", "2026-03-16")

    # Then the week's report is written and cites both messages
    stored = store.get_weekly_report("p1", "2026-W11")
    assert report.changed and stored is not None
    assert stored.evidence == ["m-tue", "m-fri"]


# ------------------------------------------------------------------ quotes of old history
def test_offline_report_leaves_out_assistant_quotes_of_old_reports_and_keeps_the_users_decisions(
    store: InMemoryStore,
) -> None:
    # Given a week in which the assistant quoted the history book and hot memory, and a user decided something
    add_project(store)
    say(store, "p1", "m-q", "我们之前有没有讨论过入组太慢怎么解决？", utc("2026-03-02T10:00:00+08:00"))
    say(store, "p1", "m-hist", "【离线模式 offline】根据周报（history book）：\n"
        "- 2026-W07 [决策] 02-11 PI 会议决定：增加 S03 中心。 [m0211-1]\n"
        "- 2026-W05 [问题] 01-28 EDC 同步失败。 [m0128-1]", utc("2026-03-02T10:00:02+08:00"), role="assistant")
    say(store, "p1", "m-hot", "【离线模式 offline】记得，热记忆中记录着：\n- 决定周报统一用中文。",
        utc("2026-03-03T10:00:02+08:00"), role="assistant")
    say(store, "p1", "m-cite", "上次 2026-W08 已决定延长筛选期。\n本周 P021 完成筛选。",
        utc("2026-03-03T11:00:00+08:00"), role="assistant")
    say(store, "p1", "m-own", "周三 PI 会议决定：暂停筛选间质性肺炎既往史患者。", utc("2026-03-04T15:00:00+08:00"))

    # When 2026-W10 is archived offline
    run(make_deps(store), "archive", "p1", "2026-03-09")

    # Then the report holds the user's decision and the reply's own news, none of the quotes
    stored = store.get_weekly_report("p1", "2026-W10")
    assert stored is not None
    assert _points(stored) == [
        "[进度] 03-03 本周 P021 完成筛选。 [m-cite]",
        "[决策] 03-04 周三 PI 会议决定：暂停筛选间质性肺炎既往史患者。 [m-own]",
    ]


def test_llm_archiver_is_told_and_shown_only_this_weeks_events(store: InMemoryStore) -> None:
    # Given a week with an assistant reply quoting the history book and a user's decision
    add_project(store)
    say(store, "p1", "m-hist", "根据周报（history book）：\n- 2026-W07 [决策] PI 会议决定：增加 S03 中心。",
        utc("2026-03-02T10:00:02+08:00"), role="assistant")
    say(store, "p1", "m-own", "周三 PI 会议决定：暂停筛选。", utc("2026-03-04T15:00:00+08:00"))
    llm = ScriptedLLM(json_reply({
        "progress": [], "decisions": [{"text": "暂停筛选。", "evidence": ["m-own"]}], "problems": []}))

    # When archived with the LLM
    run(make_deps(store, llm=llm), "archive", "p1", "2026-03-09")

    # Then the request carries the user's message but not the quote, and the instructions forbid quotes
    (request,) = llm.requests
    sent = request.messages[0]["content"]
    assert "m-own" in sent and "m-hist" not in sent and "2026-W07" not in sent
    assert "quotes the history book" in request.system[0].text
