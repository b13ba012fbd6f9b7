"""Pure operations on the hot-memory document: merging distilled candidates, validating and
building compactions (the daily distillation and the pruning job apply them).

Invariants every function here keeps:
- admin lines are never changed, moved out or removed by the AI (byte-identical);
- every line knows where it came from (``source``, ``created_by``, ``created_at``, ``evidence``);
- nothing is clipped: a result over the token cap is rejected as a whole.
No I/O: callers read and save through the repository.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agent_memory.domain.jobs import AI_SECTIONS, SYSTEM_RULES, Candidate, FlowLogEntry, ReviewItem
from agent_memory.domain.models import HotMemory, HotMemoryLine
from agent_memory.domain.text import estimate_tokens
from agent_memory.hot_memory.analysis import (
    Analysis,
    analyse,
    contradicts,
    is_duplicate,
    languages_present,
    supersedes,
)
from agent_memory.hot_memory.document import document_tokens, stable_id
from agent_memory.hot_memory.statements import relaxes_system_rules

DISTILLER = "distiller"
PRUNER = "pruner"


def _line_json(line: HotMemoryLine) -> str:
    return line.model_dump_json()


# ------------------------------------------------------------------- merge
@dataclass
class MergeResult:
    """What merging one day's candidates into hot memory would do.

    ``lines`` is the new document (equal to the input lines when nothing changed);
    ``added`` / ``replaced`` (old id -> new id) / ``removed`` (extra lines on a replaced
    subject) list line ids; ``duplicates`` counts candidates already present;
    ``reviews`` are held for an admin; ``rejected`` counts rejections by reason
    (``ungrounded``, ``language``, ``invalid``).
    """

    lines: list[HotMemoryLine]
    added: list[str] = field(default_factory=list)
    replaced: dict[str, str] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    duplicates: int = 0
    reviews: list[ReviewItem] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    evidence: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when the document differs from the input (a line added, replaced or removed)."""
        return bool(self.added or self.replaced or self.removed)


def merge_candidates(
    hot: HotMemory,
    candidates: Sequence[Candidate],
    *,
    day_messages: Mapping[str, FlowLogEntry],
    day: str,
    now: datetime,
    max_line_tokens: int,
) -> MergeResult:
    """Merge candidates (oldest statement first) into a copy of ``hot.lines``.

    Per candidate, in this order:
    1. grounding: every evidence id must be a USER message of the processed day, else
       rejected ``ungrounded`` (the AI never writes what no user said);
    2. shape: a known AI section, non-empty, at most ``max_line_tokens``, else ``invalid``;
       a proposed ``System Rules`` line goes to review (admins own that section);
    3. language: the candidate's language must be one its evidence is written in, else
       ``language`` (Chinese stays Chinese);
    4. admin guard: relaxing the System Rules, targeting an admin line, contradicting one or
       changing one of its details -> review queue, never applied (admins own their lines);
    5. duplicate of any line (or of one added earlier in this merge) -> counted, the existing
       line keeps its provenance;
    6. same subject as AI lines (contradiction, a changed detail of the same statement, a
       different reply language, or the LLM's ``replace``) -> the first such line is replaced
       in place and the others removed, so exactly one line holds the subject (newer wins);
    7. otherwise added at the end.

    Deterministic: the same inputs give byte-identical lines (ids are content hashes).
    """
    lines = list(hot.lines)
    result = MergeResult(lines=lines)
    for cand in sorted(candidates, key=lambda c: c.order):
        text = " ".join(cand.text.split())
        evidence = list(dict.fromkeys(cand.evidence))
        if not evidence or any(e not in day_messages or day_messages[e].role != "user" for e in evidence):
            result.rejected["ungrounded"] += 1
            continue
        if cand.section == SYSTEM_RULES:
            result.reviews.append(_review(hot.project_id, cand, text, evidence, day, now, "proposes_system_rule", None))
            continue
        if cand.section not in AI_SECTIONS or not text or estimate_tokens(text) > max_line_tokens:
            result.rejected["invalid"] += 1
            continue
        info = analyse(text)
        spoken: set[str] = set()
        for e in evidence:
            spoken |= languages_present(day_messages[e].content)
        if info.language != "other" and spoken and info.language not in spoken:
            result.rejected["language"] += 1
            continue

        admin = [ln for ln in lines if ln.source == "admin"]
        target = next((ln for ln in lines if cand.replaces and ln.line_id == cand.replaces), None)
        if relaxes_system_rules(text):
            result.reviews.append(_review(hot.project_id, cand, text, evidence, day, now, "relaxes_system_rules", None))
            continue
        if target is not None and target.source == "admin":
            result.reviews.append(
                _review(hot.project_id, cand, text, evidence, day, now, "targets_admin_line", target.line_id)
            )
            continue
        clash = next((ln for ln in admin if _conflicts(info, analyse(ln.text))), None)
        if clash is not None:
            result.reviews.append(
                _review(hot.project_id, cand, text, evidence, day, now, "contradicts_admin_line", clash.line_id)
            )
            continue
        if any(is_duplicate(info, analyse(ln.text)) for ln in lines):
            result.duplicates += 1
            continue

        section = cand.section
        new_line = HotMemoryLine(
            line_id=stable_id("hm", hot.project_id, text, *evidence),
            section=section,
            text=text,
            source="distilled",
            role_tag=cand.role_tag if section == "User Preferences" else None,
            created_at=now,
            created_by=DISTILLER,
            evidence=evidence,
        )
        same_subject = [
            ln
            for ln in lines
            if ln.source != "admin" and (ln is target or _conflicts(info, analyse(ln.text)))
        ]
        if same_subject:
            first = same_subject[0]
            index = lines.index(first)
            lines[index] = new_line
            for extra in same_subject[1:]:
                lines.remove(extra)
                result.removed.append(extra.line_id)
            if first.line_id in result.added:  # replaced a line added earlier in this merge
                result.added[result.added.index(first.line_id)] = new_line.line_id
            else:
                result.replaced[first.line_id] = new_line.line_id
        else:
            lines.append(new_line)
            result.added.append(new_line.line_id)
        result.evidence.extend(e for e in evidence if e not in result.evidence)
    return result


