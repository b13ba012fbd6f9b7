"""Acceptance: Claude with the DEFAULT models, end to end against the strict Messages-API test server.

Criterion: against the test server in its strict mode, with the default models, a data question (tool
use with thinking), a history question, a QC + history split, distillation, archiving and symptom
extraction all succeed with the LLM (no fallback counted); ``calls[].usage`` carries the server's
figures.

The real code runs inside moto (tables from template.yaml, the API key in moto Secrets Manager) with
``LLM_PROVIDER=anthropic`` and ``ANTHROPIC_BASE_URL`` pointing at the local server
(``tests/support/messages_api.py``, strict: it answers 400 to a forced ``tool_choice``, sampling
parameters, a prefill, a malformed ``output_config`` or a thinking block sent back altered or
missing). The models are never named here: they are ``agent_memory.config.Settings``' defaults
(``CHAT_MODEL_ID`` / ``FAST_MODEL_ID`` are unset), which the server treats as current models.

- chat: ``functions/chat/app.py`` imported fresh (a cold start) and driven with API Gateway events,
  with the LLM intent classifier (and, for the consultation, the LLM symptom extractor);
- jobs: ``agent_memory.wiring.build_job_deps`` (what the job worker builds) and the job table's ``run_scheduled``.

Every case scripts the server's replies (a structured call gets one JSON document matching the
request's schema), then checks (a) the result is the LLM's, (b) no ``LLMFallback`` metric was
printed (the token metrics, printed the same way, are the positive control), (c) the usage reported
is the server's for that call, and that every structured request carried ``output_config.format``
with the task's schema and no ``tool_choice``. The server reports the usage a step scripts, so the
figures below are the server's (it does not record its responses; it computes usage only for steps
without one).
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from agent_memory.chat.agent import READ_CLINICAL_DATA
from agent_memory.chat.intents import IntentOutput
from agent_memory.config import Settings, get_settings
from agent_memory.consultation.symptoms.llm import SymptomOutput
from agent_memory.domain.jobs import JobReport, JobRequest
from agent_memory.domain.models import Project
from agent_memory.history.reports import REPORT_SECTIONS
from agent_memory.jobs.llm_tasks import ExtractOutput, ReportOutput
from agent_memory.structured import FALLBACK_METRIC, USAGE_METRICS, output_schema
from infra.local.events import build_http_api_event
from tests.conftest import FakeLambdaContext
from tests.integration.dynamo_support import say
from tests.support.auth import add_member
from tests.support.messages_api import (
    MessagesAPIServer,
    RecordedRequest,
    Step,
    is_current_model,
    json_reply,
    text_reply,
    tool_use_reply,
)
from tests.unit.chat_support import seed_project
from tests.unit.structured_support import fallbacks, usage_metrics

REPO = Path(__file__).resolve().parents[2]
CHAT_APP = REPO / "functions" / "chat" / "app.py"
API_KEY = "sk-ant-acceptance-0123456789"
SECRET_NAME = "agent-memory/test/anthropic-acceptance"
#: The default models, read from the settings (never named in this module).
CHAT_MODEL = str(Settings.model_fields["chat_model_id"].default)
FAST_MODEL = str(Settings.model_fields["fast_model_id"].default)
PROJECT = "demo-iit"  # the demo clinical data knows its subjects (P001 ...)
CLINIC = "acc-clinic"  # a consultation project
CLINIC_TZ = "Asia/Shanghai"
USER = "user-pi-1"
HISTORY_TAG = '<history_book weeks="'
_module_ids = itertools.count(1)

pytestmark = [
    pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning"),
    pytest.mark.filterwarnings("ignore:Disabling idempotency:UserWarning"),
]


def _usage(input_tokens: int, output_tokens: int, cache_write: int, cache_read: int) -> dict[str, int]:
    """A Messages-API ``usage`` with all four counts (what ``calls[].usage`` reports)."""
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
    }


def _sum(*usages: dict[str, int]) -> dict[str, int]:
    return {key: sum(u[key] for u in usages) for key in usages[0]}


def _as_metrics(usage: dict[str, int]) -> dict[str, float]:
    """The token metrics one task emits for ``usage`` (``structured.USAGE_METRICS`` names)."""
    return {metric: float(usage[field]) for field, metric in USAGE_METRICS.items()}


# ------------------------------------------------------------------------------ environment


@dataclass
class LlmEnv:
    """moto (tables, the API key's secret) and the environment of the anthropic provider."""

    api: MessagesAPIServer
    tables: dict[str, str]
    monkeypatch: pytest.MonkeyPatch

    def settings(self) -> Settings:
        get_settings.cache_clear()
        return get_settings()


@pytest.fixture
def llm_env(messages_api: MessagesAPIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[LlmEnv]:
    """The template's tables and the API key in moto; ``LLM_PROVIDER=anthropic`` on the test server; the
    model ids left to the settings' defaults."""
    import boto3
    from aws_lambda_powertools.utilities.parameters.base import clear_caches
    from moto import mock_aws

    from infra.local.stack import DEMO_CLINICAL_DATA_FILE
    from infra.template_model import create_tables, load_template

    region = os.environ["AWS_REGION"]
    with mock_aws():
        tables = create_tables(boto3.client("dynamodb", region_name=region), load_template())
        boto3.client("secretsmanager", region_name=region).create_secret(
            Name=SECRET_NAME, SecretString=json.dumps({"api_key": API_KEY})
        )
        for name in ("CHAT_MODEL_ID", "FAST_MODEL_ID", "SESSION_SUMMARISER", "SYMPTOM_EXTRACTOR", "INTENT_CLASSIFIER",
                     *(f"LLM_EFFORT_{task}" for task in ("CHAT", "INTENT", "SYMPTOMS", "DISTILL", "ARCHIVE"))):
            monkeypatch.delenv(name, raising=False)
        env = {
            "AWS_DEFAULT_REGION": region,
            "FLOW_LOG_TABLE": tables["FlowLogTable"],
            "MEMORY_TABLE": tables["MemoryTable"],
            "SESSIONS_TABLE": tables["SessionsTable"],
            "IDEMPOTENCY_TABLE": tables["IdempotencyTable"],
            "POWERTOOLS_IDEMPOTENCY_DISABLED": "true",
            "LLM_PROVIDER": "anthropic",
            "ANTHROPIC_SECRET_NAME": SECRET_NAME,
            "ANTHROPIC_BASE_URL": messages_api.base_url,
            "CLINICAL_DATA_FILE": str(DEMO_CLINICAL_DATA_FILE),
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        clear_caches()
        get_settings.cache_clear()
        try:
            yield LlmEnv(api=messages_api, tables=tables, monkeypatch=monkeypatch)
        finally:
            get_settings.cache_clear()
            clear_caches()


def test_the_defaults_are_current_models_the_strict_server_checks(llm_env: LlmEnv) -> None:
    # The strict rules apply to current models only: the acceptance below would prove nothing otherwise.
    settings = llm_env.settings()
    assert (settings.chat_model_id, settings.fast_model_id) == (CHAT_MODEL, FAST_MODEL)
    assert is_current_model(CHAT_MODEL) and is_current_model(FAST_MODEL)
    assert llm_env.api.strict


# ------------------------------------------------------------------------------------- chat


@dataclass
class ChatFunction:
    """One cold-started chat function."""

    app: ModuleType
    api: MessagesAPIServer
    repo: Any

    def post(self, content: str, *, session: str, project: str = PROJECT, patient_id: str | None = None
             ) -> dict[str, Any]:
        """POST a message through ``lambda_handler``; returns the 200 body (asserts the status)."""
        body: dict[str, Any] = {"content": content, **({"patient_id": patient_id} if patient_id else {})}
        event = build_http_api_event(
            "POST",
            f"/v1/projects/{project}/sessions/{session}/messages",
            {"content-type": "application/json", "host": "api.local", "user-agent": "pytest"},
            "",
            json.dumps(body, ensure_ascii=False).encode("utf-8"),
            "POST /v1/projects/{project_id}/sessions/{session_id}/messages",
            {"project_id": project, "session_id": session},
            {"sub": USER, "custom:projects": f"{PROJECT}:member,{CLINIC}:member"},
            None,
        )
        response: dict[str, Any] = self.app.lambda_handler(event, FakeLambdaContext())
        assert response["statusCode"] == 200, response
        result: dict[str, Any] = json.loads(response["body"])
        return result


MakeChat = Callable[..., ChatFunction]


@pytest.fixture
def make_chat(llm_env: LlmEnv) -> Iterator[MakeChat]:
    """``make_chat(**env)``: the chat function imported fresh with extra environment variables, the
    projects seeded (``demo-iit`` with hot memory and 3 weekly reports; a consultation project)."""
    from agent_memory.adapters.dynamo.chat import ChatRepository

    def make(**env: str) -> ChatFunction:
        for name, value in env.items():
            llm_env.monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        name = f"chat_app_acceptance_{next(_module_ids)}"
        spec = importlib.util.spec_from_file_location(name, CHAT_APP)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        repo = ChatRepository()
        seed_project(repo, PROJECT, weeks=3)
        repo.projects.put_project(Project(project_id=CLINIC, name=CLINIC, kind="clinic", time_zone=CLINIC_TZ,
                                 created_at=datetime(2026, 1, 1, tzinfo=UTC)))
        for project_id in (PROJECT, CLINIC):
            add_member(repo, project_id, USER)
        return ChatFunction(app=module, api=llm_env.api, repo=repo)

    yield make


def _assert_common(req: RecordedRequest, model: str) -> None:
    """Sent to the Messages API with the key from Secrets Manager, to ``model``, with nothing a
    current model rejects (the strict server would have answered 400 anyway)."""
    assert req.route == "messages" and req.path.startswith("/v1/messages")
    assert req.headers["authorization"] == f"Bearer {API_KEY}"
    assert req.model == model and req.body["model"] == model
    for rejected in ("temperature", "top_p", "top_k", "thinking"):
        assert rejected not in req.body, rejected
    assert req.body["messages"][-1]["role"] == "user"  # no prefill


def _assert_structured(req: RecordedRequest, output: type[BaseModel], *, effort: str | None,
                       reply: dict[str, Any]) -> None:
    """A structured call on the fast model: ``output_config.format`` with ``output``'s schema (which the
    scripted ``reply`` satisfies), no forced ``tool_choice`` (none at all) and no tools."""
    _assert_common(req, FAST_MODEL)
    assert "tool_choice" not in req.body
    assert not req.body.get("tools")
    config = req.body["output_config"]
    assert config["format"] == {"type": "json_schema", "schema": output_schema(output)}
    assert config.get("effort") == effort
    Draft202012Validator(config["format"]["schema"]).validate(reply)


def _assert_chat_request(req: RecordedRequest, *, effort: str | None) -> None:
    """A chat call on the chat model: the tools offered with ``tool_choice`` auto, no output format;
    ``read_history`` in every call but a QC call (a history call keeps it beside its loaded weeks: the
    same tools keep the cached prefix)."""
    _assert_common(req, CHAT_MODEL)
    assert req.body["tool_choice"] == {"type": "auto"}
    offered = [t["name"] for t in req.body["tools"]]
    qc = "QC_TASK" in json.dumps(req.body["messages"][-1])
    assert offered == [READ_CLINICAL_DATA.name, *([] if qc else ["read_history"])]
    config = req.body.get("output_config", {})
    assert "format" not in config and config.get("effort") == effort


def _assert_no_fallback(out: str) -> None:
    assert fallbacks(out) == []
    assert FALLBACK_METRIC not in out


def _has_history(req: RecordedRequest) -> bool:
    return any(HISTORY_TAG in b["text"] for b in req.body["system"])


#: A thinking signature as the API returns one (base64, with ``+``, ``/`` and padding).
SIGNATURE = "EqQBCkYIBxgCKkBn+/Vd3xJ0acceptance+sig/0aWdvQ2hhbmdlTWU9PQ=="

DATA_Q = "P001 入组了吗"
INTENT_USAGE = _usage(1210, 14, 0, 0)
TOOL_STEP_USAGE = _usage(2341, 96, 0, 1187)
ANSWER_USAGE = _usage(2515, 41, 0, 1187)


def _signed_tool_use() -> Step:
    """A tool call after a thinking block whose signature is given (the server keeps it as it is)."""
    scripted = tool_use_reply(READ_CLINICAL_DATA.name, {"subject_id": "P001"}, text="我先查一下 P001 的数据。",
                              thinking="The user asks whether P001 is enrolled: read the current record.",
                              usage=TOOL_STEP_USAGE)
    content = scripted["json"]["content"]
    assert content[0]["type"] == "thinking"
    content[0]["signature"] = SIGNATURE
    return scripted


def test_data_question_tool_use_with_thinking(make_chat: MakeChat, capsys: pytest.CaptureFixture[str]) -> None:
    chat = make_chat(INTENT_CLASSIFIER="llm")
    settings = get_settings()
    intents = {"intents": ["QUERY_DATA"]}
    tool_step = _signed_tool_use()
    returned = copy.deepcopy(tool_step["json"]["content"])  # what the server answers (signature given)
    chat.api.script(json_reply(intents, usage=INTENT_USAGE), tool_step,
                    text_reply("P001 已于 2026-02-05 入组。", usage=ANSWER_USAGE))
    capsys.readouterr()

    body = chat.post(DATA_Q, session="s-data")

    out = capsys.readouterr().out
    # (a) the LLM's intents and its final answer
    assert body["intents"] == ["QUERY_DATA"] and body["provider"] == "anthropic"
    assert body["reply"] == "P001 已于 2026-02-05 入组。"
    assert (body["truncated"], body["refused"]) == (False, False)
    intent_req, first, second = chat.api.requests
    _assert_structured(intent_req, IntentOutput, effort=settings.llm_effort_intent, reply=intents)
    assert intent_req.body["messages"] == [{"role": "user", "content": DATA_Q}]
    for req in (first, second):
        _assert_chat_request(req, effort=settings.llm_effort_chat)
    # the assistant turn went back exactly as returned: the thinking block first, its signature byte-equal
    assistant = second.body["messages"][-2]
    assert assistant == {"role": "assistant", "content": returned}
    thinking = assistant["content"][0]
    assert thinking["type"] == "thinking" and thinking["signature"].encode() == SIGNATURE.encode()
    (tool_result,) = second.body["messages"][-1]["content"]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == returned[-1]["id"]
    assert '"P001"' in tool_result["content"] and tool_result["is_error"] is False
    # (b) no fallback; the token metrics (printed the same way) are there
    _assert_no_fallback(out)
    assert usage_metrics(out) == {"intent": _as_metrics(INTENT_USAGE),
                                  "chat": _as_metrics(_sum(TOOL_STEP_USAGE, ANSWER_USAGE))}
    # (c) calls[].usage: the server's figures of the context's two calls, summed; per call in the manifest
    (call,) = body["calls"]
    assert call["model_calls"] == 2
    assert call["usage"] == _sum(TOOL_STEP_USAGE, ANSWER_USAGE)
    _, manifest = chat.repo.get_message(PROJECT, "s-data", body["message_id"])
    assert manifest is not None
    assert manifest["calls"][0]["model_calls"] == [
        {"stop_reason": "tool_use", "usage": TOOL_STEP_USAGE},
        {"stop_reason": "end_turn", "usage": ANSWER_USAGE},
    ]


HISTORY_Q = "我们之前为什么暂停筛选"
HISTORY_USAGE = _usage(3408, 77, 0, 0)


def test_history_question(make_chat: MakeChat, capsys: pytest.CaptureFixture[str]) -> None:
    chat = make_chat(INTENT_CLASSIFIER="llm")
    settings = get_settings()
    intents = {"intents": ["QUERY_HISTORY"]}
    answer = "根据 2026-W02 的周报：第2周决定事项 2。"
    chat.api.script(json_reply(intents, usage=INTENT_USAGE), text_reply(answer, usage=HISTORY_USAGE))
    capsys.readouterr()

    body = chat.post(HISTORY_Q, session="s-history")

    out = capsys.readouterr().out
    assert body["intents"] == ["QUERY_HISTORY"] and body["reply"] == answer
    intent_req, chat_req = chat.api.requests
    _assert_structured(intent_req, IntentOutput, effort=settings.llm_effort_intent, reply=intents)
    _assert_chat_request(chat_req, effort=settings.llm_effort_chat)
    assert _has_history(chat_req)  # routed by the LLM's intent: the history book was sent
    _assert_no_fallback(out)
    assert usage_metrics(out) == {"intent": _as_metrics(INTENT_USAGE), "chat": _as_metrics(HISTORY_USAGE)}
    (call,) = body["calls"]
    assert call["history_weeks"] == 3 and call["model_calls"] == 1
    assert call["usage"] == HISTORY_USAGE


SPLIT_Q = "对 P005 做质控，并告诉我之前为什么调整了随访计划"
QC_USAGE = _usage(1902, 55, 0, 0)
HIST_USAGE = _usage(3377, 63, 0, 0)


def test_qc_plus_history_split(make_chat: MakeChat, capsys: pytest.CaptureFixture[str]) -> None:
    chat = make_chat(INTENT_CLASSIFIER="llm")
    settings = get_settings()
    intents = {"intents": ["QC_TASK", "QUERY_HISTORY"]}
    chat.api.script(json_reply(intents, usage=INTENT_USAGE),
                    text_reply("质控：P005 数据完整。", usage=QC_USAGE),
                    text_reply("历史：第3周决定调整随访计划。", usage=HIST_USAGE))
    capsys.readouterr()

    body = chat.post(SPLIT_Q, session="s-split")

    out = capsys.readouterr().out
    assert body["intents"] == ["QC_TASK", "QUERY_HISTORY"]
    assert "质控：P005 数据完整。" in body["reply"] and "历史：第3周决定调整随访计划。" in body["reply"]
    intent_req, qc_req, hist_req = chat.api.requests
    _assert_structured(intent_req, IntentOutput, effort=settings.llm_effort_intent, reply=intents)
    for req in (qc_req, hist_req):
        _assert_chat_request(req, effort=settings.llm_effort_chat)
    # two LLM contexts: the QC one never sees history, the history one does
    assert not _has_history(qc_req) and "2026-W0" not in json.dumps(qc_req.body, ensure_ascii=False)
    assert _has_history(hist_req)
    _assert_no_fallback(out)
    assert usage_metrics(out) == {"intent": _as_metrics(INTENT_USAGE), "chat": _as_metrics(_sum(QC_USAGE, HIST_USAGE))}
    qc_call, hist_call = body["calls"]
    assert (qc_call["intents"], qc_call["history_weeks"]) == (["QC_TASK"], 0)
    assert (hist_call["intents"], hist_call["history_weeks"]) == (["QUERY_HISTORY"], 3)
    assert qc_call["usage"] == QC_USAGE and hist_call["usage"] == HIST_USAGE


CONSULT_Q = "从前天起看东西有重影，晚上也睡不踏实，没有发烧"
SYMPTOMS_USAGE = _usage(1650, 48, 0, 0)
CONSULT_USAGE = _usage(1480, 52, 0, 0)


def test_symptom_extraction_in_a_consultation(make_chat: MakeChat, capsys: pytest.CaptureFixture[str]) -> None:
    chat = make_chat(INTENT_CLASSIFIER="llm", SYMPTOM_EXTRACTOR="llm")
    settings = get_settings()
    # The rules would read this message as 烦躁不安 and a denied fever; the model names the double vision.
    symptoms = {"symptoms": [
        {"name": "视物重影", "status": "present", "onset_phrase": "前天起", "trend": None},
        {"name": "发热", "status": "denied", "onset_phrase": None, "trend": None},
    ]}
    intents = {"intents": ["CONSULTATION"]}
    reply = "视物重影从前天开始，没有发烧。请尽快到眼科或神经内科就诊。"
    chat.api.script(json_reply(symptoms, usage=SYMPTOMS_USAGE), json_reply(intents, usage=INTENT_USAGE),
                    text_reply(reply, usage=CONSULT_USAGE))
    capsys.readouterr()

    body = chat.post(CONSULT_Q, session="s-consult", project=CLINIC, patient_id="pt-001")

    out = capsys.readouterr().out
    assert body["intents"] == ["CONSULTATION"] and body["reply"] == reply
    symptoms_req, intent_req, chat_req = chat.api.requests
    _assert_structured(symptoms_req, SymptomOutput, effort=settings.llm_effort_symptoms, reply=symptoms)
    assert json.loads(symptoms_req.body["messages"][0]["content"])["patient_message"] == CONSULT_Q
    _assert_structured(intent_req, IntentOutput, effort=settings.llm_effort_intent, reply=intents)
    _assert_chat_request(chat_req, effort=settings.llm_effort_chat)
    # the extracted facts: the model's names (发热 mapped onto the vocabulary's 发烧), the onset computed in
    # code from the phrase the model quoted, the message as evidence
    user, _ = chat.repo.get_message(CLINIC, "s-consult", body["user_message_id"])
    onset = (user.at.astimezone(ZoneInfo(CLINIC_TZ)).date() - timedelta(days=2)).isoformat()
    session = chat.repo.get_session(CLINIC, "s-consult")
    assert session is not None
    stored = [(s["name"], s["status"], s["onset"], s["trend"], s["evidence"]) for s in session.facts["symptoms"]]
    assert stored == [
        ("视物重影", "present", onset, None, [user.message_id]),
        ("发烧", "denied", None, None, [user.message_id]),
    ]
    # and the chat call already saw them in its session block
    (session_block,) = [b["text"] for b in chat_req.body["messages"][-1]["content"]
                        if b["text"].startswith("<session id=")]
    assert f"- 视物重影: present (onset {onset})" in session_block and "- 发烧: DENIED" in session_block
    _assert_no_fallback(out)
    assert usage_metrics(out) == {"symptoms": _as_metrics(SYMPTOMS_USAGE), "intent": _as_metrics(INTENT_USAGE),
                                  "chat": _as_metrics(CONSULT_USAGE)}
    (call,) = body["calls"]
    assert call["usage"] == CONSULT_USAGE


# ------------------------------------------------------------------------------------- jobs

JOB_PROJECT = "acc-jobs"


@pytest.fixture
def job_deps(llm_env: LlmEnv) -> Any:
    """The job worker's collaborators as ``wiring.build_job_deps`` builds them (anthropic provider),
    with a project on the Asia/Shanghai calendar."""
    from agent_memory.adapters.dynamo.jobs import JobsRepository
    from agent_memory.wiring import build_job_deps

    deps = build_job_deps(llm_env.settings())
    assert deps.structured_llm is not None and deps.structured_llm.provider == "anthropic"
    JobsRepository().projects.put_project(Project(project_id=JOB_PROJECT, name=JOB_PROJECT, time_zone="Asia/Shanghai",
                                         created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    return deps


def _run(deps: Any, job: str, run_date: str) -> JobReport:
    from agent_memory.events.jobs import run_scheduled

    report: JobReport = run_scheduled(deps, JobRequest(job=job, project_id=JOB_PROJECT,
                                                 date=date.fromisoformat(run_date)))
    return report


def _at(local: str) -> datetime:
    return datetime.fromisoformat(local).astimezone(UTC)


DISTILL_USAGE = _usage(1533, 120, 0, 0)


def test_distillation(job_deps: Any, llm_env: LlmEnv, capsys: pytest.CaptureFixture[str]) -> None:
    # Given the PI's standing instruction on 2026-03-10 (local) and the assistant's answer
    preference = "以后周报统一用中文写，不要再附英文摘要"
    say(JOB_PROJECT, "m-1", preference, _at("2026-03-10T09:30:00+08:00"))
    say(JOB_PROJECT, "m-2", "好的，之后的周报只用中文。", _at("2026-03-10T09:31:00+08:00"), role="assistant")
    operations = {"operations": [{"op": "add", "line_id": None, "text": "周报统一用中文写，不附英文摘要。",
                                  "section": "User Preferences", "role_tag": "PI", "evidence": ["m-1"]}]}
    llm_env.api.script(json_reply(operations, usage=DISTILL_USAGE))
    capsys.readouterr()

    # When the 2026-03-11 run distils that day
    report = _run(job_deps, "distill", "2026-03-11")

    out = capsys.readouterr().out
    # Then the LLM's line is in hot memory, citing the message
    assert report.changed and report.counts["added"] == 1
    assert report.details["extractor"] == "llm" and "fallback_reason" not in report.details
    lines = job_deps.store.load_hot_memory(JOB_PROJECT).lines
    assert [(ln.section, ln.text, ln.source, ln.role_tag, ln.evidence) for ln in lines] == [
        ("User Preferences", "周报统一用中文写，不附英文摘要。", "distilled", "PI", ["m-1"])]
    (req,) = llm_env.api.requests
    _assert_structured(req, ExtractOutput, effort=llm_env.settings().llm_effort_distill, reply=operations)
    sent = req.body["messages"][0]["content"]
    assert "[m-1]" in sent and preference in sent and "m-2" not in sent  # only the user's messages
    _assert_no_fallback(out)
    assert usage_metrics(out) == {"distill": _as_metrics(DISTILL_USAGE)}
    assert (report.details["llm_calls"], report.details["llm_usage"]) == (1, DISTILL_USAGE)


ARCHIVE_USAGE = _usage(2208, 164, 0, 0)


def test_archiving(job_deps: Any, llm_env: LlmEnv, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a week (2026-W11: 03-09 .. 03-15 local) of conversation
    say(JOB_PROJECT, "a-1", "P007 今天完成了 V2 随访", _at("2026-03-10T10:00:00+08:00"))
    say(JOB_PROJECT, "a-2", "好的，已记录 P007 的 V2 随访。", _at("2026-03-10T10:01:00+08:00"), role="assistant")
    say(JOB_PROJECT, "a-3", "我们决定下周起暂停筛选，等新版知情同意书批准", _at("2026-03-12T16:00:00+08:00"))
    points = {
        "progress": [{"text": "P007 完成 V2 随访。", "evidence": ["a-1", "a-2"]}],
        "decisions": [{"text": "下周起暂停筛选，等待新版知情同意书批准。", "evidence": ["a-3"]}],
        "problems": [],
    }
    llm_env.api.script(json_reply(points, usage=ARCHIVE_USAGE))
    capsys.readouterr()

    # When the Monday 2026-03-16 run archives the week before
    report = _run(job_deps, "archive", "2026-03-16")

    out = capsys.readouterr().out
    # Then the week's report is the LLM's points (dated by their first message), citing the messages
    assert report.changed and report.details["iso_week"] == "2026-W11"
    assert report.details["summariser"] == "llm" and "fallback_reason" not in report.details
    labels = dict(REPORT_SECTIONS)
    written = job_deps.store.get_weekly_report(JOB_PROJECT, "2026-W11")
    assert written is not None
    assert written.summary == (
        "2026-W11 本周小结：进度 1 项，决策 1 项，问题与教训 0 项（据 3 条消息）。\n"
        f"[{labels['progress']}] 03-10 P007 完成 V2 随访。 [a-1,a-2]\n"
        f"[{labels['decisions']}] 03-12 下周起暂停筛选，等待新版知情同意书批准。 [a-3]"
    )
    (req,) = llm_env.api.requests
    _assert_structured(req, ReportOutput, effort=llm_env.settings().llm_effort_archive, reply=points)
    assert all(f"[{m}]" in req.body["messages"][0]["content"] for m in ("a-1", "a-2", "a-3"))
    _assert_no_fallback(out)
    assert usage_metrics(out) == {"archive": _as_metrics(ARCHIVE_USAGE)}
    assert (report.details["llm_calls"], report.details["llm_usage"]) == (1, ARCHIVE_USAGE)


def test_archiving_rejects_a_placeholder_report_twice_then_stores_the_offline_summary(
    job_deps: Any, llm_env: LlmEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a week of conversation and an LLM that answers with a placeholder citing a real message
    say(JOB_PROJECT, "p-1", "P007 今天完成了 V2 随访", _at("2026-03-10T10:00:00+08:00"))
    say(JOB_PROJECT, "p-2", "我们决定下周起暂停筛选，等新版知情同意书批准", _at("2026-03-12T16:00:00+08:00"))
    placeholder = {"progress": [{"text": "暂无历史记录", "evidence": ["p-1"]}],
                   "decisions": [{"text": "No prior history.", "evidence": ["p-2"]}], "problems": []}
    llm_env.api.script(json_reply(placeholder), json_reply(placeholder))
    capsys.readouterr()

    # When the week is archived
    report = _run(job_deps, "archive", "2026-03-16")

    # Then the LLM was asked twice on the strict server; the offline summary was stored, never the placeholder
    assert len(llm_env.api.requests) == 2
    assert (report.details["summariser"], report.details["fallback_reason"]) == ("offline", "placeholder")
    written = job_deps.store.get_weekly_report(JOB_PROJECT, "2026-W11")
    assert written is not None
    assert "暂无历史记录" not in written.summary and "No prior history" not in written.summary
    assert written.summary.splitlines()[1:] == [
        "[进度] 03-10 P007 今天完成了 V2 随访 [p-1]",
        "[决策] 03-12 我们决定下周起暂停筛选，等新版知情同意书批准 [p-2]",
    ]
    # and the admins' alert was sent once (its dedupe claim is taken), the fallback counted
    assert not job_deps.store.claim_alert(JOB_PROJECT, "archive-rejected#2026-W11", kind="x",
                                          now=datetime(2026, 3, 16, tzinfo=UTC))
    assert fallbacks(capsys.readouterr().out) == [("archive", "placeholder")]
