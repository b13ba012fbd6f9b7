"""The answer of a chat turn: the response body (:class:`ChatResult`, one :class:`CallReport` per LLM
context), the context manifest stored with the reply (what each call was sent, by reference, and
what it cost), and the reply's text.

Every model call's token usage is reported: summed per LLM context in the response
(``calls[].usage``, null offline) and call by call in the manifest, with each call's stop reason
(docs/architecture.md, "Prompt caching").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from agent_memory.chat.agent import AgentResult
from agent_memory.chat.intents import CallPlan
from agent_memory.chat.prompt import AssembledPrompt, PromptBlock
from agent_memory.domain.llm import Usage
from agent_memory.domain.models import Intent, Member


class TokenUsage(BaseModel):
    """Tokens of the model calls of one LLM context, as the provider reported them (summed).

    ``input_tokens`` excludes the cached parts: the prompts were ``input_tokens +
    cache_creation_input_tokens + cache_read_input_tokens`` tokens.
    """

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int

    @classmethod
    def of(cls, usage: Usage | None) -> TokenUsage | None:
        return None if usage is None else cls(**usage.as_dict())


class CallReport(BaseModel):
    """One LLM context of the turn as reported to the client. ``usage`` is null from the offline
    provider; ``model_calls`` counts the Messages-API calls the context took (tool steps, a retry);
    ``history_tool_weeks``: the weekly reports the model read through ``read_history``."""

    intents: list[str]
    history_weeks: int
    recent_turns: int
    prompt_tokens: int
    layers: dict[str, int]
    model_calls: int = 0
    usage: TokenUsage | None = None
    history_tool_weeks: int = 0
    #: lines of an over-budget hot memory were left out of this context (oldest AI lines first)
    hot_memory_trimmed: bool = False
    #: Values the tools withheld from the model in this context, by kind (``identifier_fields``:
    #: identifier-flagged fields left out per subject read; ``resident_id``, ``phone``, ``email``:
    #: values scrubbed from free text). Empty when nothing was withheld.
    redactions: dict[str, int] = Field(default_factory=dict)


class ChatResult(BaseModel):
    """The 200 response body of ``POST .../messages``.

    ``truncated``: a reply was cut (``max_tokens``, or the tool-step cap); ``refused``: the model
    declined the request and ``reply`` says so in a fixed sentence.
    """

    message_id: str
    user_message_id: str
    reply: str
    truncated: bool
    intents: list[str]
    provider: str
    calls: list[CallReport]
    refused: bool = False


@dataclass
class CallOutcome:
    """One LLM context of the turn as it ran: its plan, its prompt, the ReAct loop's result, the
    weeks ``read_history`` read and the values the tools withheld (by kind)."""

    plan: CallPlan
    prompt: AssembledPrompt
    result: AgentResult
    history_weeks_read: list[str] = field(default_factory=list)
    redactions: dict[str, int] = field(default_factory=dict)

    def report(self) -> CallReport:
        """The context as the response reports it."""
        return CallReport(
            intents=[i.value for i in self.plan.intents],
            history_weeks=len(self.prompt.history_weeks),
            recent_turns=self.prompt.recent_turns,
            prompt_tokens=self.prompt.prompt_tokens,
            layers=self.prompt.layers,
            model_calls=self.result.model_calls,
            usage=TokenUsage.of(self.result.usage),
            history_tool_weeks=len(self.history_weeks_read),
            hot_memory_trimmed=self.prompt.hot_memory_trimmed,
            redactions=self.redactions,
        )

    def manifest(self, user_message_id: str) -> dict[str, Any]:
        """What the context was sent, by reference (the system and session blocks by text, the
        question by its message id), and what each model call cost."""
        usage = self.result.usage
        return {
            "intents": [i.value for i in self.plan.intents],
            "load_history": self.plan.load_history,
            "blocks": [_block_entry(b, user_message_id) for b in self.prompt.blocks],
            "tool_calls": [tc.id for tc in self.result.tool_calls],
            "usage": usage.as_dict() if usage is not None else None,
            "model_calls": [
                {"stop_reason": c.stop_reason, "usage": c.usage.as_dict() if c.usage is not None else None}
                for c in self.result.calls
            ],
            "truncated": self.result.truncated,
            "refused": self.result.refused,
            **({"read_history": {"weeks": self.history_weeks_read}} if self.history_weeks_read else {}),
        }


def _block_entry(block: PromptBlock, user_message_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": block.name, "tokens": block.tokens}
    if block.name in ("system", "session"):
        entry["text"] = block.text
    elif block.name == "user_message":
        entry["ref"] = {"message_id": user_message_id}
    else:
        entry["ref"] = block.ref
    if block.cache:
        entry["cache"] = True
    return entry


def combine_replies(outcomes: Sequence[CallOutcome]) -> str:
    """The reply's text: one context's text, or each context's under its title (QC, history)."""
    if len(outcomes) == 1:
        return outcomes[0].result.text
    parts = []
    for o in outcomes:
        title = "【质控 QC】" if Intent.QC_TASK in o.plan.intents else "【历史 History】"
        parts.append(f"{title}\n{o.result.text}")
    return "\n\n".join(parts)


def turn_manifest(
    outcomes: Sequence[CallOutcome], intents: Sequence[Intent], user_message_id: str, asker: Member | None = None
) -> dict[str, Any]:
    """What was sent, by reference, so the context endpoint can rebuild it (kept small), what each
    model call cost, and who asked (user id, display name and study role at that moment)."""
    manifest: dict[str, Any] = {
        "intents": [i.value for i in intents], "calls": [o.manifest(user_message_id) for o in outcomes],
    }
    if asker is not None:
        manifest["asker"] = {"user_id": asker.user_id, "display_name": asker.display_name,
                             "study_role": asker.study_role}
    return manifest


__all__ = ["CallOutcome", "CallReport", "ChatResult", "TokenUsage", "combine_replies", "turn_manifest"]