def _conflicts(candidate: Analysis, line: Analysis) -> bool:
    """Same subject, different content: a contradiction or a changed detail (newer wins)."""
    return contradicts(candidate, line) or supersedes(candidate, line)


def _review(
    project_id: str,
    cand: Candidate,
    text: str,
    evidence: list[str],
    day: str,
    now: datetime,
    reason: str,
    detail: str | None,
) -> ReviewItem:
    return ReviewItem(
        project_id=project_id,
        review_id=stable_id("rv", text, *evidence),
        day=day,
        text=text,
        section=cand.section,
        role_tag=cand.role_tag,
        evidence=evidence,
        reason=reason,  # type: ignore[arg-type]
        detail=detail,
        origin=cand.origin,
        created_at=now,
    )


# -------------------------------------------------------------- compaction
@dataclass
class Compaction:
    """A proposed compacted document and what it did to the AI lines.

    ``merged``: kept or new line id -> the AI line ids folded into it; ``superseded``: older
    AI lines dropped because a newer AI line holds their subject; ``evicted``: oldest AI lines
    dropped to get under the cap; ``reworded``: AI lines replaced by a shorter wording.
    """

    lines: list[HotMemoryLine]
    merged: dict[str, list[str]] = field(default_factory=dict)
    superseded: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    reworded: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """The revision reason's body: which lines were merged, superseded, evicted, reworded."""
        parts = []
        if self.merged:
            parts.append("merged " + "; ".join(f"{k}<-{','.join(v)}" for k, v in self.merged.items()))
        if self.superseded:
            parts.append("superseded " + ",".join(self.superseded))
        if self.evicted:
            parts.append("evicted " + ",".join(self.evicted))
        if self.reworded:
            parts.append("reworded " + ",".join(self.reworded))
        return "; ".join(parts) or "no AI line changed"


def validate_compaction(before: HotMemory, after: Sequence[HotMemoryLine], cap_tokens: int) -> tuple[list[str], int]:
    """Check a compacted document (nothing clipped, admin lines byte-identical). Returns
    ``(problems, tokens)``; no problems = valid.

    Problems: ``admin_line_dropped:{id}``, ``admin_line_changed:{id}`` (any byte of the line,
    text or provenance), ``admin_line_added:{id}``, ``ai_line_in_system_rules:{id}``,
    ``duplicate_line_id:{id}``, ``empty_line:{id}``, ``over_cap`` (rendered tokens > cap).
    """
    problems: list[str] = []
    by_id: dict[str, HotMemoryLine] = {}
    for ln in after:
        if ln.line_id in by_id:
            problems.append(f"duplicate_line_id:{ln.line_id}")
        by_id[ln.line_id] = ln
    admin_before = {ln.line_id: ln for ln in before.lines if ln.source == "admin"}
    for line_id, ln in admin_before.items():
        kept = by_id.get(line_id)
        if kept is None:
            problems.append(f"admin_line_dropped:{line_id}")
        elif _line_json(kept) != _line_json(ln):
            problems.append(f"admin_line_changed:{line_id}")
    for ln in after:
        if ln.source == "admin" and ln.line_id not in admin_before:
            problems.append(f"admin_line_added:{ln.line_id}")
        if ln.source != "admin" and ln.section == SYSTEM_RULES:
            problems.append(f"ai_line_in_system_rules:{ln.line_id}")
        if not ln.text.strip():
            problems.append(f"empty_line:{ln.line_id}")
    tokens = document_tokens(after)
    if tokens > cap_tokens:
        problems.append("over_cap")
    return problems, tokens


