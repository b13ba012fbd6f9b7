"""The local runtime serves concurrent requests in threads of one process: each resolver must see
its own request (infra.local.powertools_patches), as each Lambda execution environment does."""

from __future__ import annotations

import json
import threading
import time
from typing import Any, cast

from agent_memory.http.powertools import APIGatewayHttpResolver
from infra.local import powertools_patches


def _event(path: str, body: str) -> dict[str, Any]:
    return {
        "version": "2.0", "routeKey": f"POST {path}", "rawPath": path, "rawQueryString": "",
        "headers": {"content-type": "application/json"},
        "requestContext": {
            "http": {"method": "POST", "path": path, "sourceIp": "127.0.0.1", "protocol": "HTTP/1.1",
                     "userAgent": "test"},
            "requestId": body, "routeKey": f"POST {path}", "stage": "$default",
        },
        "body": body, "isBase64Encoded": False,
    }


def _resolvers(n: int) -> list[APIGatewayHttpResolver]:
    apps = []
    for _ in range(n):
        app = APIGatewayHttpResolver()

        @app.post("/echo")
        def echo(app: APIGatewayHttpResolver = app) -> dict[str, str]:
            time.sleep(0.002)  # let other threads resolve meanwhile
            return {"body": app.current_event.body or "", "request_id": app.current_event.request_context.request_id}

        apps.append(app)
    return apps


def _swapped_answers(threads: int = 8, requests_each: int = 25) -> int:
    apps = _resolvers(2)  # two "containers" of one function, as the local pool has
    wrong: list[str] = []

    def client(i: int) -> None:
        for k in range(requests_each):
            body = f"{i}-{k}"
            answer = json.loads(apps[i % 2].resolve(_event("/echo", body), cast(Any, None))["body"])
            if answer != {"body": body, "request_id": body}:
                wrong.append(body)

    workers = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return len(wrong)


def test_concurrent_requests_in_one_process_each_see_their_own_event() -> None:
    powertools_patches.apply()
    assert _swapped_answers() == 0


def test_a_request_in_one_thread_never_sees_another_threads_event_after_it() -> None:
    powertools_patches.apply()
    apps = _resolvers(1)
    seen: dict[str, str] = {}

    def one(body: str) -> None:
        seen[body] = json.loads(apps[0].resolve(_event("/echo", body), cast(Any, None))["body"])["body"]

    threads = [threading.Thread(target=one, args=(f"t{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {f"t{i}": f"t{i}" for i in range(6)}
