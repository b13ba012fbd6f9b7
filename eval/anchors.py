"""`make eval` section: time-anchored history questions (eval/history_anchors.jsonl, eval/SETS.md).

Two figures per file:

- loading: each question is a real chat turn (:func:`handle_message` with the rule classifier,
  the offline provider and the in-memory store) of a project whose history book holds a report
  for every ISO week from 2024-W01 to the last complete week before the row's ``now``, in the
  row's time zone, with the row's hot-memory lines. The weeks the turn's prompts carried (their
  history blocks) must equal the labelled range as stored (a range over 50 weeks: its newest 50);
  a history question without an anchor, the newest 50 weeks; a row whose ``history`` is false,
  none.
- resolver: :func:`agent_memory.history.anchors.resolve_anchor` on every row but a subject's own
  past (those are routed away from history before any anchor matters): its (first, last) ISO
  weeks, or None, against the label.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from eval.judgement import rows

FIRST_REPORT = date(2024, 1, 1)  # Monday of 2024-W01
HISTORY_CAP = 50
_WEEK_HEADER = re.compile(r"^## (\d{4}-W\d{2})\s*$", re.MULTILINE)
_LINE = re.compile(r"^\[(?P<section>[^\]]+)\]\s*(?P<text>.+)$")


def _week(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def _now(row: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(row["now"])


def stored_weeks(row: dict[str, Any]) -> list[str]:
    """The weeks with a report, oldest first: 2024-W01 .. the week before the one holding ``now``."""
    today = _now(row).astimezone(ZoneInfo(row["time_zone"])).date()
    last_monday = today - timedelta(days=today.weekday() + 7)
    out, monday = [], FIRST_REPORT
    while monday <= last_monday:
        out.append(_week(monday))
        monday += timedelta(days=7)
    return out


def expected_weeks(row: dict[str, Any]) -> list[str]:
    """What the turn must load for ``row`` (see the module docstring), oldest first."""
    if not row["history"]:
        return []
    stored = stored_weeks(row)
    if row["expected"] is None:
        return stored[-HISTORY_CAP:]
    first, last = row["expected"]["first"], row["expected"]["last"]
    return [w for w in stored if first <= w <= last][-HISTORY_CAP:]


def _hot_lines(row: dict[str, Any]) -> list[Any]:
    from agent_memory.domain.models import HotMemoryLine

    lines = []
    for i, raw in enumerate(row.get("hot_memory", [])):
        m = _LINE.match(raw)
        section, text = (m["section"], m["text"]) if m else ("Active Context", raw)
        lines.append(HotMemoryLine(line_id=f"hm-{i}", section=section, text=text, source="distilled",
                                   created_at=_now(row) - timedelta(days=3), created_by="distiller"))
    return lines


def turn_requests(row: dict[str, Any]) -> tuple[Any, list[Any]]:
    """One real chat turn of ``row`` (rule classifier, offline provider, in-memory store whose history
    book holds :func:`stored_weeks`): its ``ChatResult`` and the LLM requests it sent."""
    from agent_memory.adapters.llm.offline import OfflineLLM
    from agent_memory.chat.intents import RuleIntentClassifier
    from agent_memory.chat.turn import ChatDeps, handle_message
    from agent_memory.conversation.cache import SessionCache
    from agent_memory.domain.models import HotMemory, Project, WeeklyReport
    from tests.fakes import InMemoryClinicalData, InMemoryStore, ScriptedLLM
    from tests.support.auth import add_member

    now = _now(row)
    store = InMemoryStore()
    store.put_project(Project(project_id="p-eval", name="eval", time_zone=row["time_zone"],
                              created_at=datetime.combine(FIRST_REPORT, datetime.min.time(), ZoneInfo("UTC"))))
    add_member(store, "p-eval", "u-eval", "admin", "PI", "eval")
    store.save_hot_memory(HotMemory(project_id="p-eval", lines=_hot_lines(row)), expected_version=0, actor="eval",
                          reason="eval", now=now - timedelta(days=1), tokens=0)
    for week in stored_weeks(row):
        store.put_weekly_report(WeeklyReport(project_id="p-eval", iso_week=week, summary=f"[进度]: {week} 入组 2 例。",
                                             created_at=now - timedelta(days=1)))
    llm = ScriptedLLM(then=OfflineLLM())
    deps = ChatDeps(store=store, llm=llm, classifier=RuleIntentClassifier(), clinical=InMemoryClinicalData({}),
                    cache=SessionCache(max_messages=50), now=lambda: now, history=store)
    result = handle_message(deps, project_id="p-eval", session_id="s-eval", user_id="u-eval", content=row["text"],
                            patient_id=None, deadline=None)
    return result, llm.requests


def request_weeks(request: Any) -> list[str]:
    """The ISO weeks of the history book one LLM request carried (its system blocks), oldest first."""
    return sorted({w for block in request.system for w in _WEEK_HEADER.findall(block.text)})


def turn_weeks(row: dict[str, Any]) -> list[str]:
    """The ISO weeks the prompts of one real chat turn of ``row`` carried, oldest first."""
    _, requests = turn_requests(row)
    return sorted({w for request in requests for w in request_weeks(request)})


def loading(path: str = "history_anchors.jsonl") -> dict[str, Any]:
    """Share of rows whose turn loaded exactly the labelled weeks, by kind; ids of the misses."""
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    wrong: list[str] = []
    for row in rows(path):
        kind = row["kind"]
        total[kind] += 1
        ok = turn_weeks(row) == expected_weeks(row)
        right[kind] += ok
        if not ok:
            wrong.append(row["id"])
    anchored = sum(total[k] for k in ("relative", "absolute", "event", "milestone"))
    anchored_right = sum(right[k] for k in ("relative", "absolute", "event", "milestone"))
    n = sum(total.values())
    return {"rows": n, "accuracy": round(sum(right.values()) / n, 3),
            "anchored_right": f"{anchored_right}/{anchored}",
            **{f"{k}_right": f"{right[k]}/{total[k]}" for k in sorted(total)}, "wrong": wrong}


def resolver(path: str = "history_anchors.jsonl") -> dict[str, Any]:
    """The resolver's (first, last) or None against the labels of ``eval/<path>`` (subject rows left out)."""
    try:
        from agent_memory.history.anchors import resolve_anchor
    except ImportError:  # before the resolver exists
        return {"rows": 0, "accuracy": None, "note": "no resolver"}
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    wrong: list[str] = []
    for row in rows(path):
        if row["kind"] == "subject_past":
            continue
        got = resolve_anchor(row["text"], _now(row), row["time_zone"], row.get("hot_memory", []))
        have = None if got is None else {"first": got.first, "last": got.last}
        kind = row["kind"]
        total[kind] += 1
        ok = have == row["expected"]
        right[kind] += ok
        if not ok:
            wrong.append(row["id"])
    n = sum(total.values())
    return {"rows": n, "accuracy": round(sum(right.values()) / n, 3) if n else None,
            **{f"{k}_right": f"{right[k]}/{total[k]}" for k in sorted(total)}, "wrong": wrong}


