"""Checks shared by the structured-call tests: the request carries a schema structured outputs
accept (and no forced tool), and the metrics a call emitted (EMF lines on stdout)."""

from __future__ import annotations

import json
from typing import Any

from anthropic.lib._parse._transform import transform_schema
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from agent_memory.domain.llm import LLMRequest
from agent_memory.structured import output_schema, schema_problems

USAGE_NAMES = ("LLMInputTokens", "LLMOutputTokens", "LLMCacheReadTokens", "LLMCacheWriteTokens")


def assert_structured_request(request: LLMRequest, model: type[BaseModel], *, task: str) -> None:
    """``request`` is a structured call for ``model``: no tools, no ``tool_choice``, the model's
    schema as ``output_schema``, which is a valid JSON schema that the structured-output rules
    accept and that the SDK's own schema transform leaves unchanged (nothing it would strip)."""
    assert request.tool_choice is None
    assert request.tools == []
    assert request.purpose == task
    schema = request.output_schema
    assert schema is not None
    assert schema == output_schema(model)
    assert schema_problems(schema) == []
    Draft202012Validator.check_schema(schema)
    assert transform_schema(schema) == schema


def assert_valid_reply(request: LLMRequest, payload: Any) -> None:
    """``payload`` (a scripted reply) is valid against the request's schema, so the scripted test
    answers what the real API could."""
    assert request.output_schema is not None
    Draft202012Validator(request.output_schema).validate(payload)


def emitted(out: str) -> list[dict[str, Any]]:
    """The EMF documents printed on stdout (one JSON object per line)."""
    docs = []
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("{") and '"_aws"' in line:
            docs.append(json.loads(line))
    return docs


def _metric_names(doc: dict[str, Any]) -> list[str]:
    return [m["Name"] for d in doc["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]]


def _dimensions(doc: dict[str, Any]) -> set[str]:
    """The document's dimension names besides ``service`` (which Powertools adds from
    ``POWERTOOLS_SERVICE_NAME``, as on every metric of the function)."""
    (names,) = doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
    return set(names) - {"service"}


def fallbacks(out: str) -> list[tuple[str, str]]:
    """``(task, reason)`` of every ``LLMFallback`` metric emitted (each a Count of 1, in the
    service's namespace)."""
    found = []
    for doc in emitted(out):
        if "LLMFallback" in _metric_names(doc):
            assert doc["LLMFallback"] == [1.0]
            assert doc["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "AgentMemory"
            assert _dimensions(doc) == {"task", "reason"}
            found.append((doc["task"], doc["reason"]))
    return found


def usage_metrics(out: str) -> dict[str, dict[str, float]]:
    """``{task: {metric name: summed value}}`` of the token metrics emitted."""
    totals: dict[str, dict[str, float]] = {}
    for doc in emitted(out):
        for name in _metric_names(doc):
            if name in USAGE_NAMES:
                assert _dimensions(doc) == {"task"}
                per_task = totals.setdefault(doc["task"], {})
                per_task[name] = per_task.get(name, 0.0) + sum(doc[name])
    return totals
