"""Defence in depth (docs/architecture.md, "Identifiers"): what the jobs read passes the identifier
firewall again before an extractor, a summary or the LLM sees it, whatever reached the flow log
or the history book before the firewall (or some other way)."""

from __future__ import annotations

import json

from agent_memory.domain.clinical import IdentifierValue
from agent_memory.domain.errors import LLMUnavailable
from agent_memory.domain.models import WeeklyReport
from agent_memory.identifiers import IdentifierFirewall
from tests.fakes import FakeClock, InMemoryStore, InMemorySubjectIdentifiers, ScriptedLLM, project_partition
from tests.unit.jobs.support import add_project, hot_lines, make_deps, run, say, texts, utc

NAME, PHONE, EMAIL = "刘桂兰", "13912345678", "liu.gl@example.com"


def _firewall() -> IdentifierFirewall:
    return IdentifierFirewall(InMemorySubjectIdentifiers({"p1": [IdentifierValue(subject_id="P004", kind="name",
                                                                                 value=NAME)]}))


def _sent(llm: ScriptedLLM) -> str:
    return json.dumps([{"system": r.system, "messages": r.messages} for r in llm.requests], ensure_ascii=False,
                      default=str)


def test_distillation_reads_the_flow_log_without_identifiers() -> None:
    # Given two PI statements of 2026-03-09 stored with a phone, an e-mail and a subject's name
    store = InMemoryStore()
    add_project(store)
    statement = f"以后别在 C3D1 报告里写家属电话 {PHONE} 和邮箱 {EMAIL}。"
    say(store, "p1", "m-1", statement, utc("2026-03-09T10:00:00+08:00"), study_role="PI")
    say(store, "p1", "m-2", f"{NAME}下周复查", utc("2026-03-09T11:00:00+08:00"), study_role="PI")
    llm = ScriptedLLM(LLMUnavailable("down (test)"))  # the request is recorded, then the rules answer
    deps = make_deps(store, llm=llm)
    deps.firewall = _firewall()

    # When the day is distilled
    report = run(deps, "distill", "p1", "2026-03-10")

    # Then neither the LLM request nor the hot-memory line holds them; the clinical code stays
    assert llm.requests and not any(v in _sent(llm) for v in (NAME, PHONE, EMAIL)) and "C3D1" in _sent(llm)
    assert texts(hot_lines(store)) == ["不要在 C3D1 报告里写家属电话 [电话已隐去] 和邮箱 [邮箱已隐去]。"]
    assert report.counts["identifiers_withheld"] == 3


def test_archiving_reads_the_flow_log_without_identifiers() -> None:
    store = InMemoryStore()
    add_project(store)
    say(store, "p1", "m-1", f"决定：{NAME}（P004）C3D1 推迟一周，邮箱 {EMAIL} 已通知", utc("2026-03-04T10:00:00+08:00"))
    llm = ScriptedLLM(LLMUnavailable("down (test)"))
    deps = make_deps(store, llm=llm, clock=FakeClock(utc("2026-03-10T03:00:00+08:00")))
    deps.firewall = _firewall()

    report = run(deps, "archive", "p1", "2026-03-09")

    written = project_partition(store).get_weekly_report("p1", "2026-W10")
    assert written is not None and "P004" in written.summary and "C3D1" in written.summary
    assert NAME not in written.summary and EMAIL not in written.summary
    assert NAME not in _sent(llm) and EMAIL not in _sent(llm)
    assert report.counts["identifiers_withheld"] == 2


def test_a_yearly_summary_is_built_from_reports_without_identifiers() -> None:
    # Given a 2024 weekly report written before the firewall, holding a phone
    store = InMemoryStore()
    add_project(store, created_at=utc("2024-01-02T09:00:00+08:00"))
    store.put_weekly_report(WeeklyReport(project_id="p1", iso_week="2024-W30", created_at=utc("2024-07-29T00:00:00Z"),
                                         summary=f"[决策] 07-24 P004 家属电话 {PHONE} 改为随访联系人。 [m-2]"))
    deps = make_deps(store, clock=FakeClock(utc("2026-03-10T04:00:00+08:00")))

    run(deps, "prune", "p1", "2026-03-10")

    (summary,) = [s for s in store.load_yearly_summaries("p1") if s.year == 2024]
    assert PHONE not in summary.summary and "[电话已隐去]" in summary.summary and "P004" in summary.summary
