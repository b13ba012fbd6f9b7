"""`make eval`: one table of the memory pipeline's quality figures, written to eval/results.json.

- distillation: a labelled month replayed through the real pipeline (:mod:`eval.month`;
  ``MONTH=path`` selects another month file, its labels ``*_expected.json`` beside it);
- routing: the rule classifier and the call planner on ``../shared/scenarios/intents.jsonl`` and
  ``intents_dev.jsonl`` (a row is right when its intents are the labelled set and history is
  loaded exactly as labelled: a QC + history message split into a QC context without history
  and a history context without QC; a ``reject`` row when the message is refused as empty);
- symptoms: the offline extractor on ``../shared/data/dxy_train.jsonl`` (:mod:`bench.symptoms`);
- identifiers: the identifier scrubber with the subject identifier index on ``eval/identifiers.jsonl``,
  the held-out ``eval/identifiers_holdout.jsonl`` and ``eval/identifiers_fresh.jsonl`` (a set
  written after all tuning; :mod:`eval.identifiers`: exact-span recall per kind, false
  positives, clinical values kept verbatim).
- judgement on unseen wording (eval/SETS.md): time-anchored history questions (:mod:`eval.anchors`:
  the weeks a real turn loads, and the time-anchor resolver), directives vs tasks, scope,
  relaxations against the baseline System Rules and conflicts (:mod:`eval.judgement`); a QC run and
  a history question in one message (:mod:`eval.qc_history`).

Run: ``python -m eval.run [--month PATH] [--label before|after] [--provider offline|anthropic]``.
``--label`` keeps figures of several runs side by side in results.json (one key each).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT / "layers" / "shared", ROOT):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from eval import anchors, judgement, qc_history  # noqa: E402
from eval.month import DEFAULT_MONTH, SHARED, run_month  # noqa: E402

RESULTS = ROOT / "eval" / "results.json"
INTENT_FILES = (SHARED / "scenarios" / "intents.jsonl", SHARED / "scenarios" / "intents_dev.jsonl")


def routing(path: Path) -> dict[str, Any]:
    """Routing accuracy of the rule classifier on one labelled file (see the module docstring)."""
    from agent_memory.chat.intents import RuleIntentClassifier, plan_calls
    from agent_memory.domain.models import Intent
    from agent_memory.domain.text import content_problem

    rules = RuleIntentClassifier()
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    right, qc_with_history, wrong = 0, 0, []
    for row in rows:
        if row["history"] == "reject":
            ok = content_problem(row["text"]) is not None
        else:
            intents = rules.classify(row["text"]).intents
            plans = plan_calls(intents)
            qc_with_history += sum(1 for p in plans if p.load_history and Intent.QC_TASK in p.intents)
            same = set(intents) == {Intent(i) for i in row["intents"]}
            if row["history"] is True:
                ok = same and len(plans) == 1 and plans[0].load_history
            elif row["history"] is False:
                ok = same and not any(p.load_history for p in plans)
            else:
                ok = (same and len(plans) == 2 and Intent.QC_TASK in plans[0].intents and not plans[0].load_history
                      and plans[1].load_history and Intent.QC_TASK not in plans[1].intents)
        right += ok
        if not ok:
            wrong.append(row["text"][:60])
    return {"accuracy": round(right / len(rows), 4) if rows else 1.0, "rows": len(rows),
            "qc_contexts_with_history": qc_with_history, "wrong": wrong}


def symptoms() -> dict[str, float]:
    """The symptom figures of bench/symptoms.py on all DXY consultations."""
    from bench.symptoms import run

    return {k: round(v, 4) for k, v in run(verbose=False).items()}


def identifiers() -> dict[str, dict[str, Any]]:
    """The identifier figures of :mod:`eval.identifiers` on each labelled file present."""
    from eval.identifiers import FRESH, HOLDOUT, MAIN, build_index, score

    index = build_index()
    return {path.name: score(path, index) for path in (MAIN, HOLDOUT, FRESH) if path.is_file()}


def main(argv: list[str] | None = None) -> int:
    """Compute, print and store the figures; exit status 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--month", type=Path, default=DEFAULT_MONTH)
    parser.add_argument("--label", default="current")
    parser.add_argument("--provider", default="offline", choices=("offline", "anthropic", "bedrock"))
    parser.add_argument("--skip-symptoms", action="store_true")
    args = parser.parse_args(argv)
    distill = run_month(args.month, provider=args.provider)
    routes = {path.name: routing(path) for path in INTENT_FILES if path.is_file()}
    symp = {} if args.skip_symptoms else symptoms()
    idents = identifiers()
    judged = judgement.run()
    anchored = anchors.run()
    mixed = qc_history.run()
    rows: list[tuple[str, Any, str]] = [
        ("distill: captured (share of directives)", f"{distill['captured']}/{distill['directives']} "
         f"= {distill['captured_share']}", ">= 0.9"),
        ("distill: captured, role not checked", distill["captured_ignoring_role"], ""),
        ("distill: wrong promotions", distill["wrong_promotions"], "0"),
        ("distill: relaxations promoted", distill["relaxations_promoted"], "0"),
        ("distill: review-queue recall", distill["review_recall"], "1.0"),
        ("distill: review-queue extra items", distill["review_extra"], "(false alarms)"),
        ("distill: duplicates added", distill["duplicates_added"], "0"),
        ("distill: replacements done", f"{distill['replacements_done']}/{distill['replacements']}", "all"),
        ("distill: replaced/withdrawn lines kept at end", distill["absent_at_end_kept"], "0"),
        ("distill: role tags right (preferences)", distill["role_tags_right"], ">= 0.95"),
        ("distill: expected final lines present", f"{distill['final_lines_matched']}/"
         f"{distill['expected_final_lines']}", "all"),
        ("distill: AI lines at end", distill["final_ai_lines"], ""),
        ("distill: idempotent (re-run changes nothing)", distill["idempotent"], "True"),
        ("archive: weekly reports written", distill["weekly_reports"], ""),
    ]
    for name, r in routes.items():
        rows.append((f"routing: {name}", f"{r['accuracy']} ({r['rows']} rows)", "1.0" if name == "intents.jsonl"
                     else ">= 0.98"))
        rows.append((f"routing: {name} QC contexts with history", r["qc_contexts_with_history"], "0"))
    for key, target in (("symptom_recall_present", "no lower than before (0.978)"),
                        ("symptom_recall_denied", "no lower than before (1.0)"),
                        ("symptom_flip_rate", "no higher than before (<= 0.3%)"), ("symptom_precision", "(reported)")):
        if key in symp:
            rows.append((f"symptoms: {key}", symp[key], target))
    for name, f in idents.items():
        rows.append((f"identifiers: {name} recall (exact spans)", f"{f['recall']} ({f['labelled_spans']} spans)",
                     "1.0"))
        rows.append((f"identifiers: {name} by kind", json.dumps(f["recall_by_kind"]), ""))
        rows.append((f"identifiers: {name} false positives", f"{f['false_positives']} ({f['clean_rows']} clean rows)",
                     "0"))
        rows.append((f"identifiers: {name} boundary errors / values lost", f"{f['boundary_errors']} / "
                     f"{f['keep_violations']}", "0 / 0"))
    rows += anchors.table_rows(anchored) + qc_history.table_rows(mixed) + judgement.table_rows(judged)
    width = max(len(r[0]) for r in rows)
    print(f"make eval [{args.label}] month={args.month.name} provider={args.provider}")
    for name, value, target in rows:
        print(f"  {name:<{width}}  {value!s:<28} {target}")
    stored = json.loads(RESULTS.read_text("utf-8")) if RESULTS.is_file() else {}
    stored[args.label] = {"month": args.month.name, "provider": args.provider, "distill": distill,
                          "routing": routes, "symptoms": symp, "identifiers": idents,
                          "anchors": anchored, "qc_history": mixed, "judgement": judged}
    RESULTS.write_text(json.dumps(stored, ensure_ascii=False, indent=1, sort_keys=True) + "\n", "utf-8")
    print(f"misses: {json.dumps(distill['misses'], ensure_ascii=False)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
