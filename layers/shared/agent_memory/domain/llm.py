"""The LLM port: a provider-neutral mirror of the Anthropic Messages API.

Both adapters take an :class:`LLMRequest` and return an :class:`LLMResponse`, so logic
(the ReAct loop, classifiers, extractors) is written once and tested with the offline
provider or a scripted fake.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Provider = Literal["anthropic", "offline"]


@dataclass(frozen=True)
class SystemBlock:
    """One text block of the system prompt. ``cache`` puts an ephemeral prompt-caching
    breakpoint at its end. ``name`` is ours (e.g. ``hot_memory``); it is not sent."""

    name: str
    text: str
    cache: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: name, description and JSON-schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class LLMRequest:
    """A Messages API call.

    ``messages`` are Messages-API dicts (``{"role", "content"}``, content a str or a list
    of blocks, ``cache_control`` allowed on blocks). ``tool_choice`` is a Messages-API dict
    (e.g. ``{"type": "tool", "name": "classify"}`` to force structured output).
    ``deadline`` is a ``time.monotonic()`` value by which the call must have returned.
    ``purpose`` labels the call for metrics (``chat``, ``intent``, ``extract``).
    """

    model: str
    system: list[SystemBlock]
    messages: list[dict[str, Any]]
    max_tokens: int
    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: dict[str, Any] | None = None
    deadline: float | None = None
    purpose: str = "chat"
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class LLMResponse:
    """The reply: content blocks as Messages-API dicts (``text`` / ``tool_use``),
    ``stop_reason`` (``end_turn``, ``tool_use``, ``max_tokens``, ...), token usage and the
    provider that produced it."""

    content: list[dict[str, Any]]
    stop_reason: str
    provider: Provider
    model: str
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """Concatenated text blocks."""
        return "".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        """The ``tool_use`` blocks, in order."""
        return [b for b in self.content if b.get("type") == "tool_use"]


