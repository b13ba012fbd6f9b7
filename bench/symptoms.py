"""Symptom extraction quality on the DXY consultations.

Each consultation of ``/work/shared/data/dxy_train.jsonl`` is imported as a transcript, in order:
every patient turn goes through the offline :class:`RuleSymptomExtractor` with the doctor's turn
just before it as ``question``, and the facts are folded with :func:`merge_facts` - exactly what
the transcript import does. The final facts are compared with the labels (``explicit_symptoms`` +
``implicit_symptoms``; ``true`` = present, ``false`` = denied; an implicit label overrides an
explicit one of the same name):

- ``symptom_recall_present``: labelled-present symptoms stored as present / labelled present;
- ``symptom_recall_denied``: labelled-denied symptoms stored as denied / labelled denied;
- ``symptom_flip_rate``: labelled symptoms stored with the OPPOSITE status / labelled symptoms
  found at all (the clinically dangerous error);
- ``symptom_precision``: stored facts whose name is labelled with the same status / all stored
  facts. The labels omit many symptoms the text does mention (and our names include TCM / adult
  terms outside the label vocabulary), so this is reported, not a target.

Targets (offline extractor): present recall >= 0.97, denied recall >= 0.98, flips <= 0.005.
Figures are printed for the development part (first 300 consultations), the held-out part (the
rest) and all; ``run()`` returns the figures on all of them.

Run: ``python -m bench.symptoms`` (from the repository root).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "layers" / "shared") not in sys.path:
    sys.path.insert(0, str(ROOT / "layers" / "shared"))

DATA = Path(__file__).resolve().parents[2] / "shared/data/dxy_train.jsonl"
DEV_SIZE = 300
#: Messages of the import are dated in a fixed local time zone (the data carry no dates).
AT_LOCAL = datetime(2026, 3, 10, 9, 0, tzinfo=timezone(timedelta(hours=8)))


@dataclass
class Tally:
    """Counts behind the four figures."""

    present: int = 0
    present_hit: int = 0
    denied: int = 0
    denied_hit: int = 0
    found: int = 0
    flipped: int = 0
    facts: int = 0
    facts_matching: int = 0
    misses: list[tuple[str, str, bool, str | None]] = field(default_factory=list)

    def figures(self) -> dict[str, float]:
        return {
            "symptom_recall_present": self.present_hit / self.present if self.present else 1.0,
            "symptom_recall_denied": self.denied_hit / self.denied if self.denied else 1.0,
            "symptom_flip_rate": self.flipped / self.found if self.found else 0.0,
            "symptom_precision": self.facts_matching / self.facts if self.facts else 1.0,
        }


def load(path: Path = DATA) -> list[dict[str, Any]]:
    """The consultations (one JSON object a line)."""
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def import_consultation(row: dict[str, Any], extractor: Any) -> list[Any]:
    """The session facts after importing ``row`` as a transcript."""
    from agent_memory.consultation.symptoms import merge_facts

    facts: list[Any] = []
    turns = row["turns"]
    for i, turn in enumerate(turns):
        if turn["role"] != "patient":
            continue
        question = turns[i - 1]["content"] if i > 0 and turns[i - 1]["role"] == "doctor" else None
        new = extractor.extract(
            turn["content"], message_id=f"{row['consult_id']}-{i}", at_local=AT_LOCAL, question=question
        )
        facts = merge_facts(facts, new)
    return facts


def score(rows: list[dict[str, Any]], extractor: Any) -> Tally:
    """Tally ``rows`` (see the module docstring)."""
    tally = Tally()
    for row in rows:
        labels: dict[str, bool] = {**row["explicit_symptoms"], **row["implicit_symptoms"]}
        facts = import_consultation(row, extractor)
        stored = {f.name: f.status for f in facts}
        tally.facts += len(facts)
        tally.facts_matching += sum(
            1 for f in facts if f.name in labels and (f.status == "present") == labels[f.name]
        )
        for name, present in labels.items():
            got = stored.get(name)
            if present:
                tally.present += 1
                tally.present_hit += got == "present"
            else:
                tally.denied += 1
                tally.denied_hit += got == "denied"
            if got is not None:
                tally.found += 1
                if (got == "present") != present:
                    tally.flipped += 1
            if got is None or (got == "present") != present:
                tally.misses.append((row["consult_id"], name, present, got))
    return tally


def run(verbose: bool = True) -> dict[str, float]:
    """Score the offline extractor; print dev / held-out / all; return the figures on all."""
    if not DATA.is_file():
        print(f"symptom bench skipped: {DATA} not found")
        return {}
    from agent_memory.consultation.symptoms import RuleSymptomExtractor

    rows = load()
    extractor = RuleSymptomExtractor()
    parts = {
        f"dev (first {min(DEV_SIZE, len(rows))})": rows[:DEV_SIZE],
        f"held-out (last {max(0, len(rows) - DEV_SIZE)})": rows[DEV_SIZE:],
        f"all ({len(rows)})": rows,
    }
    result: dict[str, float] = {}
    for label, part in parts.items():
        figures = score(part, extractor).figures()
        if verbose:
            print(
                f"symptoms {label:<20} present recall {figures['symptom_recall_present']:.4f}  "
                f"denied recall {figures['symptom_recall_denied']:.4f}  "
                f"flip rate {figures['symptom_flip_rate']:.4f}  precision {figures['symptom_precision']:.4f}"
            )
        result = figures
    return result


if __name__ == "__main__":
    run()
