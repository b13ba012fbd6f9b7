"""`make eval` sections for the memory's judgement on unseen wording (formats: eval/SETS.md).

Each scorer runs the code a deployment runs, one labelled row at a time:

- directives vs tasks: the chat's rule classifier (:class:`RuleIntentClassifier`) — a standing
  directive must carry no task intent (no report, QC run or data look-up); a task, or a message
  that is both, exactly the labelled task intents — and the distiller's rule extractor (a
  directive or both yields a statement, a task none);
- scope, relaxations, conflicts: one user message of a day through the distillation's rule path
  (:func:`extract_rule_candidates` then :func:`merge_candidates`, as the nightly job runs it
  offline) against a hot memory holding, respectively, nothing, the baseline System Rules, or
  the active line of the row.

Figures only, never message text, leave a scorer besides the ids of the rows it got wrong.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT / "eval"
DAY = "2026-05-12"
SAID_AT = datetime(2026, 5, 12, 3, 0, tzinfo=UTC)
RUN_AT = datetime(2026, 5, 12, 18, 0, tzinfo=UTC)
#: Intents that make a turn do something now (a report, a QC run, a look-up, history).
TASK_INTENTS = frozenset({"QUERY_DATA", "QC_TASK", "GENERATE_REPORT", "QUERY_HISTORY", "ANALYZE_TREND"})


def rows(name: str) -> list[dict[str, Any]]:
    """The rows of ``eval/<name>`` (JSON Lines)."""
    path = EVAL / name
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _share(right: int, total: int) -> float:
    return round(right / total, 3) if total else 1.0


# ------------------------------------------------------------ the distillation's rule path
def _distil(text: str, *, role: str, user_id: str = "u-speaker", lines: Iterable[Any] = ()) -> Any:
    """One user message through the rule extractor and the merge; the :class:`MergeResult`."""
    from agent_memory.domain.jobs import FlowLogEntry
    from agent_memory.domain.models import HotMemory
    from agent_memory.hot_memory.merge import merge_candidates
    from agent_memory.hot_memory.statements import extract_rule_candidates

    entry = FlowLogEntry(message_id="m-eval", session_id="s-eval", role="user", content=text, at=SAID_AT,
                         user_id=user_id, study_role=role)
    hot = HotMemory(project_id="p-eval", lines=list(lines))
    return merge_candidates(hot, extract_rule_candidates([entry]), day_messages={entry.message_id: entry}, day=DAY,
                            now=RUN_AT, max_line_tokens=200)


def _new_lines(result: Any, before: Iterable[Any] = ()) -> list[Any]:
    old = {ln.line_id for ln in before}
    return [ln for ln in result.lines if ln.line_id not in old]


# ------------------------------------------------------------ directives vs tasks
def directives_tasks(name: str = "directives_tasks.jsonl") -> dict[str, Any]:
    """Routing of standing directives, tasks and both (see the module docstring)."""
    from agent_memory.chat.intents import RuleIntentClassifier
    from agent_memory.domain.jobs import FlowLogEntry
    from agent_memory.hot_memory.statements import extract_rule_candidates

    rules = RuleIntentClassifier()
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    found_right: Counter[str] = Counter()
    triggered: Counter[str] = Counter()
    wrong: list[str] = []
    for row in rows(name):
        label = row["label"]
        total[label] += 1
        tasks = {str(i) for i in rules.classify(row["text"]).intents} & TASK_INTENTS
        ok = not tasks if label == "directive" else tasks == set(row["task_intents"])
        right[label] += ok
        if label == "directive" and tasks:
            triggered["|".join(sorted(tasks))] += 1
        entry = FlowLogEntry(message_id="m-eval", session_id="s-eval", role="user", content=row["text"],
                             at=SAID_AT, user_id="u-speaker", study_role=row["speaker_role"])
        statements = [c for c in extract_rule_candidates([entry]) if c.kind != "withdraw"]
        found_right[label] += bool(statements) == (label != "task")
        if not ok:
            wrong.append(row["id"])
    n = sum(total.values())
    return {
        "rows": n, "accuracy": _share(sum(right.values()), n),
        **{f"{label}_right": f"{right[label]}/{total[label]}" for label in ("directive", "task", "both")},
        "directives_triggering_tasks": total["directive"] - right["directive"],
        "triggered_intents": dict(triggered),
        "distiller_right": _share(sum(found_right.values()), n),
        **{f"distiller_{label}_right": f"{found_right[label]}/{total[label]}"
           for label in ("directive", "task", "both")},
        "wrong": wrong,
    }


# ------------------------------------------------------------ scope
def _scope_of(line: Any, speaker: dict[str, str]) -> str:
    """``everyone`` (untagged), ``speaker`` (a tag naming the speaker's user id) or ``role:R``."""
    tag = line.role_tag
    if not tag:
        return "everyone"
    if speaker["user_id"] in tag:
        return "speaker"
    return f"role:{tag}"


def scope(name: str = "scope.jsonl") -> dict[str, Any]:
    """Scope tags of distilled preferences against the labelled scope."""
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    got: Counter[str] = Counter()
    speaker_role_tagged = not_captured = 0
    wrong: list[str] = []
    for row in rows(name):
        exp = row["expected"]
        want = exp["scope"] if exp["scope"] != "role" else f"role:{exp['role']}"
        total[exp["scope"]] += 1
        result = _distil(row["text"], role=row["speaker"]["role"], user_id=row["speaker"]["user_id"])
        prefs = [ln for ln in _new_lines(result) if ln.section == "User Preferences"]
        if not prefs:
            not_captured += 1
            wrong.append(row["id"])
            got["not_captured"] += 1
            continue
        have = _scope_of(prefs[0], row["speaker"])
        got[have if not have.startswith("role:") else (
            "speaker_role" if have == f"role:{row['speaker']['role']}" else "other_role")] += 1
        if exp["scope"] == "speaker" and have == f"role:{row['speaker']['role']}":
            speaker_role_tagged += 1
        ok = have == want
        right[exp["scope"]] += ok
        if not ok:
            wrong.append(row["id"])
    n = sum(total.values())
    return {
        "rows": n, "accuracy": _share(sum(right.values()), n),
        **{f"{k}_right": f"{right[k]}/{total[k]}" for k in ("role", "speaker", "everyone")},
        "speaker_rows_tagged_with_speaker_role": speaker_role_tagged,
        "not_captured": not_captured, "tags_given": dict(got), "wrong": wrong,
    }


# ------------------------------------------------------------ relaxations
def _relaxations_on(language: str, name: str) -> dict[str, Any]:
    from agent_memory.domain.baseline_rules import baseline_rule_lines

    rules = baseline_rule_lines(language, now=datetime(2026, 1, 5, tzinfo=UTC))  # type: ignore[arg-type]
    relax = benign = queued = named_right = named_total = promoted = silent = false_alarms = 0
    wrong: list[str] = []
    for row in rows(name):
        result = _distil(row["text"], role=row["speaker_role"], lines=rules)
        review = [r for r in result.reviews if r.reason in ("relaxes_system_rules", "contradicts_admin_line",
                                                             "targets_admin_line", "proposes_system_rule")]
        added = _new_lines(result, rules)
        if row["relaxes"] is None:
            benign += 1
            false_alarms += bool(review)
            if review:
                wrong.append(row["id"])
            continue
        relax += 1
        queued += bool(review)
        promoted += bool(added)
        silent += not review and not added
        if row["relaxes"] != "*":
            named_total += 1
            named_right += bool(review) and review[0].detail == row["relaxes"]
        if not review or added:
            wrong.append(row["id"])
    return {
        "relaxations": relax, "queued": queued, "recall": _share(queued, relax), "promoted": promoted,
        "missed_nothing_extracted": silent, "rule_named_right": f"{named_right}/{named_total}",
        "benign": benign, "false_alarms": false_alarms, "wrong": wrong,
    }


def relaxations(name: str = "relaxations.jsonl") -> dict[str, Any]:
    """The distiller's relaxation judgement against the Chinese and the English baseline rules."""
    return {language: _relaxations_on(language, name) for language in ("zh", "en")}


# ------------------------------------------------------------ conflicts
def _outcome(result: Any, active: Any) -> str:
    """What the merge did with the new statement: replaced, review, duplicate, added or nothing
    (no statement found: nothing added, the active line kept — right for a restatement)."""
    kept = any(ln.line_id == active.line_id for ln in result.lines)
    new = _new_lines(result, [active])
    if result.reviews:
        return "review"
    if new and not kept:
        return "replaced"
    if new:
        return "added"
    return "duplicate" if result.duplicates else "nothing"


def conflicts(name: str = "conflicts.jsonl") -> dict[str, Any]:
    """Supersession of an active line by a new statement of the same scope."""
    from agent_memory.domain.models import HotMemoryLine

    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    outcomes: dict[str, Counter[str]] = {}
    both_active = 0
    wrong: list[str] = []
    for row in rows(name):
        a = row["active"]
        active = HotMemoryLine(line_id="hm-active", section=a["section"], text=a["text"], source="distilled",
                               role_tag=a["role_tag"], created_at=datetime(2026, 4, 1, tzinfo=UTC),
                               created_by="distiller", evidence=["m-old"], stated_by="u-speaker")
        result = _distil(row["statement"], role=row["speaker_role"], lines=[active])
        outcome = _outcome(result, active)
        label = row["expected"]
        total[label] += 1
        outcomes.setdefault(label, Counter())[outcome] += 1
        ok = {"contradicts": outcome in ("replaced", "review"), "compatible": outcome == "added",
              "duplicate": outcome in ("duplicate", "nothing")}[label]
        both_active += label == "contradicts" and outcome == "added"
        right[label] += ok
        if not ok:
            wrong.append(row["id"])
    n = sum(total.values())
    return {
        "rows": n, "accuracy": _share(sum(right.values()), n),
        **{f"{k}_right": f"{right[k]}/{total[k]}" for k in ("contradicts", "compatible", "duplicate")},
        "contradicting_lines_both_active": both_active,
        "outcomes": {k: dict(v) for k, v in outcomes.items()}, "wrong": wrong,
    }


# ------------------------------------------------------------ statements (standing or not)
def statements(name: str = "fresh/statements.jsonl") -> dict[str, Any]:
    """Standing statements against look-alikes, one message each through the rule path with an
    empty hot memory: a standing row must yield a candidate (``found``) and a line (``promoted``;
    a new value said only as a wish is kept only where it replaces a line, so it may be found and
    not promoted), with the labelled scope when one is given; a look-alike must yield neither."""
    from agent_memory.domain.jobs import FlowLogEntry
    from agent_memory.hot_memory.statements import extract_rule_candidates

    counts: Counter[str] = Counter()
    wrong: list[str] = []
    for row in rows(name):
        entry = FlowLogEntry(message_id="m-eval", session_id="s-eval", role="user", content=row["text"],
                             at=SAID_AT, user_id="u-speaker", study_role=row["speaker_role"])
        found = bool([c for c in extract_rule_candidates([entry]) if c.kind != "withdraw"])
        added = _new_lines(_distil(row["text"], role=row["speaker_role"]))
        if not row["standing"]:
            counts["look_alikes"] += 1
            counts["false_alarms"] += bool(added)
            counts["found_on_look_alikes"] += found
            if added:
                wrong.append(row["id"])
            continue
        counts["standing"] += 1
        counts["found"] += found
        counts["promoted"] += bool(added)
        exp = row.get("scope")
        if exp and added:
            want = exp["scope"] if exp["scope"] != "role" else f"role:{exp['role']}"
            counts["scoped"] += 1
            counts["scope_right"] += _scope_of(added[0], {"user_id": "u-speaker"}) == want
        if not added:
            wrong.append(row["id"])
    return {
        "standing": counts["standing"], "found": f"{counts['found']}/{counts['standing']}",
        "promoted": f"{counts['promoted']}/{counts['standing']}",
        "recall": _share(counts["promoted"], counts["standing"]),
        "scope_right": f"{counts['scope_right']}/{counts['scoped']}",
        "look_alikes": counts["look_alikes"], "false_alarms": counts["false_alarms"],
        "found_on_look_alikes": counts["found_on_look_alikes"], "wrong": wrong,
    }


def table_rows(j: dict[str, Any], suffix: str = "") -> list[tuple[str, Any, str]]:
    """The lines of the `make eval` table for these sections (name, value, target); ``suffix`` is
    added to each section name (" [held out]" for the sets of eval/heldout/)."""
    rows = _table_rows(j)
    for key, label in (("heldout", "held out"), ("fresh", "fresh")):
        if key in j:
            rows += [(f"{name} [{label}]", value, target) for name, value, target in _table_rows(j[key])]
    return rows


def _table_rows(j: dict[str, Any]) -> list[tuple[str, Any, str]]:
    out: list[tuple[str, Any, str]] = _routing_scope_rows(j) if "scope" in j else []
    if "statements" in j:
        st = j["statements"]
        out += [("statements: standing found / promoted", f"{st['found']} / {st['promoted']} = {st['recall']}", "all"),
                ("statements: scope right (promoted rows with a scope)", st["scope_right"], "all"),
                ("statements: look-alikes promoted", f"{st['false_alarms']}/{st['look_alikes']}", "0")]
    for language, rx in j["relaxations"].items():
        out += [
            (f"relaxations [{language} rules]: queued", f"{rx['queued']}/{rx['relaxations']} = {rx['recall']}", "1.0"),
            (f"relaxations [{language} rules]: promoted", rx["promoted"], "0"),
            (f"relaxations [{language} rules]: rule named right", rx["rule_named_right"], "all"),
            (f"relaxations [{language} rules]: false alarms", f"{rx['false_alarms']}/{rx['benign']}", "0"),
        ]
    for key in ("conflicts", "replacements"):
        if key not in j:
            continue
        cf = j[key]
        out += [
            (f"{key}: right", f"{cf['accuracy']} ({cf['rows']} rows)", ">= 0.95"),
            (f"{key}: contradicts / compatible / duplicate", f"{cf['contradicts_right']} / {cf['compatible_right']} / "
             f"{cf['duplicate_right']}", "all"),
            (f"{key}: contradicting lines both active", cf["contradicting_lines_both_active"], "0"),
        ]
    return out


def _routing_scope_rows(j: dict[str, Any]) -> list[tuple[str, Any, str]]:
    dt, sc = j["directives_tasks"], j["scope"]
    return [
        ("directives/tasks: routing right", f"{dt['accuracy']} ({dt['rows']} rows)", "1.0"),
        ("directives/tasks: directive / task / both", f"{dt['directive_right']} / {dt['task_right']} / "
         f"{dt['both_right']}", "all"),
        ("directives/tasks: directives triggering a task", dt["directives_triggering_tasks"], "0"),
        ("directives/tasks: distiller finds the directive", f"{dt['distiller_right']} (directive "
         f"{dt['distiller_directive_right']}, task {dt['distiller_task_right']}, both "
         f"{dt['distiller_both_right']})", "1.0"),
        ("scope: right", f"{sc['accuracy']} ({sc['rows']} rows)", ">= 0.95"),
        ("scope: role / speaker / everyone", f"{sc['role_right']} / {sc['speaker_right']} / {sc['everyone_right']}",
         "all"),
    ]


def _sections(folder: str = "") -> dict[str, Any]:
    return {"directives_tasks": directives_tasks(f"{folder}directives_tasks.jsonl"),
            "scope": scope(f"{folder}scope.jsonl"), "relaxations": relaxations(f"{folder}relaxations.jsonl"),
            "conflicts": conflicts(f"{folder}conflicts.jsonl")}


def _fresh_sections() -> dict[str, Any]:
    """The relaxations and conflicts of eval/fresh/ (written in a later session, before the
    changes made after it; see eval/SETS.md)."""
    out = {"relaxations": relaxations("fresh/relaxations.jsonl"), "conflicts": conflicts("fresh/conflicts.jsonl")}
    if (EVAL / "fresh/statements.jsonl").exists():
        out["statements"] = statements("fresh/statements.jsonl")
    if (EVAL / "fresh/replacements.jsonl").exists():
        # a change said after a complaint naming the current value, in the conflicts format
        out["replacements"] = conflicts("fresh/replacements.jsonl")
    return out


def run() -> dict[str, Any]:
    """Every section of this module on the sets of eval/ (``{"directives_tasks", "scope",
    "relaxations", "conflicts"}``) and the same on the held-out sets of eval/heldout/ (``"heldout"``:
    new sentences written before the second phase of the work and never tuned on)."""
    return {**_sections(), "heldout": _sections("heldout/"), "fresh": _fresh_sections()}


__all__ = ["conflicts", "directives_tasks", "relaxations", "rows", "run", "scope", "statements", "table_rows"]
