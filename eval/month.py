"""Replay a labelled month of team chat through the real pipeline and score the distillation.

The month file (format: ``../shared/data/DISTILL_DEV.md``) is replayed on the DynamoDB
repositories (moto in-process, tables from ``template.yaml``), exactly as production writes and
reads it:

1. the project record and the initial hot memory (admin System Rules and distilled lines, each
   with its date and, for preferences, its role tag) are stored as one revision;
2. every message is written with its own timestamp and speaker through the chat path's
   repository (``ChatRepository.record_turn``: a user message with the assistant messages that
   answer it is one turn; message items, flow-log items carrying ``user_id`` and the speaker's
   ``study_role`` from the member list, the session item, the activity markers);
3. the schedule's jobs run in order through ``run_scheduled`` (the worker's job table) with the clock at their scheduled
   local time: distill at 02:00 every day (the day before), archive at 03:00 on Mondays (the
   week before), prune at 04:00 every day; then every job runs again (idempotency).

Scores, by evidence message ids (never by wording), follow DISTILL_DEV.md "How to score". The
provider is the offline one (rule extractor) unless ``provider`` names a real one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEFAULT_MONTH = SHARED / "data" / "distill_dev_month.json"


def expected_path(month: Path) -> Path:
    """The labels beside a month file: ``X.json`` -> ``X_expected.json``."""
    return month.with_name(month.stem + "_expected.json")


def _env() -> None:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "eval", "AWS_SECRET_ACCESS_KEY": "eval", "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1", "POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "ERROR",
        "POWERTOOLS_METRICS_NAMESPACE": "AgentMemoryEval",
    }.items():
        os.environ.setdefault(key, value)
    os.environ.pop("AWS_ENDPOINT_URL", None)


_env()


@dataclass
class Snapshot:
    """Hot memory after one day's distillation: the active lines (as dicts) and the review queue."""

    day: str
    lines: list[dict[str, Any]]
    review: list[dict[str, Any]]


@dataclass
class Replay:
    """What the replay observed."""

    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    final_lines: list[dict[str, Any]] = field(default_factory=list)
    review: list[dict[str, Any]] = field(default_factory=list)
    version_after_first_pass: int = 0
    version_after_second_pass: int = 0
    review_after_second_pass: int = 0
    reports_first: dict[str, str] = field(default_factory=dict)
    reports_second: dict[str, str] = field(default_factory=dict)
    jobs_run: int = 0
    alerts: int = 0


def _local(day: date, at: time, tz: ZoneInfo) -> datetime:
    return datetime.combine(day, at, tz).astimezone(UTC)


def _line_dict(ln: Any) -> dict[str, Any]:
    return {"line_id": ln.line_id, "section": ln.section, "text": ln.text, "source": ln.source,
            "role_tag": ln.role_tag, "evidence": list(ln.evidence)}


@contextmanager
def _stack(provider: str) -> Iterator[tuple[Any, Any, Any]]:
    """moto in-process with the template's tables; yields (job deps, chat repo, admin repo)."""
    import boto3
    from moto import mock_aws

    from agent_memory.config import Settings
    from agent_memory.wiring import build_job_deps
    from infra.template_model import create_tables, load_template
    from tests.fakes import InMemoryNotifier

    with mock_aws():
        names = create_tables(boto3.client("dynamodb"), load_template())
        raw = {"FLOW_LOG_TABLE": names["FlowLogTable"], "MEMORY_TABLE": names["MemoryTable"],
               "SESSIONS_TABLE": names["SessionsTable"], "LLM_PROVIDER": provider}
        if provider == "anthropic":
            boto3.client("secretsmanager").create_secret(
                Name="eval/anthropic", SecretString=os.environ.get("ANTHROPIC_API_KEY", ""))
            raw["ANTHROPIC_SECRET_NAME"] = "eval/anthropic"
            if os.environ.get("ANTHROPIC_BASE_URL"):
                raw["ANTHROPIC_BASE_URL"] = os.environ["ANTHROPIC_BASE_URL"]
        settings = Settings.model_validate(raw)
        deps = build_job_deps(settings, notifier=InMemoryNotifier())
        from agent_memory.adapters.dynamo.admin import AdminRepository
        from agent_memory.adapters.dynamo.chat import ChatRepository

        yield deps, ChatRepository(), AdminRepository()


