"""Structured LLM calls, one way for every feature, and the LLM usage / fallback metrics.

(docs/architecture.md, "LLM calls".) A structured call asks for ONE JSON document as the reply's
text (``LLMRequest.output_schema``, sent as the structured-output format) instead of a forced tool:
current models reject a forced ``tool_choice``. The schema is generated from a Pydantic model and
reduced to what structured outputs accept (:func:`output_schema`); the reply is parsed and
validated with the same model (:func:`call_structured`). Nothing of a reply that was cut, refused,
empty, not JSON or not valid is ever used: each raises a typed failure, and the caller answers
with its rules or offline implementation and counts it (:func:`record_fallback`).

Metrics (one EMF document each, flushed at once, so they carry their own dimensions):

- ``LLMInputTokens``, ``LLMOutputTokens``, ``LLMCacheReadTokens``, ``LLMCacheWriteTokens``
  (dimension ``task``): the tokens of every call, :func:`record_usage`;
- ``LLMFallback`` (dimensions ``task``, ``reason``): a structured answer that was not used,
  :func:`record_fallback`.

Never logs message text: only the task, reasons and counts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError

from agent_memory.domain.errors import LLMError, LLMTruncated
from agent_memory.domain.llm import Effort, LLMRequest, LLMResponse, SystemBlock, ToolSpec, Usage
from agent_memory.observability import MetricUnit, logger, metrics, single_metric
from agent_memory.ports import LLMClient

# ------------------------------------------------------------------ metrics

#: Metric name per ``Usage`` field (the chat task emits the same names).
USAGE_METRICS: dict[str, str] = {
    "input_tokens": "LLMInputTokens",
    "output_tokens": "LLMOutputTokens",
    "cache_read_input_tokens": "LLMCacheReadTokens",
    "cache_creation_input_tokens": "LLMCacheWriteTokens",
}
FALLBACK_METRIC = "LLMFallback"


def _emit(name: str, value: int, dimensions: dict[str, str]) -> None:
    with single_metric(name=name, unit=MetricUnit.Count, value=value, namespace=metrics.namespace) as metric:
        for dim_name, dim_value in dimensions.items():
            metric.add_dimension(name=dim_name, value=dim_value)


def record_usage(task: str, usage: Usage | None) -> None:
    """Emit the four token counts of ``usage`` as metrics with a ``task`` dimension.

    ``LLMInputTokens``, ``LLMOutputTokens``, ``LLMCacheReadTokens``, ``LLMCacheWriteTokens``;
    nothing when ``usage`` is None (the offline provider reports none).
    """
    if usage is None:
        return
    counts = usage.as_dict()
    for field_name, metric_name in USAGE_METRICS.items():
        _emit(metric_name, counts[field_name], {"task": task})


def record_fallback(task: str, reason: str) -> None:
    """Count one structured answer that was not used (metric ``LLMFallback``, dimensions ``task``
    and ``reason``) and log it without any message text."""
    _emit(FALLBACK_METRIC, 1, {"task": task, "reason": reason})
    logger.warning("structured LLM answer not used", extra={"task": task, "fallback_reason": reason})


@dataclass
class UsageTally:
    """The LLM calls of one job run and their summed usage (None while no call reported any)."""

    calls: int = 0
    usage: Usage | None = None

    def add(self, usage: Usage | None) -> None:
        """Count one call (made, whether or not it answered) and add its usage."""
        self.calls += 1
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage

    def details(self) -> dict[str, Any]:
        """``{"llm_calls": n, "llm_usage": {the four counts} | None}`` for a job report."""
        return {"llm_calls": self.calls, "llm_usage": self.usage.as_dict() if self.usage is not None else None}


# ------------------------------------------------------------------ failures


class StructuredOutputError(LLMError):
    """A structured reply that cannot be used. ``reason`` is a short code (the ``LLMFallback``
    reason); ``usage`` the tokens the call cost all the same."""

    reason_code = "invalid_output"

    def __init__(self, detail: str, usage: Usage | None = None) -> None:
        super().__init__(detail)
        self.reason = self.reason_code
        self.usage = usage


class StructuredRefused(StructuredOutputError):
    """The model declined to answer (``stop_reason == "refusal"``)."""

    reason_code = "refused"


class StructuredNoText(StructuredOutputError):
    """The reply had no text at all."""

    reason_code = "no_text"


class StructuredInvalidJSON(StructuredOutputError):
    """The reply's text is not one JSON document."""

    reason_code = "invalid_json"


class StructuredOutputInvalid(StructuredOutputError):
    """The JSON document failed validation with the output model."""

    reason_code = "invalid_output"


