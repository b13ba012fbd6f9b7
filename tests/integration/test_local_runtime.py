"""The local runtime: API Gateway v2 events, tables from template.yaml, demo seed, HTTP routing."""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import signal
import time
import uuid
from datetime import UTC, date, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import requests

from agent_memory.http.powertools import APIGatewayProxyEventV2
from infra.local.events import LocalLambdaContext, build_http_api_event, stringify_claim
from infra.local.gateway import claims_for_request, lambda_result_to_response
from infra.local.stack import LocalStack, LocalStackError, merge_function_environments
from infra.local.token import mint_token
from infra.template_model import FUNCTION_TYPE, FunctionSpec, load_template, resources_of_type, table_specs
from tests.support.auth import bearer

CHAT_ROUTE = "POST /v1/projects/{project_id}/sessions/{session_id}/messages"


def _session() -> str:
    return f"it-{uuid.uuid4().hex[:12]}"


def _post_message(stack: LocalStack, content: str, headers: dict[str, str] | None = None) -> requests.Response:
    """POST a message as the dev user (admin of the demo projects) unless ``headers`` say otherwise."""
    return requests.post(
        f"{stack.base_url}/v1/projects/demo-iit/sessions/{_session()}/messages",
        json={"content": content},
        headers=bearer() if headers is None else headers,
        timeout=30,
    )


def _scan(stack: LocalStack, logical_id: str) -> list[dict[str, Any]]:
    client = stack.aws_client("dynamodb")
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": stack.table_names[logical_id], "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return sorted(items, key=lambda i: (i["pk"]["S"], i["sk"]["S"]))
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


# ----------------------------------------------------------------------------- event builder
def test_event_builder_produces_a_payload_2_0_event_powertools_can_read() -> None:
    # Given a POST with mixed-case and repeated headers, cookies, a repeated query parameter,
    # a UTF-8 JSON body and JWT claims (one of them an array)
    body = json.dumps({"content": "P001 入组了吗？"}, ensure_ascii=False).encode("utf-8")
    headers = [
        ("Content-Type", "application/json"),
        ("X-Trace", "a"),
        ("x-trace", "b"),
        ("Cookie", "theme=dark; lang=zh"),
        ("Host", "127.0.0.1:3000"),
        ("User-Agent", "curl/8"),
    ]

    # When the event is built
    event = build_http_api_event(
        "post",
        "/v1/projects/demo-iit/sessions/s-1/messages",
        headers,
        "tag=a&tag=b&x=1",
        body,
        CHAT_ROUTE,
        {"project_id": "demo-iit", "session_id": "s-1"},
        {"sub": "u-1", "custom:projects": "demo-iit:admin", "cognito:groups": ["pi", "admin"], "exp": 1_900_000_000},
        "req-123",
    )
    parsed = APIGatewayProxyEventV2(event)

    # Then it has the 2.0 shape and Powertools reads every part of it
    assert event["version"] == "2.0"
    assert parsed.route_key == CHAT_ROUTE
    assert parsed.raw_path == "/v1/projects/demo-iit/sessions/s-1/messages"
    assert parsed.raw_query_string == "tag=a&tag=b&x=1"
    assert parsed.path_parameters == {"project_id": "demo-iit", "session_id": "s-1"}
    assert parsed.headers["content-type"] == "application/json"
    assert parsed.headers["x-trace"] == "a,b"
    assert all(name == name.lower() for name in parsed.headers)
    assert "cookie" not in parsed.headers
    assert parsed.cookies == ["theme=dark", "lang=zh"]
    assert parsed.query_string_parameters == {"tag": "a,b", "x": "1"}
    assert parsed.is_base64_encoded is False
    assert parsed.json_body == {"content": "P001 入组了吗？"}
    ctx = parsed.request_context
    assert ctx.http.method == "POST"
    assert ctx.http.path == "/v1/projects/demo-iit/sessions/s-1/messages"
    assert ctx.http.user_agent == "curl/8"
    assert ctx.request_id == "req-123"
    assert ctx.route_key == CHAT_ROUTE
    assert ctx.stage == "$default"
    assert ctx.domain_name == "127.0.0.1:3000"
    assert re.fullmatch(r"\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} \+0000", event["requestContext"]["time"])
    assert isinstance(event["requestContext"]["timeEpoch"], int)
    # and the claims are strings, as the HTTP API JWT authorizer delivers them
    assert ctx.authorizer.jwt_claim == {
        "sub": "u-1",
        "custom:projects": "demo-iit:admin",
        "cognito:groups": "[pi admin]",
        "exp": "1900000000",
    }


