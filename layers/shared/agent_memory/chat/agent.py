"""A bounded ReAct loop: the model may call ``read_clinical_data`` a few times, then answers.

"P001 入组了吗" is answered from data read through the tool, never from memory. The rules of
the loop (docs/architecture.md, "Chat replies"):

- the assistant content is sent back exactly as received (``thinking`` with its signature,
  ``redacted_thinking``, ``text``, ``tool_use``: every block, every key), and every step repeats
  the same system blocks, tools and ``tool_choice`` (``auto``), so nothing before a thinking block
  changes and the cached prefix stays valid;
- ``pause_turn``: the paused assistant content is sent back as it is, with no new user message; the
  continuation goes on the same assistant turn, so the reply is the text of all its parts;
- at most ``max_steps`` steps; when the model still asks for a tool (or pauses) at the last one,
  the loop stops with the text it has (the reply is flagged truncated);
- ``max_tokens`` (or a full context window): the reply is flagged truncated;
- ``refusal``: the reply is :data:`REFUSAL_REPLY`, flagged refused (any partial text is dropped);
- a final reply without text is asked for once more (the same request); a second empty one
  raises ``LLMEmptyReply``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from agent_memory.chat.toolsets import ToolSet, compact_result
from agent_memory.domain.errors import LLMEmptyReply
from agent_memory.domain.llm import LLMRequest, LLMResponse, ToolSpec, Usage
from agent_memory.domain.text import truncate_utf8
from agent_memory.domain.turns import ToolCall
from agent_memory.ports import ClinicalDataPort, LLMClient

#: Tool results are capped (UTF-8 bytes) so a message item stays far under 400 KB.
TOOL_RESULT_MAX_BYTES = 8_000

#: The reply to a refused request: fixed, the same for every language the service is used in.
REFUSAL_REPLY = "I can't help with that request. / 抱歉，我无法协助处理这个请求。"

#: The reply when the step cap stops a loop whose last reply still asked for a tool and had no text:
#: the turn is answered (flagged ``truncated``), never a 502; the user may ask a narrower question.
STEP_CAP_REPLY = (
    "I could not finish looking this up within the step limit; please ask a narrower question. / "
    "查询步骤已达上限，未能完成回答；请缩小问题范围后再问。"
)

#: Stop reasons of a reply that did not finish.
TRUNCATED_STOP_REASONS = frozenset({"max_tokens", "pause_turn", "model_context_window_exceeded"})

#: ``tool_choice`` of every step: current models reject a forced choice, and every step of a loop is
#: the same request but for the messages it appends (docs/architecture.md, "Prompt caching").
TOOL_CHOICE_AUTO: dict[str, str] = {"type": "auto"}

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


@dataclass(frozen=True)
class ModelCall:
    """One Messages-API call of the loop: why it stopped and what it cost (None offline)."""

    stop_reason: str
    usage: Usage | None


@dataclass
class AgentResult:
    """The final answer of one LLM context.

    ``text``: the reply (:data:`REFUSAL_REPLY` when ``refused``); ``truncated``: cut by
    ``max_tokens``, or stopped at the step cap while the model still asked for a tool;
    ``calls``: every model call made, in order (a retried empty reply included); ``usage``: their
    summed token usage (None when the provider reported none).
    """

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    truncated: bool = False
    refused: bool = False
    calls: list[ModelCall] = field(default_factory=list)
    provider: str = "offline"
    #: The full text of each tool result until the answer is known (never stored).
    full_results: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def model_calls(self) -> int:
        return len(self.calls)

    @property
    def usage(self) -> Usage | None:
        reported = [c.usage for c in self.calls if c.usage is not None]
        if not reported:
            return None
        total = reported[0]
        for u in reported[1:]:
            total = total + u
        return total


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


def _with_assistant(messages: list[dict[str, Any]], content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` plus the assistant ``content`` as received. After a ``pause_turn`` the last
    message is already the assistant's: the continuation joins it (one assistant turn)."""
    if messages and messages[-1]["role"] == "assistant":
        last = messages[-1]
        return [*messages[:-1], {**last, "content": [*last["content"], *content]}]
    return [*messages, {"role": "assistant", "content": list(content)}]