class StructuredTruncated(LLMTruncated):
    """The structured reply was cut (``max_tokens``): nothing of it may be applied."""

    def __init__(self, detail: str, usage: Usage | None = None) -> None:
        super().__init__(detail)
        self.reason = "truncated"
        self.usage = usage


#: Stop reasons of a reply whose output was cut before it ended.
TRUNCATED_STOP_REASONS = frozenset({"max_tokens", "model_context_window_exceeded"})


def failure_reason(exc: BaseException) -> str:
    """The ``LLMFallback`` reason of a failed structured call: the failure's code, ``truncated``,
    or ``llm_error:<exception class>`` for an error of the call itself."""
    if isinstance(exc, StructuredOutputError):
        return exc.reason
    if isinstance(exc, LLMTruncated):
        return "truncated"
    return f"llm_error:{type(exc).__name__}"


def failure_usage(exc: BaseException) -> Usage | None:
    """The usage a failed structured call reported (None when the call itself failed)."""
    usage = getattr(exc, "usage", None)
    return usage if isinstance(usage, Usage) else None


# ------------------------------------------------------------------ schema

#: Keywords a structured-output schema may carry; every other one is moved into the description.
ALLOWED_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "anyOf", "allOf",
    "enum", "const", "description", "minItems", "format",
})
#: String formats structured outputs support; other formats move into the description.
STRING_FORMATS = frozenset({
    "date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid",
})
#: ``minItems`` values structured outputs support.
MIN_ITEMS = frozenset({0, 1})
_DROPPED_SILENTLY = frozenset({"title", "default", "examples", "$schema"})


