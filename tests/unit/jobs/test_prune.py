"""Pruning on the in-memory store: a compaction is validated before it is stored (under the token
cap, admin lines kept word for word), one alert when admin lines alone exceed the cap, compacted
lines logged in the revision history, yearly summaries beyond 50 weeks, byte-capped alert text.
The SNS adapter is tested in ``tests/integration/test_job_adapters.py``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from agent_memory.domain.jobs import Alert
from agent_memory.domain.llm import LLMResponse, Usage
from agent_memory.domain.models import HotMemoryLine, WeeklyReport
from agent_memory.domain.text import utf8_len
from agent_memory.hot_memory.document import document_tokens
from agent_memory.jobs.llm_tasks import CompactOutput
from agent_memory.jobs.notifier import cap_alert
from agent_memory.observability import metrics
from tests.fakes import FakeClock, InMemoryNotifier, InMemoryStore, ScriptedLLM, json_reply, text_reply
from tests.unit.jobs.support import add_project, line, make_deps, run, save_hot, utc
from tests.unit.structured_support import assert_structured_request, assert_valid_reply, fallbacks, usage_metrics

NOW = utc("2026-03-10T04:00:00+08:00")


def filler(n: int, length: int = 99) -> str:
    """``length`` Han characters (one token each) that share no bigram with another ``n``."""
    return "".join(chr(0x4E00 + n * 211 + k) for k in range(length))


def over_cap_document() -> tuple[list[HotMemoryLine], list[HotMemoryLine]]:
    """A hot memory over the cap: 800 tokens of admin lines, 1,500 of AI lines (2,320 rendered)."""
    admin = [line(f"adm-{i}", "System Rules" if i < 4 else "User Preferences", filler(i), tag=None)
             for i in range(8)]
    ai = [line(f"ai-{i:02d}", "Active Context" if i < 8 else "Lessons Learned", filler(20 + i), source="distilled",
               at=f"2026-02-{i + 1:02d}T02:00:00+08:00", evidence=(f"m-{i}",)) for i in range(15)]
    return admin, ai


def proposal(lines: list[HotMemoryLine], **changes: Any) -> dict[str, Any]:
    return {"lines": [{"line_id": ln.line_id, "section": ln.section, "text": ln.text, "role_tag": ln.role_tag}
                      for ln in lines], **changes}


def seeded(store: InMemoryStore) -> tuple[list[HotMemoryLine], list[HotMemoryLine]]:
    add_project(store)
    admin, ai = over_cap_document()
    save_hot(store, "p1", admin + ai)
    return admin, ai


def _over_cap(admin: list[HotMemoryLine], ai: list[HotMemoryLine]) -> dict[str, Any]:
    return proposal(admin + ai[:14])


def _admin_dropped(admin: list[HotMemoryLine], ai: list[HotMemoryLine]) -> dict[str, Any]:
    return proposal(admin[:3] + admin[4:] + ai[:10])


def _admin_reworded(admin: list[HotMemoryLine], ai: list[HotMemoryLine]) -> dict[str, Any]:
    out = proposal(admin + ai[:8])
    out["lines"][0]["text"] = admin[0].text[:60] + "（精简）"
    return out


@pytest.mark.parametrize(
    ("build", "problem"),
    [
        (_over_cap, "over_cap"),
        (_admin_dropped, "admin_line_dropped:adm-3"),
        (_admin_reworded, "admin_line_changed:adm-0"),
    ],
    ids=["a-over-cap", "b-admin-line-dropped", "c-admin-line-reworded"],
)
def test_b07_invalid_compaction_is_rejected_and_the_stored_revision_unchanged(
    store: InMemoryStore, build: Any, problem: str
) -> None:
    # Given 2,320 tokens of hot memory (1,500 AI, 800 admin) and a compactor returning a bad document
    admin, ai = seeded(store)
    llm = ScriptedLLM(json_reply(build(admin, ai)))
    notifier = InMemoryNotifier()
    hot_before = store.load_hot_memory("p1")

    # When pruning runs
    report = run(make_deps(store, llm=llm, notifier=notifier, clock=FakeClock(NOW)), "prune", "p1",
                 "2026-03-10")

    # Then the result is rejected: stored revision unchanged, failure recorded (metric, alert, marker)
    assert problem in report.details["problems"]
    assert report.details["status"] == "rejected" and not report.changed
    assert store.load_hot_memory("p1") == hot_before
    assert store.get_hot_memory_revision("p1", 2) is None
    assert "PruneRejected" in metrics.metric_set
    assert [a.kind for a in notifier.alerts] == ["prune_rejected"]
    marker = store.get_job_run("p1", "prune", "2026-03-10")
    assert marker is not None and marker.status == "rejected"
    # and the path reports its token counts
    assert report.counts["tokens_before"] == document_tokens(admin + ai) == 2320
    assert report.counts["tokens_after"] == 2320
    assert report.counts["proposed_tokens"] > 0


def test_b07_valid_llm_compaction_is_one_revision_listing_the_compacted_lines(
    store: InMemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given 2,320 tokens of hot memory and a compactor merging the AI lines
    admin, ai = seeded(store)
    merged = {"line_id": None, "section": "Active Context", "text": "当前重点：" + filler(90, 40),
              "role_tag": None, "merged_from": [ln.line_id for ln in ai[:8]]}
    kept = [{**ln, "merged_from": []} for ln in proposal(admin)["lines"] + proposal(ai[8:11])["lines"]]
    payload = {"lines": [*kept[:len(admin)], merged, *kept[len(admin):]]}
    usage = Usage(input_tokens=2600, output_tokens=1400, cache_creation_input_tokens=0, cache_read_input_tokens=0)
    llm = ScriptedLLM(json_reply(payload, usage=usage))

    # When pruning runs (with a per-task effort)
    report = run(make_deps(store, llm=llm, clock=FakeClock(NOW), compact_effort="high"), "prune", "p1", "2026-03-10")

    # Then the call was a structured output the answer is valid against, its usage reported
    (request,) = llm.requests
    assert_structured_request(request, CompactOutput, task="compact")
    assert_valid_reply(request, payload)
    assert request.effort == "high"
    assert report.details["llm_calls"] == 1 and report.details["llm_usage"] == usage.as_dict()
    out = capsys.readouterr().out
    assert fallbacks(out) == []
    assert usage_metrics(out)["compact"]["LLMOutputTokens"] == 1400.0

    # Then one new revision holds the admin lines byte-identical and the compacted AI lines
    hot = store.load_hot_memory("p1")
    assert report.changed and hot.version == 2
    assert [ln.model_dump_json() for ln in hot.lines if ln.source == "admin"] == [
        ln.model_dump_json() for ln in admin]
    new = next(ln for ln in hot.lines if ln.created_by == "pruner")
    assert new.evidence == [f"m-{i}" for i in range(8)]
    assert report.counts["tokens_after"] == document_tokens(hot.lines) <= 2000
    revision = store.get_revision("p1", 2)
    assert revision is not None
    reason = revision.summary.reason
    assert reason is not None and "merged" in reason and "ai-00" in reason
    assert "evicted ai-11,ai-12,ai-13,ai-14" in reason


def test_truncated_compaction_applies_nothing_and_is_counted(
    store: InMemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given hot memory over the cap and a compactor reply cut by max_tokens (its text parses)
    admin, ai = seeded(store)
    reply = json_reply(proposal(admin + ai[:8]), stop_reason="max_tokens", usage=Usage(input_tokens=2600,
                                                                                      output_tokens=8192))
    llm = ScriptedLLM(reply)
    hot_before = store.load_hot_memory("p1")

    # When pruning runs
    report = run(make_deps(store, llm=llm, clock=FakeClock(NOW)), "prune", "p1", "2026-03-10")

    # Then nothing is applied (not even the offline compactor), the status says why, it is counted
    assert (report.details["status"], report.details["compactor"]) == ("llm_truncated", "llm_truncated")
    assert not report.changed and store.load_hot_memory("p1") == hot_before
    assert report.details["llm_usage"]["output_tokens"] == 8192
    assert fallbacks(capsys.readouterr().out) == [("compact", "truncated")]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        pytest.param(text_reply("I can't help with that.", stop_reason="refusal"), "refused", id="refusal"),
        pytest.param(text_reply("保留全部管理员条目。"), "invalid_json", id="prose"),
        pytest.param(LLMResponse(content=[], stop_reason="end_turn", provider="anthropic", model="m"), "no_text",
                     id="no-text"),
        pytest.param(json_reply({"lines": []}), "invalid_output", id="empty-document"),
    ],
)
def test_unusable_compaction_reply_falls_back_to_the_offline_compactor(
    store: InMemoryStore, reply: LLMResponse, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    admin, _ = seeded(store)
    report = run(make_deps(store, llm=ScriptedLLM(reply), clock=FakeClock(NOW)), "prune", "p1", "2026-03-10")
    assert (report.details["compactor"], report.details["status"]) == ("offline_fallback", "compacted")
    hot = store.load_hot_memory("p1")
    assert [ln.model_dump_json() for ln in hot.lines if ln.source == "admin"] == [ln.model_dump_json() for ln in admin]
    assert document_tokens(hot.lines) <= 2000
    assert report.details["llm_calls"] == 1
    assert fallbacks(capsys.readouterr().out) == [("compact", reason)]


def test_offline_compaction_merges_duplicates_drops_superseded_then_oldest(store: InMemoryStore) -> None:
    # Given admin lines, an old and a new reply-language line, a repeated rule and many AI lines
    add_project(store)
    admin, ai = over_cap_document()
    extra = [
        line("lang-old", "User Preferences", "回复使用中文", source="distilled", at="2026-01-05T02:00:00+08:00",
             evidence=("m-a",)),
        line("name-1", "User Preferences", "报告中不要写患者全名", source="distilled", at="2026-01-06T02:00:00+08:00",
             evidence=("m-b",)),
        line("name-2", "User Preferences", "不要写患者全名。", source="distilled", at="2026-03-06T02:00:00+08:00",
             evidence=("m-c",)),
        line("lang-new", "User Preferences", "Answer in English.", source="distilled",
             at="2026-03-07T02:00:00+08:00", evidence=("m-d",)),
    ]
    save_hot(store, "p1", admin + ai + extra)

    # When pruning runs offline
    report = run(make_deps(store, clock=FakeClock(NOW)), "prune", "p1", "2026-03-10")

    # Then: duplicates merged into the newest, superseded dropped, oldest evicted, under the cap
    hot = store.load_hot_memory("p1")
    ids = [ln.line_id for ln in hot.lines]
    assert report.details["compactor"] == "offline" and report.changed
    assert document_tokens(hot.lines) <= 2000
    assert [ln for ln in hot.lines if ln.source == "admin"] == admin
    assert "lang-new" in ids and "lang-old" not in ids
    assert "name-2" in ids and "name-1" not in ids
    assert next(ln for ln in hot.lines if ln.line_id == "name-2").evidence == ["m-c", "m-b"]
    assert "ai-00" not in ids and "ai-14" in ids
    revision = store.get_revision("p1", 2)
    assert revision is not None
    reason = revision.summary.reason or ""
    assert "merged name-2<-name-1" in reason and "superseded lang-old" in reason and "evicted ai-00" in reason


def test_admin_lines_alone_over_the_cap_send_one_alert(store: InMemoryStore) -> None:
    # Given 2,100 tokens of admin lines
    add_project(store)
    admin = [line(f"adm-{i}", "System Rules", filler(i)) for i in range(21)]
    save_hot(store, "p1", admin)
    notifier = InMemoryNotifier()
    deps = make_deps(store, notifier=notifier, clock=FakeClock(NOW))

    # When pruning runs, is delivered twice, and runs again the next day
    reports = [run(deps, "prune", "p1", d) for d in ("2026-03-10", "2026-03-10", "2026-03-11")]

    # Then exactly one alert reached the admins, hot memory untouched
    assert [a.kind for a in notifier.alerts] == ["admin_over_cap"]
    alert = notifier.alerts[0]
    assert alert.project_id == "p1" and "2105 tokens" in alert.message
    assert alert.subject.isascii() and len(alert.subject) <= 99
    assert store.load_hot_memory("p1").lines == admin
    assert reports[0].details["status"] == "admin_over_cap"
    assert reports[0].counts["admin_tokens"] == 2105


def test_failed_alert_delivery_is_sent_again_by_the_retry(store: InMemoryStore) -> None:
    # Given admin lines over the cap and an SNS outage
    add_project(store)
    save_hot(store, "p1", [line(f"adm-{i}", "System Rules", filler(i)) for i in range(21)])
    notifier = InMemoryNotifier(fail=True)
    deps = make_deps(store, notifier=notifier, clock=FakeClock(NOW))

    # When the first attempt fails and the SQS retry runs
    with pytest.raises(RuntimeError):
        run(deps, "prune", "p1", "2026-03-10")
    notifier.fail = False
    run(deps, "prune", "p1", "2026-03-10")

    # Then the alert went out once
    assert len(notifier.alerts) == 1


def test_alert_text_is_byte_capped_without_splitting_characters() -> None:
    # Given an alert with a long multi-byte message and a non-ASCII subject
    alert = Alert(project_id="p1", kind="k", subject="热记忆超限 hot memory over cap " + "x" * 200,
                  message="患者主诉头痛🩺三天" * 50, dedupe_key="k#1")

    # When capped at 22 bytes
    capped = cap_alert(alert, 22)

    # Then the message is the longest whole-character prefix and the subject is short ASCII
    assert capped.message == "患者主诉头痛🩺"
    assert capped.subject.isascii() and utf8_len(capped.subject) <= 99


# ------------------------------------------------------------------------ yearly summaries
def _report(week: str, text: str) -> WeeklyReport:
    return WeeklyReport(project_id="p1", iso_week=week, summary=text, created_at=utc("2026-01-01T00:00:00Z"))


def test_years_beyond_50_weeks_get_one_yearly_summary_each(store: InMemoryStore) -> None:
    # Given a project running since 2024 with reports in 2024, 2025 and 2026
    add_project(store, created_at=utc("2024-01-02T09:00:00+08:00"))
    for week, text in [
        ("2024-W01", "[进度] 01-02 项目启动。 [m-1]"),
        ("2024-W30", "[决策] 07-24 决定增加 S02 中心。 [m-2]\n[问题] 07-25 EDC 同步失败。 [m-3]"),
        ("2024-W52", "[进度] 12-23 累计入组 20 例。 [m-4]"),
        ("2025-W10", "[决策] 03-05 决定暂停筛选间质性肺炎既往史患者。 [m-5]"),
        ("2025-W40", "[进度] 10-01 累计入组 45 例。 [m-6]"),
        ("2026-W05", "[进度] 01-28 累计入组 52 例。 [m-7]"),
    ]:
        store.put_weekly_report(_report(week, text))
    deps = make_deps(store, clock=FakeClock(NOW))

    # When pruning runs on 2026-03-10
    report = run(deps, "prune", "p1", "2026-03-10")

    # Then 2024 and 2025 (complete, partly older than 50 weeks) have one summary each, 2026 none
    summaries = store.load_yearly_summaries("p1")
    assert [(s.year, s.weeks) for s in summaries] == [
        (2024, ["2024-W01", "2024-W30", "2024-W52"]),
        (2025, ["2025-W10", "2025-W40"]),
    ]
    assert summaries[0].summary.splitlines() == [
        "[2024 年度总结] 共 3 周有周报（2024-W01–2024-W52）。",
        "[进度] W01 01-02 项目启动。",
        "[进度] W52 12-23 累计入组 20 例。",
        "[决策] W30 07-24 决定增加 S02 中心。",
        "[问题] W30 07-25 EDC 同步失败。",
    ]
    assert report.counts["yearly_summaries"] == 2

    # and running again (the next day) changes nothing
    before = store.snapshot()
    deps.clock = FakeClock(NOW + timedelta(days=1))
    again = run(deps, "prune", "p1", "2026-03-11")
    assert again.counts["yearly_summaries"] == 0
    assert store.snapshot()["yearly"] == before["yearly"]


def test_a_year_still_inside_the_50_loaded_weeks_is_not_summarised(store: InMemoryStore) -> None:
    # Given a project that started in June 2025
    add_project(store, created_at=utc("2025-06-02T09:00:00+08:00"))
    store.put_weekly_report(_report("2025-W23", "[进度] 06-02 项目启动。 [m-1]"))

    # When pruning runs on 2026-01-05 (all of 2025's weeks are among the 50 loaded ones)
    run(make_deps(store, clock=FakeClock(NOW)), "prune", "p1", "2026-01-05")

    # Then no yearly summary is written yet
    assert store.load_yearly_summaries("p1") == []


def test_rerunning_prune_changes_nothing(store: InMemoryStore) -> None:
    # Given a compacted project
    seeded(store)
    deps = make_deps(store, clock=FakeClock(NOW))
    first = run(deps, "prune", "p1", "2026-03-10")
    before = store.snapshot()

    # When the same run is delivered again
    again = run(deps, "prune", "p1", "2026-03-10")

    # Then nothing changed
    assert first.changed and not again.changed
    assert again.details["already_done"] == "compacted"
    assert store.snapshot() == before
