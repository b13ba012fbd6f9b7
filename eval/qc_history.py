"""`make eval` section: one message asking for a QC AND about the project's past (eval/qc_history.jsonl,
eval/SETS.md).

Each row is a real chat turn (:func:`eval.anchors.turn_requests`: rule classifier, offline provider,
a history book with a report for every ISO week from 2024-W01 to the last complete week). A row is
right when:

- ``both``: the turn ran a QC context and a history context; every QC context carried no history
  week, and the history contexts carried exactly the labelled weeks of the history part
  (``expected``; null: the newest 50 weeks);
- ``qc``: a QC context ran and no context carried history;
- ``history``: no QC context ran and the turn carried exactly the labelled weeks.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from eval.anchors import expected_weeks, request_weeks, turn_requests
from eval.judgement import rows

FILE = "qc_history.jsonl"


def right(row: dict[str, Any]) -> bool:
    """Whether the turn of ``row`` answered as labelled (see the module docstring)."""
    _, requests = turn_requests(row)
    qc = [r for r in requests if "QC_TASK" in r.metadata.get("intents", [])]
    other = [r for r in requests if r not in qc]
    qc_weeks = sorted({w for r in qc for w in request_weeks(r)})
    weeks = sorted({w for r in other for w in request_weeks(r)})
    label = row["label"]
    if label == "qc":
        return bool(qc) and not qc_weeks and not weeks
    expected = expected_weeks({**row, "history": True})
    if label == "history":
        return not qc and weeks == expected
    return bool(qc) and bool(other) and not qc_weeks and weeks == expected


def run() -> dict[str, Any]:
    """Share of rows right, by label; ids of the misses."""
    good: Counter[str] = Counter()
    total: Counter[str] = Counter()
    wrong: list[str] = []
    for row in rows(FILE):
        total[row["label"]] += 1
        ok = right(row)
        good[row["label"]] += ok
        if not ok:
            wrong.append(row["id"])
    n = sum(total.values())
    return {"rows": n, "accuracy": round(sum(good.values()) / n, 3) if n else None,
            **{f"{k}_right": f"{good[k]}/{total[k]}" for k in sorted(total)}, "wrong": wrong}


def table_rows(result: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """The lines of the `make eval` table for this section (name, value, target)."""
    parts = ", ".join(f"{k[:-6]} {v}" for k, v in result.items() if k.endswith("_right"))
    return [("qc + history: both parts, QC without history", f"{result['accuracy']} ({result['rows']} rows)", "1.0"),
            ("qc + history: by label", parts, "all")]


__all__ = ["run", "right", "table_rows"]
