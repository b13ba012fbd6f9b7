"""Compaction of the hot-memory document (the pruning job, and a distillation over the cap):
validating a proposed document and building one, offline or from the LLM's proposal.

Invariants: admin lines are never changed, moved out or removed (byte-identical); every line
knows where it came from; nothing is clipped: a result over the token cap is rejected as a whole.
No I/O: callers read and save through the repository.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agent_memory.domain.jobs import SYSTEM_RULES
from agent_memory.domain.models import HotMemory, HotMemoryLine
from agent_memory.hot_memory.analysis import analyse, conflicts, is_duplicate
from agent_memory.hot_memory.document import document_tokens, stable_id

PRUNER = "pruner"


def _line_json(line: HotMemoryLine) -> str:
    return line.model_dump_json()


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
        if any(conflicts(info, analyse(k.text)) for k in keep.values()):
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
        folded = raw.get("merged_from")
        merged_from = [str(x) for x in folded if str(x) in by_id] if isinstance(folded, list | tuple) else []
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


__all__ = ["PRUNER", "Compaction", "build_llm_compaction", "compact_offline", "validate_compaction"]