def _seed(month: dict[str, Any], chat: Any, deps: Any) -> None:
    from agent_memory.adapters.dynamo.members import MemberRepository
    from agent_memory.adapters.dynamo.projects import ProjectRepository as ProjectsRepository
    from agent_memory.domain.models import HotMemory, HotMemoryLine, Member, Project
    from agent_memory.hot_memory.document import document_tokens

    tz = ZoneInfo(month["timezone"])
    pid = month["project_id"]
    initial = month["initial_hot_memory"]
    projects = ProjectsRepository()
    first = min(datetime.fromisoformat(m["at"]) for m in month["messages"])
    projects.put_project(Project(project_id=pid, name=pid, time_zone=month["timezone"],
                                 created_at=first - timedelta(days=90)))
    members = MemberRepository()
    for user_id, user in month.get("users", {}).items():  # the team the distillation reads
        members.put_member(Member(project_id=pid, user_id=user_id, project_role="member",
                                  study_role=user["user_role"], display_name=user.get("name") or user_id,
                                  added_at=first - timedelta(days=90), added_by="eval"))
    lines = [
        HotMemoryLine(
            line_id=ln["id"], section=ln["section"], text=ln["text"], source=ln["source"],
            role_tag=ln.get("user_role") if ln["section"] == "User Preferences" else None,
            created_at=_local(date.fromisoformat(ln["date"]), time(12), tz),
            created_by="admin" if ln["source"] == "admin" else "distiller",
            evidence=[],
        )
        for ln in initial["lines"]
    ]
    as_of = _local(date.fromisoformat(initial["as_of"]), time(23, 59), tz)
    projects.save_hot_memory(HotMemory(project_id=pid, lines=lines), expected_version=0, actor="eval",
                             reason="initial hot memory of the month", now=as_of, tokens=document_tokens(lines))
    _write_messages(month, chat, tz)


def _write_messages(month: dict[str, Any], chat: Any, tz: ZoneInfo) -> None:
    """One ``record_turn`` per user message and the assistant messages after it in its session."""
    from agent_memory.domain.turns import MessageRecord, SessionState, TurnWrite

    pid, users = month["project_id"], month["users"]
    turns: list[list[dict[str, Any]]] = []
    open_turn: dict[str, list[dict[str, Any]]] = {}
    for m in month["messages"]:
        sid = m["session_id"]
        if m["role"] == "user" or sid not in open_turn:
            open_turn[sid] = [m]
            turns.append(open_turn[sid])
        else:
            open_turn[sid].append(m)
    sessions: dict[str, SessionState] = {}
    for turn in turns:
        sid = turn[0]["session_id"]
        records = [
            MessageRecord(
                message_id=m["id"], role=m["role"], content=m["text"], at=datetime.fromisoformat(m["at"]),
                user_id=m.get("user_id"),
                study_role=users.get(m.get("user_id") or "", {}).get("user_role") if m["role"] == "user" else None,
            )
            for m in turn
        ]
        first_at = records[0].at
        state = sessions.get(sid) or SessionState(project_id=pid, session_id=sid, created_by=turn[0].get("user_id"),
                                                 created_at=first_at, updated_at=first_at)
        new_state = state.model_copy(update={
            "window": (state.window + records)[-16:], "updated_at": records[-1].at,
            "message_count": state.message_count + len(records), "version": state.version + 1,
        })
        chat.record_turn(TurnWrite(
            session=new_state, expected_version=state.version, new_messages=records, flow_log=records,
            activity_local_dates=sorted({r.at.astimezone(tz).date().isoformat() for r in records}),
            now=records[-1].at,
        ))
        sessions[sid] = new_state


