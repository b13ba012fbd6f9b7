"""The hot-memory document: its one token measure, the cap check, its read view and the
provenance of its lines.

The document is the Markdown ``HotMemory.render`` writes (one ``# Section`` per non-empty
section, ``- [TAG] text`` lines). Every cap on it is measured on that text by
:func:`document_tokens`: an editor write, a distillation, a compaction and the read view count
the same tokens. Over the cap a change is refused whole (:func:`check_cap`); nothing is clipped.

Provenance: every line says where it came from (``source`` admin / distilled, ``created_by``,
``created_at``, ``evidence`` message ids). A line an admin writes is an admin line by that admin
(:func:`admin_line`); a line is the same line when its section and its text (role tag included,
whitespace normalised) are the same (:func:`line_key`).
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from agent_memory.domain.errors import OverTokenCap
from agent_memory.domain.models import HotMemory, HotMemoryLine
from agent_memory.domain.text import estimate_tokens

if TYPE_CHECKING:
    from agent_memory.ports import ViewStore


# ------------------------------------------------------------------------ token measure
def document_tokens(lines: Iterable[HotMemoryLine]) -> int:
    """Estimated tokens of the rendered Markdown document holding ``lines`` (the measure of the cap)."""
    return estimate_tokens(HotMemory(project_id="", lines=list(lines)).render())


def admin_only_tokens(hot: HotMemory) -> int:
    """Tokens of the document holding only the admin lines (what no compaction can remove)."""
    return document_tokens(ln for ln in hot.lines if ln.source == "admin")


def check_cap(lines: Iterable[HotMemoryLine], cap: int) -> int:
    """The tokens of the document holding ``lines`` when they are within ``cap``.

    Raises:
        OverTokenCap: over the cap (422); the change is refused whole, nothing is clipped.
    """
    tokens = document_tokens(lines)
    if tokens > cap:
        raise OverTokenCap(
            f"the hot memory would be {tokens} tokens, over the cap of {cap}; nothing was saved "
            "(shorten or delete lines)",
            tokens=tokens,
            cap=cap,
        )
    return tokens


# ---------------------------------------------------------------------------- read view
class MemoryView(BaseModel):
    """The hot memory as the chat injects it (``markdown``) and its lines with provenance:
    ``source`` (admin / distilled), ``created_at``, ``created_by``, ``evidence`` (message ids),
    with the cap it is held to."""

    project_id: str
    version: int = Field(description="hot-memory version; also the ETag (0 = nothing stored yet)")
    tokens: int = Field(description="estimated tokens of the Markdown")
    cap: int = Field(description="the hot-memory token cap (HOT_MEMORY_TOKEN_CAP) every write is held to")
    over_cap: bool = Field(description="tokens > cap (a lowered cap; the pruning job compacts or alerts)")
    updated_at: datetime | None
    updated_by: str | None
    markdown: str
    lines: list[HotMemoryLine]


def document_view(hot: HotMemory, cap: int) -> MemoryView:
    """``hot`` rendered, measured against ``cap`` (tokens) and listed line by line."""
    tokens = document_tokens(hot.lines)
    return MemoryView(
        project_id=hot.project_id,
        version=hot.version,
        tokens=tokens,
        cap=cap,
        over_cap=tokens > cap,
        updated_at=hot.updated_at,
        updated_by=hot.updated_by,
        markdown=hot.render(),
        lines=list(hot.lines),
    )


def project_memory(store: ViewStore, project_id: str, *, cap: int) -> MemoryView:
    """The project's current hot memory, with the token ``cap`` it is held to.

    Raises:
        ProjectNotFound.
    """
    _, hot = store.project_hot_memory(project_id)
    return document_view(hot, cap)


# ----------------------------------------------------------------------------- provenance
def new_id(prefix: str) -> str:
    """A random id ``{prefix}-{12 hex}``."""
    return f"{prefix}-{secrets.token_hex(6)}"


def stable_id(prefix: str, *parts: str) -> str:
    """A deterministic id (``{prefix}-{12 hex}``) so a re-applied merge builds identical items."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:12]
    return f"{prefix}-{digest}"


def normalise_text(text: str) -> str:
    """Whitespace-insensitive form used to recognise an unchanged line (NFC, spaces collapsed)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def tagged_text(text: str, role_tag: str | None) -> str:
    """A line's bullet content exactly as ``HotMemory.render`` writes it (``[TAG] text``)."""
    return f"[{role_tag}] {text}" if role_tag else text


def line_key(line: HotMemoryLine) -> tuple[str, str]:
    """What makes two lines the same line: the section and the normalised bullet content."""
    return line.section, normalise_text(tagged_text(line.text, line.role_tag))


def admin_line(
    *, section: str, text: str, role_tag: str | None, actor: str, now: datetime, evidence: Iterable[str] = ()
) -> HotMemoryLine:
    """A line written by an admin: a new id, ``source="admin"``, ``actor`` as author at ``now``."""
    return HotMemoryLine(
        line_id=new_id("hm"),
        section=section,
        text=text,
        source="admin",
        role_tag=role_tag,
        created_at=now,
        created_by=actor,
        evidence=list(evidence),
    )


__all__ = [
    "MemoryView",
    "admin_line",
    "admin_only_tokens",
    "check_cap",
    "document_tokens",
    "document_view",
    "line_key",
    "new_id",
    "normalise_text",
    "project_memory",
    "stable_id",
    "tagged_text",
]
