"""Routing score of the rule classifier on labelled intent files (a measuring tool, not a test).

Usage (from the repository root)::

    .venv/bin/python -m tests.support.route_score ../shared/scenarios/intents_dev.jsonl [-v]

A line scores when its message gets exactly the labelled intents AND the history routing the
label names (``true``: one call with history; ``false``: no call with history; ``"split"``: a QC
call without history, then a history call without QC; ``"reject"``: the content is refused before
any routing). Prints, per file: lines, routing accuracy, history-decision accuracy, and the number
of plans where a QC task saw history (must be 0). ``-v`` lists the misses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from agent_memory.chat.intents import RuleIntentClassifier, plan_calls
from agent_memory.domain.models import Intent
from agent_memory.domain.text import content_problem


def route(classifier: RuleIntentClassifier, text: str) -> tuple[set[str], bool | str, bool]:
    """(intents, history decision, qc_saw_history) of ``text``; ("reject") for refused content."""
    if content_problem(text) is not None:
        return set(), "reject", False
    intents = classifier.classify(text).intents
    plans = plan_calls(intents)
    qc_with_history = any(p.load_history and Intent.QC_TASK in p.intents for p in plans)
    if len(plans) == 2:
        history: bool | str = "split"
    else:
        history = plans[0].load_history
    return {i.value for i in intents}, history, qc_with_history


def score(path: Path, verbose: bool = False) -> dict[str, Any]:
    """Score one JSONL file; returns the figures printed by :func:`main`."""
    classifier = RuleIntentClassifier()
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    ok = history_ok = qc_hist = 0
    for row in rows:
        intents, history, leak = route(classifier, row["text"])
        qc_hist += leak
        want_intents = set(row.get("intents") or [])
        hit_history = history == row["history"]
        hit = hit_history and (row["history"] == "reject" or intents == want_intents)
        ok += hit
        history_ok += hit_history
        if verbose and not hit:
            print(f"  MISS want={row['history']}/{sorted(want_intents)} got={history}/{sorted(intents)}: {row['text']}")
    n = len(rows) or 1
    return {
        "file": str(path), "lines": len(rows), "routing": ok / n, "history": history_ok / n, "qc_with_history": qc_hist,
    }


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    for name in (a for a in argv if a != "-v"):
        figures = score(Path(name), verbose)
        print(
            f"{figures['file']}: lines={figures['lines']} routing={figures['routing']:.3f} "
            f"history={figures['history']:.3f} qc_with_history={figures['qc_with_history']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