def _reports(deps: Any, pid: str) -> dict[str, str]:
    from agent_memory.adapters.dynamo.projects import ProjectRepository as ProjectsRepository

    return {r.iso_week: r.summary for r in ProjectsRepository().load_history(pid, limit_weeks=60)}


def replay(month: dict[str, Any], *, provider: str = "offline") -> Replay:
    """Replay ``month`` (see the module docstring); returns what each day left behind."""
    from agent_memory.domain.jobs import JobRequest
    from agent_memory.events.jobs import run_scheduled
    from agent_memory.observability import metrics

    tz = ZoneInfo(month["timezone"])
    pid = month["project_id"]
    days = sorted({datetime.fromisoformat(m["at"]).astimezone(tz).date() for m in month["messages"]})
    first, last = days[0], days[-1]
    last_run = last + timedelta(days=1)
    while last_run.weekday() != 0:  # through the Monday that archives the last week
        last_run += timedelta(days=1)
    out = Replay()
    with _stack(provider) as (deps, chat, admin):
        _seed(month, chat, deps)
        now = [datetime.now(UTC)]
        deps.clock = lambda: now[0]

        def job(name: str, run_date: date, at: time) -> None:
            now[0] = _local(run_date, at, tz)
            run_scheduled(deps, JobRequest(job=name, project_id=pid, date=run_date))
            out.jobs_run += 1

        def one_pass(record: Callable[[date], None] | None) -> None:
            run_date = first + timedelta(days=1)
            while run_date <= last_run:
                job("distill", run_date, time(2))
                if record is not None:
                    record(run_date - timedelta(days=1))
                if run_date.weekday() == 0:
                    job("archive", run_date, time(3))
                job("prune", run_date, time(4))
                run_date += timedelta(days=1)

        def record(day: date) -> None:
            hot = deps.store.load_hot_memory(pid)
            out.snapshots[day.isoformat()] = Snapshot(
                day=day.isoformat(), lines=[_line_dict(ln) for ln in hot.lines],
                review=[{"evidence": list(r.evidence), "reason": r.reason, "detail": r.detail, "text": r.text}
                        for r in admin.list_review(pid, status=None)],
            )

        one_pass(record)
        hot = deps.store.load_hot_memory(pid)
        out.final_lines = [_line_dict(ln) for ln in hot.lines]
        out.version_after_first_pass = hot.version
        out.review = [{"evidence": list(r.evidence), "reason": r.reason, "detail": r.detail, "text": r.text}
                      for r in admin.list_review(pid, status=None)]
        out.reports_first = _reports(deps, pid)
        one_pass(None)
        out.version_after_second_pass = deps.store.load_hot_memory(pid).version
        out.review_after_second_pass = len(admin.list_review(pid, status=None))
        out.reports_second = _reports(deps, pid)
        out.alerts = len(getattr(deps.notifier, "sent", []) or [])
        metrics.clear_metrics()
    return out


# ------------------------------------------------------------------ scoring
def _ids(evidence: Any) -> set[str]:
    return {evidence} if isinstance(evidence, str) else set(evidence)


def _cites(line: dict[str, Any], ids: set[str]) -> bool:
    return bool(ids & (set(line["evidence"]) | {line["line_id"]}))


