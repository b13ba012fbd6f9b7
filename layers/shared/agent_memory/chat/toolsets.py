"""Tool sets of the chat loop: the contract every set meets and the composite the loop runs.

A tool set has ``specs`` (its tool definitions) and ``run(name, input) -> (text, is_error)``; the
composite offers the specs of all its sets and sends each call to the set that defines the tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from agent_memory.domain.llm import ToolSpec


class ToolSet(Protocol):
    """What the loop needs of a tool set."""

    @property
    def specs(self) -> list[ToolSpec]: ...

    def run(self, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]: ...


class ToolSets:
    """Several tool sets as one (specs in the order of the sets; a tool name belongs to one set)."""

    def __init__(self, sets: Sequence[ToolSet]) -> None:
        self._sets = list(sets)
        self.specs: list[ToolSpec] = [spec for s in self._sets for spec in s.specs]

    def run(self, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
        """Run ``name`` on the set that defines it; ``(reason, True)`` for an unknown tool."""
        for tool_set in self._sets:
            if any(spec.name == name for spec in tool_set.specs):
                return tool_set.run(name, tool_input)
        return f"unknown tool {name}", True


__all__ = ["ToolSet", "ToolSets"]
