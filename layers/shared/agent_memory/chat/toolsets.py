"""Tool sets of the chat loop: the contract every set meets and the composite the loop runs.

A tool set has ``specs`` (its tool definitions) and ``run(name, input) -> (text, is_error)``; the
composite offers the specs of all its sets and sends each call to the set that defines the tool.
A set may also offer ``compact(name, text, answer) -> str`` (what the session window keeps of a
result; default: the result capped at :data:`COMPACT_RESULT_MAX_BYTES`) and ``redactions`` (a
``Counter`` of the values it withheld from the model, by kind).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from agent_memory.domain.llm import ToolSpec
from agent_memory.domain.text import truncate_utf8

#: What the session window keeps of a tool result by default (UTF-8 bytes): the window replays it
#: every turn, so it holds what the answer used, not the raw record (docs/architecture.md,
#: "Clinical data").
COMPACT_RESULT_MAX_BYTES = 1_200


class ToolSet(Protocol):
    """What the loop needs of a tool set."""

    @property
    def specs(self) -> list[ToolSpec]: ...

    def run(self, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]: ...


#: Withholds identifiers from a tool result before the model reads it: (text, counts by kind).
ResultScrubber = Callable[[str], tuple[str, dict[str, int]]]


class ToolSets:
    """Several tool sets as one (specs in the order of the sets; a tool name belongs to one set).

    ``scrub``: applied to every result before it is returned to the loop (the identifier
    firewall: whatever a set returns, the model never reads an identifier); what it withholds is
    counted in :meth:`redactions`. None = results as the sets return them.
    """

    def __init__(self, sets: Sequence[ToolSet], *, scrub: ResultScrubber | None = None) -> None:
        self._sets = list(sets)
        self._scrub = scrub
        self._withheld: Counter[str] = Counter()
        self.specs: list[ToolSpec] = [spec for s in self._sets for spec in s.specs]

    def run(self, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
        """Run ``name`` on the set that defines it; ``(reason, True)`` for an unknown tool."""
        for tool_set in self._sets:
            if any(spec.name == name for spec in tool_set.specs):
                text, is_error = tool_set.run(name, tool_input)
                if self._scrub is not None:
                    text, withheld = self._scrub(text)
                    self._withheld.update(withheld)
                return text, is_error
        return f"unknown tool {name}", True

    def compact(self, name: str, text: str, answer: str = "") -> str:
        """The window's form of a result of ``name`` (see :func:`compact_result`)."""
        for tool_set in self._sets:
            if any(spec.name == name for spec in tool_set.specs):
                return compact_result(tool_set, name, text, answer)
        return truncate_utf8(text, COMPACT_RESULT_MAX_BYTES)

    def redactions(self) -> Counter[str]:
        """Values withheld so far by every set and by ``scrub``, by kind."""
        total: Counter[str] = Counter(self._withheld)
        for tool_set in self._sets:
            counts = getattr(tool_set, "redactions", None)
            if isinstance(counts, Counter):
                total.update(counts)
        return total


def compact_result(tool_set: ToolSet, name: str, text: str, answer: str = "") -> str:
    """What the session window keeps of a result: the set's own ``compact(name, text, answer)``
    when it has one (``answer``: the reply, so what it used is kept first), else ``text`` capped
    at :data:`COMPACT_RESULT_MAX_BYTES`."""
    compact = getattr(tool_set, "compact", None)
    if callable(compact):
        return str(compact(name, text, answer))
    return truncate_utf8(text, COMPACT_RESULT_MAX_BYTES)


__all__ = ["COMPACT_RESULT_MAX_BYTES", "ResultScrubber", "ToolSet", "ToolSets", "compact_result"]