def test_event_builder_base64_encodes_a_body_that_is_not_utf8() -> None:
    # Given a binary body
    raw = b"\xff\xfe\x00binary"

    # When the event is built
    event = build_http_api_event(
        "POST", "/upload", {"content-type": "application/octet-stream"}, "", raw, "POST /upload", None, None, None
    )

    # Then the body is base64 and flagged as such
    parsed = APIGatewayProxyEventV2(event)
    assert parsed.is_base64_encoded is True
    assert base64.b64decode(event["body"]) == raw


def test_event_builder_omits_parts_that_are_absent() -> None:
    # Given a GET without body, query, cookies, path parameters or authorizer
    event = build_http_api_event("GET", "/v1/health", {}, "", b"", "GET /v1/health", None, None, "r-1")

    # Then those keys are absent (not empty), as API Gateway sends them
    for key in ("body", "queryStringParameters", "pathParameters", "cookies"):
        assert key not in event
    assert "authorizer" not in event["requestContext"]
    assert event["isBase64Encoded"] is False


def test_stringify_claim_matches_the_http_api_authorizer() -> None:
    assert stringify_claim(["a", "b"]) == "[a b]"
    assert stringify_claim(True) == "true"
    assert stringify_claim(17) == "17"
    assert stringify_claim("x") == "x"


def test_lambda_context_counts_down_from_the_timeout() -> None:
    # Given a context of a 60 s function
    context = LocalLambdaContext("ChatFunction", 60, 1024, request_id="abc")

    # Then it looks like Lambda's and its remaining time starts at (about) 60 s
    remaining = context.get_remaining_time_in_millis()
    assert 59_000 < remaining <= 60_000
    assert context.aws_request_id == "abc"
    assert context.function_name == "ChatFunction"
    assert context.memory_limit_in_mb == 1024
    assert context.invoked_function_arn.endswith(":function:ChatFunction")
    assert context.log_group_name == "/aws/lambda/ChatFunction"
    assert LocalLambdaContext("f", 0, 128).get_remaining_time_in_millis() == 0


# --------------------------------------------------------------------------- gateway pieces
def test_claims_for_request_refuses_a_request_without_authorization() -> None:
    from infra.local.gateway import Unauthorized

    with pytest.raises(Unauthorized):
        claims_for_request({"content-type": "application/json"})


def test_claims_for_request_returns_the_claims_of_a_verified_token() -> None:
    token = mint_token("u-42", operator=True)
    claims = claims_for_request({"Authorization": f"Bearer {token}"})
    assert claims["sub"] == "u-42"
    assert claims["cognito:groups"] == ["platform-admins"]


def test_lambda_result_to_response_follows_the_proxy_format() -> None:
    # A full proxy result: status, headers, cookies, base64 body
    response = lambda_result_to_response(
        {
            "statusCode": 201,
            "headers": {"Content-Type": "text/plain", "X-N": 3},
            "cookies": ["a=1", "b=2"],
            "body": base64.b64encode("已创建".encode()).decode(),
            "isBase64Encoded": True,
        }
    )
    assert response.status_code == 201
    assert response.get_data() == "已创建".encode()
    assert response.headers["content-type"] == "text/plain"
    assert response.headers["x-n"] == "3"
    assert response.headers.getlist("set-cookie") == ["a=1", "b=2"]
    # A plain JSON value: 200 with that value as JSON
    inferred = lambda_result_to_response({"ok": True})
    assert inferred.status_code == 200
    assert json.loads(inferred.get_data()) == {"ok": True}
    assert inferred.mimetype == "application/json"


