"""Identifier scrubber figures on a labelled file (``make eval`` section "identifiers").

Each row of ``eval/identifiers.jsonl`` (and ``identifiers_holdout.jsonl``, ``identifiers_fresh.jsonl``) is
``{"id", "lang", "text", "withhold": [[span, kind] | [span, kind, subject]], "keep": [str]}``:
the spans to withhold (the n-th listing of the same string is its n-th occurrence), and clinical
values that must pass verbatim. The subject identifier index is built from
``eval/identifiers_subjects.json`` (REDCap metadata rows and records) exactly as at run time.

Figures (exact spans: a withheld span counts only with the labelled start and end):

- ``recall``: labelled spans withheld exactly, overall and per kind; ``covered``: labelled spans
  inside a withheld span (nothing of them leaks, boundaries aside);
- ``false_positives``: withheld spans that overlap no labelled span (clean text withheld);
  ``boundary_errors``: withheld spans overlapping a labelled one without matching it;
- ``keep_violations``: ``keep`` values not found verbatim in the scrubbed text;
- ``kind_right`` / ``subject_right``: among exact spans, the kind / the subject as labelled.

Run: ``python -m eval.identifiers [FILE] [-v]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT / "layers" / "shared", ROOT):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from agent_memory.domain.clinical import DataDictionary, FieldDef, subject_identifier_values  # noqa: E402
from agent_memory.domain.redaction import scrub  # noqa: E402
from agent_memory.identifiers.index import IdentifierIndex  # noqa: E402

EVAL = ROOT / "eval"
MAIN = EVAL / "identifiers.jsonl"
HOLDOUT = EVAL / "identifiers_holdout.jsonl"
#: Written after the tuning on MAIN and HOLDOUT, by another engineer, and scored untuned.
FRESH = EVAL / "identifiers_fresh.jsonl"
SUBJECTS = EVAL / "identifiers_subjects.json"


def build_index(path: Path = SUBJECTS) -> IdentifierIndex:
    """The subject identifier index of the synthetic REDCap roster at ``path``."""
    data = json.loads(path.read_text("utf-8"))
    dd = DataDictionary(fields=tuple(FieldDef.from_metadata(r) for r in data["metadata"]))
    return IdentifierIndex(subject_identifier_values(dd, data["records"]))


def _labelled(row: dict[str, Any]) -> list[tuple[int, int, str, str | None]]:
    """(start, end, kind, subject) of each labelled span of a row."""
    out: list[tuple[int, int, str, str | None]] = []
    seen: Counter[str] = Counter()
    for item in row["withhold"]:
        span, kind = item[0], item[1]
        at = -1
        for _ in range(seen[span] + 1):
            at = row["text"].index(span, at + 1)
        seen[span] += 1
        out.append((at, at + len(span), kind, item[2] if len(item) > 2 else None))
    return out


def score(path: Path, index: IdentifierIndex | None = None) -> dict[str, Any]:
    """The figures of the module docstring on the labelled file at ``path``."""
    index = index if index is not None else build_index()
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    per_kind: dict[str, Counter[str]] = {}
    totals: Counter[str] = Counter()
    misses: list[str] = []
    wrong: list[str] = []
    for row in rows:
        result = scrub(row["text"], known=index.find)
        got = {(s.start, s.end): s for s in result.spans}
        labels = _labelled(row)
        for start, end, kind, subject in labels:
            c = per_kind.setdefault(kind, Counter())
            c["n"] += 1
            hit = got.get((start, end))
            c["exact"] += hit is not None
            c["covered"] += any(s.start <= start and end <= s.end for s in result.spans)
            if hit is None:
                misses.append(f"{row['id']}: {kind} {row['text'][start:end]!r}")
                continue
            totals["kind_right"] += hit.kind == kind
            if hit.kind != kind or (subject is not None and hit.subject != subject):
                wrong.append(f"{row['id']}: labelled {kind}/{subject} got {hit.kind}/{hit.subject} "
                             f"{row['text'][start:end]!r}")
            totals["with_subject"] += subject is not None
            totals["subject_right"] += subject is not None and hit.subject == subject
        for s in result.spans:
            if (s.start, s.end) in {(a, b) for a, b, _k, _s in labels}:
                continue
            overlaps = any(s.start < b and a < s.end for a, b, _k, _s in labels)
            totals["boundary_errors" if overlaps else "false_positives"] += 1
            wrong.append(f"{row['id']}: {'boundary' if overlaps else 'FP'} {s.kind} {row['text'][s.start:s.end]!r}")
        for value in row["keep"]:
            if value not in result.text:
                totals["keep_violations"] += 1
                wrong.append(f"{row['id']}: keep {value!r} lost")
    n = sum(c["n"] for c in per_kind.values())
    exact = sum(c["exact"] for c in per_kind.values())
    return {
        "rows": len(rows), "clean_rows": sum(1 for r in rows if not r["withhold"]), "labelled_spans": n,
        "recall": round(exact / n, 4) if n else 1.0,
        "covered": round(sum(c["covered"] for c in per_kind.values()) / n, 4) if n else 1.0,
        "recall_by_kind": {k: f"{c['exact']}/{c['n']}" for k, c in sorted(per_kind.items())},
        "false_positives": totals["false_positives"], "boundary_errors": totals["boundary_errors"],
        "keep_violations": totals["keep_violations"],
        "kind_right": f"{totals['kind_right']}/{exact}",
        "subject_right": f"{totals['subject_right']}/{totals['with_subject']}",
        "misses": misses, "wrong": wrong,
    }


def main(argv: list[str] | None = None) -> int:
    """Print the figures of one file (``-v``: every miss and wrong span)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=MAIN)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    figures = score(args.path)
    for key, value in figures.items():
        if key not in ("misses", "wrong"):
            print(f"{key}: {value}")
    if args.verbose:
        for line in figures["misses"] + figures["wrong"]:
            print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
