"""A bounded ReAct loop: the model may call ``read_clinical_data`` a few times, then answers.

Seed 001 scenario 1: "P001 入组了吗" is answered from data read through the tool, never
from memory. The loop is bounded by ``max_steps`` model calls; the last allowed call is
made with ``tool_choice = none`` so the model must answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from agent_memory.domain.llm import LLMRequest, LLMResponse, ToolSpec, Usage
from agent_memory.domain.models import ToolCall
from agent_memory.domain.text import truncate_utf8
from agent_memory.ports import ClinicalDataPort, LLMClient

#: Tool results are capped (UTF-8 bytes) so a message item stays far under 400 KB.
TOOL_RESULT_MAX_BYTES = 8_000

READ_CLINICAL_DATA = ToolSpec(
    name="read_clinical_data",
    description=(
        "Read CURRENT clinical data of this project: one subject's record (status, screening and "
        "enrolment dates, visits, CRF completeness, missing fields, adverse events, medical history, "
        "open queries) when subject_id is given, otherwise the project's enrolment summary."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "subject_id": {"type": "string", "description": "Subject id such as P001; omit for the summary."}
        },
        "additionalProperties": False,
    },
)


@dataclass
class AgentResult:
    """The final answer of one LLM context: text, tool calls made, whether the text was cut
    by max_tokens, the model calls made and summed token usage."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    truncated: bool = False
    model_calls: int = 0
    usage: Usage | None = None
    provider: str = "offline"


class ClinicalTools:
    """Executes the tools of the loop for one project (the project id is fixed here, so the
    model can never read another tenant's data)."""

    def __init__(self, clinical: ClinicalDataPort, project_id: str) -> None:
        self._clinical = clinical
        self._project_id = project_id

    specs: list[ToolSpec] = [READ_CLINICAL_DATA]

    def run(self, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
        """Run one tool call; returns (result text, is_error)."""
        if name != READ_CLINICAL_DATA.name:
            return f"unknown tool {name}", True
        subject = tool_input.get("subject_id") if isinstance(tool_input, dict) else None
        if subject is not None and not isinstance(subject, str):
            return "subject_id must be a string", True
        data = self._clinical.read(self._project_id, subject)
        text = json.dumps(data, ensure_ascii=False, sort_keys=True)
        return truncate_utf8(text, TOOL_RESULT_MAX_BYTES), "error" in data


def run_agent(
    llm: LLMClient,
    request: LLMRequest,
    tools: ClinicalTools | None,
    *,
    max_steps: int,
    on_response: Callable[[LLMResponse], None] | None = None,
) -> AgentResult:
    """Run the loop: call the model; execute requested tools; feed results back; repeat.

    Args:
        llm: the provider port.
        request: the assembled first call (system blocks, messages); tools are added here.
        tools: the tool executor, or None for a call without tools.
        max_steps: at most this many model calls (>= 1).

    Returns:
        AgentResult with the final text; ``truncated`` when the final reply hit max_tokens.

    Raises:
        Whatever the port raises (LLMUnavailable, LLMDeadlineExceeded, LLMBadRequest).
    """
    messages = [dict(m) for m in request.messages]
    calls: list[ToolCall] = []
    usage: Usage | None = None
    provider = "offline"
    for step in range(max_steps):
        last = step == max_steps - 1
        req = replace(
            request,
            messages=messages,
            tools=list(tools.specs) if tools else [],
            tool_choice=({"type": "none"} if last else {"type": "auto"}) if tools else None,
        )
        response = llm.complete(req)
        provider = response.provider
        if response.usage is not None:
            usage = response.usage if usage is None else usage + response.usage
        if on_response:
            on_response(response)
        uses = response.tool_uses
        if response.stop_reason != "tool_use" or not uses or tools is None or last:
            return AgentResult(
                text=response.text,
                tool_calls=calls,
                truncated=response.stop_reason == "max_tokens",
                model_calls=step + 1,
                usage=usage,
                provider=provider,
            )
        results = []
        for use in uses:
            result, is_error = tools.run(use["name"], use.get("input") or {})
            calls.append(
                ToolCall(id=use["id"], name=use["name"], input=use.get("input") or {}, result=result, is_error=is_error)
            )
            results.append({"type": "tool_result", "tool_use_id": use["id"], "content": result, "is_error": is_error})
        messages = messages + [
            {"role": "assistant", "content": response.content},
            {"role": "user", "content": results},
        ]
    raise AssertionError("unreachable: the last step always returns")  # pragma: no cover