def table_rows(a: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """The lines of the `make eval` table for this section (name, value, target)."""
    ld = a["loading"]
    out: list[tuple[str, Any, str]] = [
        ("anchors: turn loads exactly the labelled weeks", f"{ld['accuracy']} ({ld['rows']} rows)", "1.0"),
        ("anchors: anchored questions loading only their period", ld["anchored_right"], "all"),
    ]
    held = a.get("loading_heldout")
    if held:
        out.append(("anchors: turn loads exactly the labelled weeks [held out]",
                    f"{held['accuracy']} ({held['rows']} rows)", "1.0"))
    for name in ("resolver", "resolver_heldout", "resolver_heldout_b"):
        rs = a.get(name)
        if rs and rs.get("rows"):
            out.append((f"anchors: {name} right", f"{rs['accuracy']} ({rs['rows']} rows)", "1.0"))
    return out


def run() -> dict[str, Any]:
    """This section's figures: ``loading``, ``resolver`` and, when its file exists, ``resolver_heldout``."""
    out = {"loading": loading(), "resolver": resolver()}
    if (Path(__file__).parent / "history_anchors_heldout.jsonl").is_file():
        out["resolver_heldout"] = resolver("history_anchors_heldout.jsonl")
    if (Path(__file__).parent / "heldout" / "history_anchors.jsonl").is_file():
        out["resolver_heldout_b"] = resolver("heldout/history_anchors.jsonl")
        out["loading_heldout"] = loading("heldout/history_anchors.jsonl")
    return out


__all__ = ["expected_weeks", "loading", "request_weeks", "resolver", "run", "stored_weeks", "table_rows",
           "turn_requests", "turn_weeks"]
