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

from agent_memory.domain.errors import IdentifiersRejected
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


#: Withholds identifiers from JSON-like data (a tool result's text, a tool call's input): (data, counts by kind).
DataScrubber = Callable[[Any], tuple[Any, dict[str, int]]]


class ToolSets:
    """Several tool sets as one (specs in the order of the sets; a tool name belongs to one set).

    ``scrub``: applied to every result before it is returned to the loop (English placeholders);
    ``scrub_written``: to the model's own blocks before they are run, kept or sent back
    (:meth:`scrub_blocks`; placeholders in their language). The identifier firewall, so whatever a
    set returns or the model writes, no identifier is sent, run or stored; what they withhold is
    counted in :meth:`redactions`. None = as they are. ``reject_written``: the project's policy is
    ``reject`` (docs/architecture.md, "Identifiers"): a tool call whose input held identifiers is
    not run at all (:meth:`refusal`), as a typed text holding them is refused.
    """

    def __init__(self, sets: Sequence[ToolSet], *, scrub: DataScrubber | None = None,
                 scrub_written: DataScrubber | None = None, reject_written: bool = False) -> None:
        self._sets = list(sets)
        self._scrub = scrub
        self._scrub_written = scrub_written
        self._reject_written = reject_written
        self._refused: dict[str, tuple[str, ...]] = {}
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

    def scrub_blocks(self, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The model's content blocks with identifiers withheld from their text and tool inputs
        (thinking blocks, which the API wants back unchanged, and the ids are kept)."""
        if self._scrub_written is None:
            return content
        out: list[dict[str, Any]] = []
        for block in content:
            field = {"text": "text", "tool_use": "input"}.get(str(block.get("type")))
            if field is None or field not in block:
                out.append(block)
                continue
            clean, withheld = self._scrub_written(block[field])
            self._withheld.update(withheld)
            if withheld and field == "input" and self._reject_written:
                self._refused[str(block.get("id"))] = tuple(sorted(withheld))
            out.append({**block, field: clean} if withheld else block)
        return out

    def refusal(self, tool_use_id: str, name: str) -> str | None:
        """Why the call ``tool_use_id`` (of tool ``name``) is not run: its input held identifiers
        (the kinds, never the values) under the ``reject`` policy; None = run it."""
        kinds = self._refused.get(tool_use_id)
        return None if kinds is None else f"{name} not run: {IdentifiersRejected(kinds).reason}"

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


__all__ = ["COMPACT_RESULT_MAX_BYTES", "DataScrubber", "ToolSet", "ToolSets", "compact_result"]
