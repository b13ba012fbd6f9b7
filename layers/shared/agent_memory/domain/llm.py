"""The LLM port: a provider-neutral mirror of the Anthropic Messages API.

Both adapters take an :class:`LLMRequest` and return an :class:`LLMResponse`, so logic
(the ReAct loop, classifiers, extractors) is written once and tested with the offline
provider or a scripted fake.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Provider = Literal["anthropic", "bedrock", "offline"]

#: How much effort the model puts into a reply (the Messages API's ``output_config.effort``).
Effort = Literal["low", "medium", "high", "xhigh", "max"]


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
    #: JSON schema of a structured output (``output_config.format``): the reply's text is ONE
    #: JSON document matching it. Current models reject a forced ``tool_choice``; structured
    #: calls use this instead and validate the text with their Pydantic model.
    output_schema: dict[str, Any] | None = None
    #: ``output_config.effort``; None = the model's default.
    effort: Effort | None = None
    deadline: float | None = None
    purpose: str = "chat"
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Usage:
    """Tokens of one or more Messages-API calls, as the provider reported them (None offline).

    ``input_tokens`` excludes the cached parts: the prompt is ``input_tokens +
    cache_creation_input_tokens + cache_read_input_tokens`` tokens.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        """The four counts by their Messages-API names."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


@dataclass
class LLMResponse:
    """The reply: content blocks as Messages-API dicts EXACTLY as received (``thinking`` with its
    ``signature``, ``redacted_thinking``, ``text``, ``tool_use``: a tool loop sends them back
    unchanged), ``stop_reason`` (``end_turn``, ``tool_use``, ``max_tokens``, ``pause_turn``,
    ``refusal``, ...), token usage (None from the offline provider) and the provider."""

    content: list[dict[str, Any]]
    stop_reason: str
    provider: Provider
    model: str
    usage: Usage | None = None

    @property
    def refused(self) -> bool:
        """The model declined to answer (``stop_reason == "refusal"``)."""
        return self.stop_reason == "refusal"

    @property
    def text(self) -> str:
        """Concatenated text blocks."""
        return "".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        """The ``tool_use`` blocks, in order."""
        return [b for b in self.content if b.get("type") == "tool_use"]