def test_functions_that_disagree_on_an_env_variable_fail_loudly() -> None:
    specs = [
        FunctionSpec("A", "functions/a", "app.h", 3, 128, {"SHARED": "1", "X": "a"}),
        FunctionSpec("B", "functions/b", "app.h", 3, 128, {"SHARED": "1", "X": "b"}),
    ]
    with pytest.raises(LocalStackError, match="X"):
        merge_function_environments(specs)
    assert merge_function_environments(specs[:1]) == {"SHARED": "1", "X": "a"}


def test_the_template_functions_agree_on_their_environment(local_stack: LocalStack) -> None:
    assert local_stack.env["LLM_PROVIDER"] == "offline"
    assert local_stack.env["MEMORY_TABLE"] == local_stack.table_names["MemoryTable"]
    assert local_stack.env["AWS_ENDPOINT_URL"] == local_stack.moto_url
    assert "ANTHROPIC_API_KEY" not in local_stack.env
    # every function of the template is loaded (chat, API, sessions, admin, the job dispatcher and worker)
    assert set(local_stack.functions) == set(resources_of_type(load_template(), FUNCTION_TYPE))
    assert {"ChatFunction", "ApiFunction", "JobDispatcherFunction", "JobWorkerFunction"} <= set(local_stack.functions)


def test_the_stack_environment_does_not_leak_into_this_process(local_stack: LocalStack) -> None:
    # Isolated mode: outside an invocation, this process does not point at the stack's moto
    assert os.environ.get("AWS_ENDPOINT_URL") != local_stack.moto_url


# ------------------------------------------------------------------------------------ tables
def test_tables_are_created_as_template_yaml_declares(local_stack: LocalStack) -> None:
    client = local_stack.aws_client("dynamodb")
    expected = {spec.logical_id: spec for spec in table_specs(load_template())}
    assert set(local_stack.table_names) == set(expected)
    for logical_id, spec in expected.items():
        table = client.describe_table(TableName=local_stack.table_names[logical_id])["Table"]
        want = spec.create_kwargs
        assert table["KeySchema"] == want["KeySchema"]
        assert sorted(table["AttributeDefinitions"], key=lambda a: a["AttributeName"]) == sorted(
            want["AttributeDefinitions"], key=lambda a: a["AttributeName"]
        )
        got_indexes = {
            i["IndexName"]: (i["KeySchema"], i["Projection"]["ProjectionType"])
            for i in table.get("GlobalSecondaryIndexes", [])
        }
        want_indexes = {
            i["IndexName"]: (i["KeySchema"], i["Projection"]["ProjectionType"])
            for i in want.get("GlobalSecondaryIndexes", [])
        }
        assert got_indexes == want_indexes
        ttl = client.describe_time_to_live(TableName=local_stack.table_names[logical_id])["TimeToLiveDescription"]
        if spec.ttl_attribute:
            assert ttl.get("AttributeName") == spec.ttl_attribute
            assert ttl["TimeToLiveStatus"] == "ENABLED"
        else:
            assert ttl["TimeToLiveStatus"] == "DISABLED"


# --------------------------------------------------------------------------------- demo seed
def test_demo_seed_is_present(local_stack: LocalStack) -> None:
    repo = local_stack.repo
    project = repo.get_project("demo-iit")
    assert (project.time_zone, project.kind) == ("Asia/Shanghai", "iit")
    assert repo.get_project("demo-clinic").kind == "clinic"

    reports = repo.load_history("demo-iit", limit_weeks=520)
    weeks = sorted(int(r.iso_week.split("-W")[1]) for r in reports if r.iso_week.startswith("2026-"))
    assert len(reports) >= 30
    assert weeks == list(range(1, len(weeks) + 1))  # consecutive from 2026-W01
    summaries = {r.iso_week: r.summary for r in reports}
    assert '暂停筛选 "间质性肺炎" 既往史患者' in summaries["2026-W06"]
    assert "OCR 精度不足" in summaries["2026-W06"]
    assert "交通补贴" in summaries["2026-W12"]
    assert "门诊增派 CRC" in summaries["2026-W15"]

    hot = repo.load_turn_context("demo-iit", _session(), now=datetime.now(UTC)).hot_memory
    document = hot.render()
    assert hot.version == 1
    assert "只看数据" in document
    assert "【系统禁令】严禁在未授权情况下删除数据" in document
    assert {ln.source for ln in hot.lines} == {"admin", "distilled"}
    assert all(ln.evidence for ln in hot.lines if ln.source == "distilled")

    from agent_memory.domain.text import estimate_tokens

    assert estimate_tokens(document) < 2000