def run_agent(
    llm: LLMClient,
    request: LLMRequest,
    tools: ToolSet | None,
    *,
    max_steps: int,
    on_call: Callable[[ModelCall], None] | None = None,
) -> AgentResult:
    """Run the loop (see the module docstring): call the model, execute the tools it asks for,
    send the results back, repeat.

    Args:
        llm: the provider port.
        request: the assembled first call (system blocks, messages); tools are added here.
        tools: the tool executor, or None for a call without tools.
        max_steps: at most this many model calls (>= 1), not counting the one retry of an empty reply.
        on_call: told of every model call as soon as it returned (usage metrics count the calls of a
            loop that fails later too).

    Returns:
        AgentResult with the final text, the tool calls made and every model call's usage.

    Raises:
        LLMEmptyReply: the final reply had no text, twice in a row.
        Whatever the port raises (LLMUnavailable, LLMDeadlineExceeded, LLMBadRequest, ...).
    """
    messages = list(request.messages)
    specs = list(tools.specs) if tools else []
    result = AgentResult(text="")
    paused_text: list[str] = []  # the text of this assistant turn's paused parts
    retried = False
    step = 0
    while True:
        req = replace(request, messages=messages, tools=specs, tool_choice=dict(TOOL_CHOICE_AUTO) if specs else None)
        response = _call(llm, req, result, on_call)
        last = step >= max_steps - 1
        uses = response.tool_uses
        if response.stop_reason == "tool_use" and uses and tools is not None and not last:
            messages = _with_assistant(messages, response.content)
            messages = [*messages, {"role": "user", "content": _run_tools(tools, uses, result)}]
            paused_text = []
            step += 1
            continue
        if response.stop_reason == "pause_turn" and not last:
            messages = _with_assistant(messages, response.content)
            paused_text.append(response.text)
            step += 1
            continue
        if _finish(response, paused_text, result, tools):
            return result
        if retried:
            raise LLMEmptyReply("the model's reply had no text, twice")
        retried = True


def _call(
    llm: LLMClient, request: LLMRequest, result: AgentResult, on_call: Callable[[ModelCall], None] | None
) -> LLMResponse:
    """One model call, recorded on ``result`` (provider, stop reason, usage) and told to ``on_call``."""
    response = llm.complete(request)
    result.provider = response.provider
    call = ModelCall(stop_reason=response.stop_reason, usage=response.usage)
    result.calls.append(call)
    if on_call is not None:
        on_call(call)
    return response


def _finish(response: LLMResponse, paused_text: list[str], result: AgentResult, tools: ToolSet | None) -> bool:
    """Complete ``result`` from the loop's last response: the refusal sentence, the step-cap reply
    (the cap stopped a loop that still wanted to go on: never retried), or the text of the turn's
    parts (flagged truncated when cut or when the model still asked for a tool). False: the reply
    had no text (the caller asks once more)."""
    if response.refused:
        result.text, result.refused = REFUSAL_REPLY, True
        return True
    uses = response.tool_uses
    text = "".join([*paused_text, response.text])
    if not text.strip() and (uses or response.stop_reason == "pause_turn"):
        result.text, result.truncated = STEP_CAP_REPLY, True
        return True
    if not text.strip():
        return False
    result.text = text
    result.truncated = response.stop_reason in TRUNCATED_STOP_REASONS or bool(uses)
    _compact_with_answer(tools, result)
    return True


def _compact_with_answer(tools: ToolSet | None, result: AgentResult) -> None:
    """Compact each call's result again, now that the answer is known (what it used comes first)."""
    if tools is None:
        return
    for call in result.tool_calls:
        full = result.full_results.pop(call.id, None)
        if full is not None:
            call.result = compact_result(tools, call.name, full, result.text)


def _run_tools(tools: ToolSet, uses: list[dict[str, Any]], result: AgentResult) -> list[dict[str, Any]]:
    """Run the requested tools; record each call on ``result`` with the COMPACT result (what the
    session window and the flow log keep); the ``tool_result`` blocks carry the full result."""
    blocks: list[dict[str, Any]] = []
    for use in uses:
        tool_input = use.get("input") or {}
        text, is_error = tools.run(use["name"], tool_input)
        result.tool_calls.append(
            ToolCall(id=use["id"], name=use["name"], input=tool_input, result=compact_result(tools, use["name"], text),
                     is_error=is_error)
        )
        result.full_results[use["id"]] = text
        blocks.append({"type": "tool_result", "tool_use_id": use["id"], "content": text, "is_error": is_error})
    return blocks


__all__ = [
    "READ_CLINICAL_DATA",
    "REFUSAL_REPLY",
    "AgentResult",
    "ClinicalTools",
    "ModelCall",
    "ToolSet",
    "run_agent",
]
