"""The editor's Markdown: an edited hot-memory document read back into lines.

The format is the one ``HotMemory.render`` writes; the reader is lenient where an admin's typing
may differ (any heading level, any case of a section name, an optional bullet, extra spaces) and
strict where a guess would change the memory (a line outside a section, an unknown section, the
same line twice in a section): those are refused with their line number.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from agent_memory.domain.errors import InvalidInput
from agent_memory.domain.models import HOT_MEMORY_SECTIONS
from agent_memory.hot_memory.document import normalise_text


class DraftLine(BaseModel):
    """One line of an edited document: section, optional role tag, text, source line number."""

    section: str
    role_tag: str | None
    text: str
    content: str
    lineno: int


_HEADING = re.compile(r"^\s*#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s*(.*)$")
_TAG = re.compile(r"^\[([^\[\]\s][^\[\]]{0,31})\]\s*(.*)$")
_SECTIONS = {s.casefold(): s for s in HOT_MEMORY_SECTIONS}


def parse_markdown(markdown: str) -> list[DraftLine]:
    """Parse an edited hot-memory document (the format ``HotMemory.render`` writes).

    ``# Section`` headings (one of :data:`HOT_MEMORY_SECTIONS`, any case) open a section; every
    other non-blank line is one memory line (a leading ``-``/``*``/``+`` bullet is optional), with
    an optional ``[TAG]`` role tag.

    Raises:
        InvalidInput: a line outside any section, an unknown section, or the same line twice in a
            section (each with its line number).
    """
    drafts: list[DraftLine] = []
    section: str | None = None
    seen: dict[tuple[str, str], int] = {}
    text = markdown.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    for lineno, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        heading = _HEADING.match(raw)
        if heading:
            name = heading.group(1).strip()
            canonical = _SECTIONS.get(name.casefold())
            if canonical is None:
                allowed = ", ".join(f"'# {s}'" for s in HOT_MEMORY_SECTIONS)
                raise InvalidInput(f"line {lineno}: unknown section {name[:60]!r}; the sections are {allowed}")
            section = canonical
            continue
        bullet = _BULLET.match(raw)
        content = normalise_text(bullet.group(1) if bullet else raw)
        if not content:
            continue
        if section is None:
            raise InvalidInput(f"line {lineno}: a memory line must come after a '# Section' heading")
        tag_match = _TAG.match(content)
        role_tag, line_text = (tag_match.group(1).strip(), tag_match.group(2).strip()) if tag_match else (None, content)
        if not line_text:
            raise InvalidInput(f"line {lineno}: the line has a role tag but no text")
        key = (section, content)
        if key in seen:
            raise InvalidInput(f"line {lineno}: repeats line {seen[key]} in section '{section}'")
        seen[key] = lineno
        drafts.append(
            DraftLine(section=section, role_tag=role_tag, text=line_text, content=content, lineno=lineno)
        )
    return drafts


__all__ = ["DraftLine", "parse_markdown"]
