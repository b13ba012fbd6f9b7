"""Yearly summaries: one complete ISO year of weekly reports condensed into one text, so that
history older than the weeks the chat loads still reaches the prompt.

Pure: the pruning job decides which years are due and stores the result (``YEAR#{yyyy}``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from agent_memory.domain.models import WeeklyReport
from agent_memory.domain.text import truncate_utf8, utf8_len
from agent_memory.history.reports import REPORT_SECTIONS

_PROGRESS = REPORT_SECTIONS[0][1]
#: A report line ``[进度] text [ids]`` (one point of a section).
_POINT = re.compile(r"^\s*\[(" + "|".join(label for _, label in REPORT_SECTIONS) + r")\]\s*[:：]?\s*(.*)$")
#: The trailing ``[message ids]`` of a report line.
_EVIDENCE_TAIL = re.compile(r"\s*\[[^\]\[]*\]\s*$")


class SummaryCaps(Protocol):
    """The byte caps a yearly summary is held to (``JobCaps`` has them)."""

    @property
    def report_point_max_bytes(self) -> int: ...

    @property
    def yearly_summary_max_bytes(self) -> int: ...


def build_yearly_summary(year: int, reports: Sequence[WeeklyReport], caps: SummaryCaps) -> str:
    """An extractive yearly summary from the year's weekly reports (oldest first): the first and
    last progress points, then every decision and problem prefixed with its week, within
    ``caps.yearly_summary_max_bytes`` (whole points, then ``truncate_utf8``)."""
    if not reports:
        return f"[{year} 年度总结] 本年没有周报（项目无归档活动）。"
    weeks = [r.iso_week for r in reports]
    head = f"[{year} 年度总结] 共 {len(reports)} 周有周报（{weeks[0]}–{weeks[-1]}）。"
    progress: list[str] = []
    others: list[str] = []
    for r in reports:
        week = r.iso_week.split("-")[1]
        for raw in r.summary.splitlines():
            m = _POINT.match(raw)
            if not m:
                continue
            label, text = m.group(1), _EVIDENCE_TAIL.sub("", m.group(2)).strip()
            point = truncate_utf8(f"[{label}] {week} {text}", caps.report_point_max_bytes)
            (progress if label == _PROGRESS else others).append(point)
    chosen = ([progress[0], progress[-1]] if len(progress) > 1 else progress) + others
    lines = [head]
    used = utf8_len(head)
    skipped = 0
    for point in chosen:
        if used + utf8_len(point) + 1 > caps.yearly_summary_max_bytes - 80:
            skipped += 1
            continue
        lines.append(point)
        used += utf8_len(point) + 1
    if skipped:
        lines.append(f"……其余 {skipped} 条见各周周报。")
    return truncate_utf8("\n".join(lines), caps.yearly_summary_max_bytes)


__all__ = ["SummaryCaps", "build_yearly_summary"]