class _Scorer:
    """The counts behind :func:`score`, one method per figure family; ``misses`` keeps the ids."""

    def __init__(self, month: dict[str, Any], expected: dict[str, Any], rep: Replay) -> None:
        self.month, self.expected, self.rep = month, expected, rep
        self.finals = expected["final_lines"]
        self.final_of: dict[str, set[str]] = {}
        for fl in self.finals:
            for i in _ids(fl["evidence"]):
                self.final_of[i] = _ids(fl["evidence"])
        self.promotes = [(d, p) for d, e in expected["per_day"].items() for p in e.get("promote", [])]
        self.relax_ids = {r["message_id"] for e in expected["per_day"].values() for r in e.get("review_queue", [])}
        self.dup_ids = {d["message_id"] for e in expected["per_day"].values() for d in e.get("duplicates", [])}
        self.speaker_of = {m["id"]: m.get("user_id") for m in month["messages"]}
        self.all_lines: dict[str, dict[str, Any]] = {}
        for snap in rep.snapshots.values():
            for ln in snap.lines:
                self.all_lines.setdefault(ln["line_id"], ln)
        self.misses: dict[str, list[Any]] = {k: [] for k in (
            "not_captured", "wrong_role", "wrong_promotion", "relaxation_promoted", "review_missed", "review_extra",
            "duplicate_added", "replacement_missed", "absent_at_end_kept", "final_line_missing")}

    def _lines_for(self, day: str, message_id: str) -> list[dict[str, Any]]:
        snap = self.rep.snapshots.get(day)
        ids = self.final_of.get(message_id, set()) | {message_id}
        return [ln for ln in (snap.lines if snap else []) if _cites(ln, ids)]

    def _scope_right(self, line: dict[str, Any], promote: dict[str, Any]) -> bool:
        """The line's tag is the labelled role; where the label is the speaker's own study role, the
        speaker's user id is right too (a preference of the speaker alone: "给我", "for me"); so is the
        user id of a member of the labelled role whom the message names by name ("…发给何晓雯": the
        preference of that member alone)."""
        if line["role_tag"] == promote["user_role"]:
            return True
        users = self.month.get("users", {})
        speaker = self.speaker_of.get(promote["message_id"])
        own_role = users.get(speaker or "", {}).get("user_role")
        if speaker is not None and line["role_tag"] == speaker and promote["user_role"] == own_role:
            return True
        named = users.get(line["role_tag"] or "", {})
        text = next((m["text"] for m in self.month["messages"] if m["id"] == promote["message_id"]), "")
        return bool(named.get("name")) and named["name"] in text and named.get("user_role") == promote["user_role"]

    def captures(self) -> dict[str, Any]:
        captured = loose = role_ok = role_total = 0
        for day, p in self.promotes:
            lines = self._lines_for(day, p["message_id"])
            in_section = [ln for ln in lines if ln["section"] == p["section"]]
            loose += bool(in_section)
            if any(p["section"] != "User Preferences" or self._scope_right(ln, p) for ln in in_section):
                captured += 1
            else:
                self.misses["not_captured"].append(p["message_id"])
            if p["section"] == "User Preferences" and in_section:
                role_total += 1
                ok = any(self._scope_right(ln, p) for ln in in_section)
                role_ok += ok
                if not ok:
                    self.misses["wrong_role"].append(p["message_id"])
        total = self.expected["totals"]["directives"]
        return {"directives": total, "captured": captured, "captured_share": round(captured / total, 3),
                "captured_ignoring_role": loose,
                "role_tags_right": round(role_ok / role_total, 3) if role_total else 0.0}

    def wrong_and_relaxed(self) -> dict[str, Any]:
        must_not = set(self.expected["must_not_appear"]) - self.relax_ids
        final_ids = set().union(*(_ids(fl["evidence"]) for fl in self.finals))
        wrong = {i for i, ln in self.all_lines.items() if set(ln["evidence"]) & must_not}
        wrong |= {ln["line_id"] for ln in self.rep.final_lines if not _cites(ln, final_ids)}
        self.misses["wrong_promotion"] = sorted(
            {e for i in wrong for e in self.all_lines.get(i, {"evidence": [i]})["evidence"]})
        admin = {ln["id"]: ln["text"] for ln in self.month["initial_hot_memory"]["lines"] if ln["source"] == "admin"}
        relaxed = {i for i, ln in self.all_lines.items() if set(ln["evidence"]) & self.relax_ids}
        for snap in self.rep.snapshots.values():
            present = {ln["line_id"]: ln["text"] for ln in snap.lines}
            relaxed |= {i for i, text in admin.items() if present.get(i) != text}
        self.misses["relaxation_promoted"] = sorted(relaxed)
        queued = {e for r in self.rep.review for e in r["evidence"]}
        self.misses["review_missed"] = sorted(self.relax_ids - queued)
        self.misses["review_extra"] = sorted(queued - self.relax_ids)
        recall = round(len(self.relax_ids & queued) / len(self.relax_ids), 3) if self.relax_ids else 1.0
        return {"wrong_promotions": len(wrong), "relaxations_promoted": len(relaxed), "review_recall": recall,
                "review_extra": len(self.misses["review_extra"])}

    def duplicates(self) -> dict[str, Any]:
        """A new line whose evidence is a duplicate's id (re-confirming the original line is fine)."""
        seen: set[str] = set()
        added: set[str] = set()
        for day in sorted(self.rep.snapshots):
            for ln in self.rep.snapshots[day].lines:
                dups = set(ln["evidence"]) & self.dup_ids
                originals = set().union(*(self.final_of.get(d, set()) for d in dups)) - self.dup_ids if dups else set()
                if ln["line_id"] not in seen and dups and not _cites(ln, originals):
                    added.add(ln["line_id"])
                seen.add(ln["line_id"])
        self.misses["duplicate_added"] = sorted({e for i in added for e in self.all_lines[i]["evidence"]})
        return {"duplicates_added": len(added)}

    def replacements(self) -> dict[str, Any]:
        replacing = [(d, p) for d, p in self.promotes if p.get("replaces")]
        done = 0
        for day, p in replacing:
            snap = self.rep.snapshots.get(day)
            old_gone = not any(_cites(ln, {p["replaces"]}) for ln in (snap.lines if snap else []))
            if old_gone and len(self._lines_for(day, p["message_id"])) == 1:
                done += 1
            else:
                self.misses["replacement_missed"].append(p["message_id"])
        absent = set(self.expected["must_be_absent_at_end"])
        self.misses["absent_at_end_kept"] = sorted(
            {i for ln in self.rep.final_lines for i in absent if _cites(ln, {i})})
        return {"replacements_done": done, "replacements": len(replacing),
                "absent_at_end_kept": len(self.misses["absent_at_end_kept"])}

    def final(self) -> dict[str, Any]:
        rep = self.rep
        for fl in self.finals:
            ids = _ids(fl["evidence"])
            if not any(_cites(ln, ids) and ln["section"] == fl["section"] for ln in rep.final_lines):
                self.misses["final_line_missing"].append(sorted(ids)[0])
        prefs = [ln for ln in rep.final_lines if ln["section"] == "User Preferences" and ln["source"] != "admin"]
        return {
            "preference_lines_without_role": sum(1 for ln in prefs if not ln["role_tag"]),
            "final_lines_matched": len(self.finals) - len(self.misses["final_line_missing"]),
            "final_ai_lines": sum(1 for ln in rep.final_lines if ln["source"] != "admin"),
            "expected_final_lines": len(self.finals),
            "idempotent": (rep.version_after_first_pass == rep.version_after_second_pass
                           and rep.review_after_second_pass == len(rep.review)
                           and rep.reports_first == rep.reports_second),
            "weekly_reports": len(rep.reports_first),
        }


def score(month: dict[str, Any], expected: dict[str, Any], rep: Replay) -> dict[str, Any]:
    """The figures of DISTILL_DEV.md "How to score" for one replay; ``misses`` lists the ids behind
    each shortfall (ids only, never text)."""
    scorer = _Scorer(month, expected, rep)
    out: dict[str, Any] = {}
    for part in (scorer.captures, scorer.wrong_and_relaxed, scorer.duplicates, scorer.replacements, scorer.final):
        out.update(part())
    out["misses"] = scorer.misses
    return out


def run_month(month_path: Path, *, provider: str = "offline") -> dict[str, Any]:
    """Replay and score one month file (its labels beside it); the figures of :func:`score`."""
    month = json.loads(month_path.read_text("utf-8"))
    expected = json.loads(expected_path(month_path).read_text("utf-8"))
    return score(month, expected, replay(month, provider=provider))


__all__ = ["DEFAULT_MONTH", "Replay", "expected_path", "replay", "run_month", "score"]