def _is_primitive(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


class _Reducer:
    """Inlines local ``$ref``s (a recursive schema raises) and keeps only accepted keywords."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs

    def reduce(self, node: dict[str, Any], seen: tuple[str, ...] = ()) -> dict[str, Any]:
        node = dict(node)
        ref = node.pop("$ref", None)
        if ref is not None:
            name = str(ref).removeprefix("#/$defs/")
            if name in seen:
                raise ValueError(f"recursive schema: {' -> '.join((*seen, name))}")
            if name not in self.defs:
                raise ValueError(f"unresolvable $ref {ref!r}")
            return self.reduce({**self.defs[name], **node}, (*seen, name))
        out = _literals(node)
        for key in ("anyOf", "oneOf", "allOf"):
            variants = node.pop(key, None)
            if isinstance(variants, list):
                out["allOf" if key == "allOf" else "anyOf"] = [self.reduce(v, seen) for v in variants]
        type_ = node.pop("type", None)
        if type_ is not None:
            out["type"] = type_
        description = node.pop("description", None)
        if type_ == "object":
            props = node.pop("properties", {})
            out["properties"] = {k: self.reduce(v, seen) for k, v in props.items()}
            out["required"] = list(props)  # every property required; optional ones are nullable
            out["additionalProperties"] = False
            node.pop("required", None)
            node.pop("additionalProperties", None)
        elif type_ == "array" and "items" in node:
            out["items"] = self.reduce(node.pop("items"), seen)
        for key in (*_DROPPED_SILENTLY, "$defs"):
            node.pop(key, None)
        _keep_supported(type_, node, out)
        if node:  # unsupported constraints: stated for the model, enforced by the Pydantic model
            hint = "{" + ", ".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in sorted(node.items())) + "}"
            description = f"{description}\n\n{hint}" if description else hint
        if description:
            out["description"] = description
        return out


def _literals(node: dict[str, Any]) -> dict[str, Any]:
    """``enum`` / ``const`` of primitive values, taken out of ``node`` (their ``type`` dropped)."""
    out: dict[str, Any] = {}
    enum = node.get("enum")
    if isinstance(enum, list) and enum and all(_is_primitive(v) for v in enum):
        out["enum"] = node.pop("enum")
    if "const" in node and _is_primitive(node["const"]):
        out["const"] = node.pop("const")
    if out:
        node.pop("type", None)
    return out


def _keep_supported(type_: Any, node: dict[str, Any], out: dict[str, Any]) -> None:
    """Move the supported ``minItems`` (0 or 1) and string ``format``s from ``node`` to ``out``."""
    if type_ == "array" and node.get("minItems") in MIN_ITEMS:
        out["minItems"] = node.pop("minItems")
    if type_ == "string" and node.get("format") in STRING_FORMATS:
        out["format"] = node.pop("format")


def reduce_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema reduced to what structured outputs accept: local ``$ref``s inlined (a recursive
    schema raises ``ValueError``), ``additionalProperties: false`` and every property required on
    each object, ``oneOf`` as ``anyOf``, ``minItems`` only 0 or 1, only supported string formats;
    other constraints (lengths, bounds, ``maxItems``, ``uniqueItems``, ``pattern``) move into the
    description, and titles and defaults are dropped."""
    defs = dict(schema.get("$defs", {}))
    return _Reducer(defs).reduce(schema)


@cache
def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structured-output schema of ``model`` (its ``model_json_schema()``, reduced)."""
    return reduce_schema(model.model_json_schema())


def schema_problems(schema: Any, path: str = "$") -> list[str]:
    """What in ``schema`` structured outputs would not accept (empty: nothing)."""
    if not isinstance(schema, dict):
        return [f"{path}: not an object"]
    problems = [f"{path}: keyword {k!r} not supported" for k in schema if k not in ALLOWED_KEYWORDS]
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties is not false")
        if sorted(schema.get("required", [])) != sorted(props):
            problems.append(f"{path}: required does not list every property")
        for key, sub in props.items():
            problems += schema_problems(sub, f"{path}.{key}")
    if "items" in schema:
        problems += schema_problems(schema["items"], f"{path}[]")
    if "minItems" in schema and schema["minItems"] not in MIN_ITEMS:
        problems.append(f"{path}: minItems {schema['minItems']} (only 0 or 1)")
    if "format" in schema and schema["format"] not in STRING_FORMATS:
        problems.append(f"{path}: format {schema['format']!r} not supported")
    if "enum" in schema and not all(_is_primitive(v) for v in schema["enum"]):
        problems.append(f"{path}: enum of non-primitive values")
    for key in ("anyOf", "allOf"):
        for i, sub in enumerate(schema.get(key, [])):
            problems += schema_problems(sub, f"{path}.{key}[{i}]")
    return problems


# ------------------------------------------------------------------ the call


@dataclass(frozen=True)
class Structured[T]:
    """A validated structured answer and the tokens its call cost (None offline)."""

    value: T
    usage: Usage | None


def structured_request(
    output: type[BaseModel],
    *,
    task: str,
    model: str,
    system: list[SystemBlock],
    content: str,
    max_tokens: int,
    effort: Effort | None = None,
    deadline: float | None = None,
    tools: Sequence[ToolSpec] = (),
) -> LLMRequest:
    """One user message asking for a JSON document matching ``output``: ``output_schema`` set,
    no ``tool_choice``, no tools unless given; ``purpose`` is ``task``."""
    return LLMRequest(
        model=model,
        system=system,
        messages=[{"role": "user", "content": content}],
        max_tokens=max_tokens,
        tools=list(tools),
        tool_choice=None,
        output_schema=output_schema(output),
        effort=effort,
        deadline=deadline,
        purpose=task,
    )


def parse_reply[T: BaseModel](response: LLMResponse, output: type[T], *, task: str = "structured") -> T:
    """The reply's text as a validated ``output``.

    Raises:
        StructuredTruncated: the reply was cut (``max_tokens``); checked first, whatever the text.
        StructuredRefused, StructuredNoText, StructuredInvalidJSON, StructuredOutputInvalid.
    """
    usage = response.usage
    if response.stop_reason in TRUNCATED_STOP_REASONS:
        raise StructuredTruncated(f"{task}: structured output cut ({response.stop_reason})", usage)
    if response.refused:
        raise StructuredRefused(f"{task}: the model declined to answer", usage)
    text = response.text.strip()
    if not text:
        raise StructuredNoText(f"{task}: no text in the reply", usage)
    try:
        payload = json.loads(text)
    except ValueError:
        raise StructuredInvalidJSON(f"{task}: the reply is not one JSON document", usage) from None
    try:
        return output.model_validate(payload)
    except ValidationError:
        raise StructuredOutputInvalid(f"{task}: the JSON document failed validation", usage) from None


def call_structured[T: BaseModel](llm: LLMClient, request: LLMRequest, output: type[T]) -> Structured[T]:
    """Run ``request`` (from :func:`structured_request`), record its usage under its task (the
    request's ``purpose``) and return the validated answer.

    Raises:
        StructuredTruncated, StructuredOutputError subclasses (see :func:`parse_reply`), each
        carrying the call's usage; whatever the client raises (``LLMError`` subclasses).
    """
    response = llm.complete(request)
    record_usage(request.purpose, response.usage)
    return Structured(parse_reply(response, output, task=request.purpose), response.usage)


__all__ = [
    "FALLBACK_METRIC",
    "USAGE_METRICS",
    "Structured",
    "StructuredInvalidJSON",
    "StructuredNoText",
    "StructuredOutputError",
    "StructuredOutputInvalid",
    "StructuredRefused",
    "StructuredTruncated",
    "TRUNCATED_STOP_REASONS",
    "UsageTally",
    "call_structured",
    "failure_reason",
    "failure_usage",
    "output_schema",
    "parse_reply",
    "record_fallback",
    "record_usage",
    "reduce_schema",
    "schema_problems",
    "structured_request",
]