def test_seeding_twice_changes_nothing(local_stack: LocalStack) -> None:
    from infra.local.demo.seed import seed_demo

    # Given the seeded stack
    before = _scan(local_stack, "MemoryTable")

    # When the demo is seeded again
    seed_demo(local_stack.repo.projects, now=datetime.now(UTC))

    # Then the memory table is item-for-item identical
    assert _scan(local_stack, "MemoryTable") == before


def test_weekly_report_enrolment_numbers_agree_with_the_clinical_data(local_stack: LocalStack) -> None:
    clinical = json.loads(
        resources.files("infra.local.demo").joinpath("clinical_data.json").read_text("utf-8")
    )
    subjects = clinical["demo-iit"]["subjects"]
    assert subjects["P001"]["enrolment_date"] == "2026-02-05"
    assert any("高血压" in h for h in subjects["P006"]["medical_history"])
    enrolled = [date.fromisoformat(s["enrolment_date"]) for s in subjects.values() if s["enrolment_date"]]
    for report in local_stack.repo.load_history("demo-iit", limit_weeks=520):
        year, week = report.iso_week.split("-W")
        sunday = date.fromisocalendar(int(year), int(week), 7)
        match = re.search(r"累计入组 (\d+) 例", report.summary)
        assert match, report.iso_week
        assert int(match.group(1)) == sum(1 for d in enrolled if d <= sunday), report.iso_week


# ---------------------------------------------------------------------------------- HTTP API
def test_health_is_200(local_stack: LocalStack) -> None:
    response = requests.get(f"{local_stack.base_url}/v1/health", timeout=10)
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response.headers["apigw-requestid"]


def test_unknown_route_is_404_json(local_stack: LocalStack) -> None:
    response = requests.get(f"{local_stack.base_url}/v1/nope", timeout=10)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"message": "Not Found"}
    assert requests.get(f"{local_stack.base_url}/v1/health/", timeout=10).status_code == 404


def test_wrong_method_is_405_json(local_stack: LocalStack) -> None:
    response = requests.delete(f"{local_stack.base_url}/v1/health", timeout=10)
    assert response.status_code == 405
    assert response.json() == {"message": "Method Not Allowed"}
    assert "GET" in response.headers["allow"]


def test_a_request_without_a_token_is_401_before_the_function(local_stack: LocalStack) -> None:
    response = _post_message(local_stack, "你好", headers={})
    assert response.status_code == 401
    assert response.json() == {"message": "Unauthorized"}
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_malformed_bearer_token_is_401_before_the_function(local_stack: LocalStack) -> None:
    response = _post_message(local_stack, "你好", headers={"Authorization": "Bearer not-a-jwt"})
    assert response.status_code == 401
    assert response.json() == {"message": "Unauthorized"}


def test_chat_answers_a_data_question_over_http(local_stack: LocalStack) -> None:
    # When the dev user asks about P001 (a question about current data)
    response = _post_message(local_stack, "P001 入组了吗？")

    # Then the real chat handler answers from the demo clinical data, labelled offline
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["provider"] == "offline"
    assert "2026-02-05" in body["reply"]


def test_chat_answers_a_history_question_from_the_weekly_reports(local_stack: LocalStack) -> None:
    # When the dev user asks how slow enrolment was addressed before (a question about the project's history)
    response = _post_message(local_stack, "最近入组太慢了，我们之前有没有讨论过怎么解决？")

    # Then the answer draws on the history book (week 12's transport subsidy)
    assert response.status_code == 200, response.text
    body = response.json()
    assert "QUERY_HISTORY" in body["intents"]
    assert "交通补贴" in body["reply"]