def compact_offline(hot: HotMemory, cap_tokens: int) -> Compaction:
    """The offline compactor (no LLM, or its reply unusable): merge duplicate AI lines (the
    newest stays and collects the evidence), drop AI lines superseded by a newer AI line on the
    same subject, then, while over the cap, evict the oldest AI lines. Admin lines are untouched
    and keep their positions. Deterministic."""
    ai = sorted((ln for ln in hot.lines if ln.source != "admin"), key=lambda ln: (ln.created_at, ln.line_id))
    newest_first = list(reversed(ai))
    keep: dict[str, HotMemoryLine] = {}
    comp = Compaction(lines=[])
    for ln in newest_first:
        info = analyse(ln.text)
        dup_of = next((k for k in keep.values() if is_duplicate(info, analyse(k.text))), None)
        if dup_of is not None:
            merged_evidence = list(dict.fromkeys([*dup_of.evidence, *ln.evidence]))
            keep[dup_of.line_id] = dup_of.model_copy(update={"evidence": merged_evidence})
            comp.merged.setdefault(dup_of.line_id, []).append(ln.line_id)
            continue
        if any(_conflicts(info, analyse(k.text)) for k in keep.values()):
            comp.superseded.append(ln.line_id)
            continue
        keep[ln.line_id] = ln
    lines = [keep.get(ln.line_id, ln) for ln in hot.lines if ln.source == "admin" or ln.line_id in keep]
    for victim in sorted(keep.values(), key=lambda ln: (ln.created_at, ln.line_id)):
        if document_tokens(lines) <= cap_tokens:
            break
        lines = [ln for ln in lines if ln.line_id != victim.line_id]
        comp.evicted.append(victim.line_id)
    comp.lines = lines
    return comp


def build_llm_compaction(
    hot: HotMemory, proposed: Sequence[Mapping[str, object]], *, now: datetime
) -> Compaction:
    """Turn the LLM compactor's proposed lines into a document (validated separately).

    Each proposed line has ``text``, ``section``, optional ``line_id`` (an existing line kept
    or reworded), ``role_tag`` and ``merged_from`` (AI line ids folded into it). A line that
    repeats an existing line exactly (id and text) is that line, unchanged; an admin id keeps
    ``source="admin"`` with the proposed text, so a reworded admin line is caught by
    :func:`validate_compaction`; any other line is a new distilled line (``created_by=pruner``)
    whose evidence is the union of the lines it replaces.
    """
    by_id = {ln.line_id: ln for ln in hot.lines}
    comp = Compaction(lines=[])
    used: set[str] = set()
    for raw in proposed:
        line_id = str(raw.get("line_id") or "")
        text = " ".join(str(raw.get("text") or "").split())
        section = str(raw.get("section") or "")
        role_tag = raw.get("role_tag")
        merged_from = [str(x) for x in raw.get("merged_from") or [] if str(x) in by_id]  # type: ignore[attr-defined]
        original = by_id.get(line_id)
        if original is not None and not merged_from and text == original.text and section == original.section:
            comp.lines.append(original)
            used.add(line_id)
            continue
        if original is not None and original.source == "admin":
            comp.lines.append(original.model_copy(update={"text": text, "section": section}))
            used.add(line_id)
            continue
        sources = [by_id[i] for i in dict.fromkeys(([line_id] if original else []) + merged_from)]
        evidence = list(dict.fromkeys(e for s in sources for e in s.evidence))
        new_id = stable_id("hm", hot.project_id, "compact", text, *[s.line_id for s in sources])
        comp.lines.append(
            HotMemoryLine(
                line_id=new_id,
                section=section,
                text=text,
                source="distilled",
                role_tag=str(role_tag) if isinstance(role_tag, str) and role_tag else None,
                created_at=now,
                created_by=PRUNER,
                evidence=evidence,
            )
        )
        if sources:
            comp.merged[new_id] = [s.line_id for s in sources]
            if original is not None and not merged_from:
                comp.reworded.append(original.line_id)
        used.update(s.line_id for s in sources)
    comp.evicted = [ln.line_id for ln in hot.lines if ln.source != "admin" and ln.line_id not in used]
    return comp


__all__ = [
    "Compaction",
    "MergeResult",
    "build_llm_compaction",
    "compact_offline",
    "merge_candidates",
    "validate_compaction",
]