def test_chat_refuses_a_directive_that_would_relax_a_system_rule(local_stack: LocalStack) -> None:
    # When the dev user hands the AE causality decision to the assistant "from now on"
    response = _post_message(local_stack, "以后AE相关性你直接判断就行")

    # Then the reply does not accept it: it names the demo project's rule and sends it to the admin's review
    assert response.status_code == 200, response.text
    reply = response.json()["reply"]
    assert "好的" not in reply and "不会生效" in reply and "管理员审核" in reply
    assert "AE 相关性判断、揭盲和剂量调整只能由 PI 决定" in reply


def test_request_log_has_method_path_status_but_no_body(
    local_stack: LocalStack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="infra.local")
    marker = f"secret-body-{uuid.uuid4().hex}"
    requests.post(f"{local_stack.base_url}/v1/nope", data=marker, timeout=10)
    lines = [r.getMessage() for r in caplog.records if r.name == "infra.local"]
    assert any(line.startswith("POST /v1/nope -> 404") and "ms" in line for line in lines)
    assert not any(marker in line for line in lines)


def test_server_prints_the_curl_example_and_stops_cleanly_on_sigterm() -> None:
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from infra.local.stack import free_port

    # Given the server started the way `make run` starts it
    repo_root = Path(__file__).resolve().parents[2]
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "AWS_ENDPOINT_URL")}
    env["PORT"] = str(port)
    env["REDCAP_PORT"] = "0"  # a free port: `make run`'s fixed one may be another server's
    process = subprocess.Popen(
        [sys.executable, "-m", "infra.local.server"],
        cwd=repo_root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    try:
        deadline = time.monotonic() + 60
        banner: list[str] = []
        assert process.stdout is not None
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            banner.append(line)
            if "Ctrl-C" in line:
                break
        text = "".join(banner)
        # Then it prints the URL, the provider and a ready-to-paste curl for the demo project
        assert f"http://127.0.0.1:{port}" in text
        assert "offline" in text
        assert f"curl -s -X POST http://127.0.0.1:{port}/v1/projects/demo-iit/sessions/demo-1/messages" in text
        assert '"content": "P001 入组了吗？"' in text
        # with a dev token from `make token` on every curl
        assert "TOKEN=$(make -s token USER=dev PROJECT=demo-iit ROLE=admin | tail -1)" in text
        assert '-H "Authorization: Bearer $TOKEN"' in text
        assert requests.get(f"http://127.0.0.1:{port}/v1/health", timeout=10).status_code == 200
    finally:
        # When it gets SIGTERM, Then it stops by itself with exit code 0
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert code == 0


def test_the_stop_signal_handler_only_sets_a_flag_and_takes_no_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    import signal
    import sys

    from infra.local import server

    # Given the server module before any stop request
    monkeypatch.setattr(server, "_stop_requested", False)
    calls: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(frame.f_code.co_qualname)
        elif event == "c_call":
            calls.append(getattr(arg, "__qualname__", repr(arg)))

    # When the handler runs (as it would between two bytecodes of the main thread)
    sys.setprofile(profile)
    try:
        server.request_stop(signal.SIGTERM, None)
    finally:
        sys.setprofile(None)

    # Then it set the flag and called nothing else: no Event.set(), no lock acquired
    assert server._stop_requested is True
    assert calls[: calls.index("setprofile")] == ["request_stop"]


def test_server_stops_cleanly_when_sigterm_and_sigint_arrive_several_times_in_a_row(tmp_path: Any) -> None:
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from infra.local.stack import free_port

    # Given a fresh server started the way `make run` starts it, ready to serve
    stack_file = tmp_path / "stack.json"
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "AWS_ENDPOINT_URL")}
    env.update({"PORT": str(free_port()), "LOCAL_STACK_FILE": str(stack_file), "REDCAP_PORT": "0"})
    process = subprocess.Popen([sys.executable, "-m", "infra.local.server"], cwd=Path(__file__).resolve().parents[2],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if "Ctrl-C" in line:
                break
        # When SIGTERM, SIGINT and SIGTERM again arrive back to back (shutdown already under way)
        for signum in (signal.SIGTERM, signal.SIGTERM, signal.SIGINT, signal.SIGTERM, signal.SIGINT):
            process.send_signal(signum)
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    # Then it stopped by itself with exit code 0 and removed its stack file
    assert code == 0
    assert not stack_file.exists()


def test_once_a_stop_is_requested_a_new_request_gets_503_before_the_stack_stops(
    local_stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = bearer()
    session = _session()
    url = f"{local_stack.base_url}/v1/projects/demo-iit/sessions/{session}"
    # Given a stack whose server was just asked to stop (its signal handler set the flag the
    # gateway reads), before its main thread has called stop()
    monkeypatch.setattr(local_stack, "_stop_requested", lambda: True)
    # When a chat turn arrives
    response = requests.post(f"{url}/messages", json={"content": "停止时到达的消息"}, headers=headers, timeout=30)
    monkeypatch.undo()
    # Then the gateway answers 503 with Retry-After, and nothing of the turn ran
    assert response.status_code == 503
    assert response.json() == {"message": "Service Unavailable"}
    assert int(response.headers["Retry-After"]) > 0
    assert requests.get(url, headers=headers, timeout=30).status_code == 404
    # and without the flag the same turn is answered
    again = requests.post(f"{url}/messages", json={"content": "再发一次"}, headers=headers, timeout=30)
    assert again.status_code == 200


def test_a_container_that_dies_holding_a_request_is_502_and_is_replaced(local_stack: LocalStack) -> None:
    from infra.local.functions import CONTAINER_HOOK_ENV

    health = f"{local_stack.base_url}/v1/health"
    hook = {CONTAINER_HOOK_ENV: "tests.support.container_hooks:die_on_request_header"}
    with local_stack.configured("ApiFunction", hook):
        # Given a container of the API function that is killed while it handles a request
        died = requests.get(health, headers={"x-test-die": "1"}, timeout=30)
        # Then that request is 502, as API Gateway answers a function that failed without a response
        assert died.status_code == 502
        assert died.json() == {"message": "Internal Server Error"}
        # and the next one is answered by a new container
        assert requests.get(health, timeout=30).status_code == 200
        # as is one after an idle container was killed (say, by the out-of-memory killer)
        (container,) = local_stack.functions["ApiFunction"].containers
        os.kill(container.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        deadline = time.monotonic() + 10
        while container.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert requests.get(health, timeout=30).status_code == 200
        assert container not in local_stack.functions["ApiFunction"].containers


def test_concurrent_requests_to_one_function_each_get_their_own_answer(local_stack: LocalStack) -> None:
    from concurrent.futures import ThreadPoolExecutor

    headers = bearer()
    sessions = [f"{_session()}-{n}" for n in range(8)]

    def turn(session: str) -> str:
        url = f"{local_stack.base_url}/v1/projects/demo-iit/sessions/{session}/messages"
        response = requests.post(url, json={"content": f"标记 {session}"}, headers=headers, timeout=60)
        assert response.status_code == 200, response.text
        return str(response.json()["user_message_id"])

    # When 8 chat turns of 8 sessions arrive at once (several containers of the chat function)
    with ThreadPoolExecutor(8) as pool:
        user_message_ids = dict(zip(sessions, pool.map(turn, sessions), strict=True))
    # Then the chat function, deployed with SnapStart, ran them in containers forked from its snapshot
    chat = local_stack.functions["ChatFunction"]
    assert chat.snap_start and chat._snapshot is not None and len(chat.containers) >= 2
    parents = {int(Path(f"/proc/{c.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # type: ignore[attr-defined]
               for c in chat.containers}
    assert parents == {chat._snapshot.process.pid}
    # and each was handled with its own request: each session holds its own message, under the id
    # its answer gave
    for session, message_id in user_message_ids.items():
        window = requests.get(f"{local_stack.base_url}/v1/projects/demo-iit/sessions/{session}", headers=headers,
                              timeout=30).json()["window"]
        mine = [m for m in window if m["role"] == "user"]
        assert [(m["message_id"], m["content"]) for m in mine] == [(message_id, f"标记 {session}")]
