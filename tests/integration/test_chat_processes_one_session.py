"""Many Lambda containers of the chat function writing ONE session at once (what Lambda does under
load): every acknowledged turn is stored exactly once, none is lost, and a turn that still loses the
race after the append's retries answers 409 ``version_conflict`` with ``Retry-After``, never 500.

Each container is an OS process (``tests.support.chat_process``) running the real handler with the
local stack's functions' environment, against the local stack's moto server (``infra.local.
moto_patches`` applied: transactions with DynamoDB's semantics under concurrency). The processes
import the handler first and then start their turns together. (What moto's transactions themselves
guarantee under threads is ``test_moto_concurrent_transactions.py``; this is the chat turn's
read-modify-write on top of them.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from typing import Any

from infra.local.stack import REPO_ROOT, LocalStack
from tests.support.auth import grant

PROCESSES = 8
TURNS = 2
PROJECT = "demo-iit"


def _start(local_stack: LocalStack, session: str, worker: int) -> subprocess.Popen[str]:
    grant(f"{PROJECT}:member", f"worker-{worker}")  # the token proves identity; membership opens the project
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(local_stack.env)
    env.pop("ANTHROPIC_API_KEY", None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "layers" / "shared")])
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.chat_process", "--project", PROJECT, "--session", session,
         "--worker", str(worker), "--turns", str(TURNS)],
        cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _run_together(local_stack: LocalStack, session: str) -> list[dict[str, Any]]:
    """Start the processes, wait until each has imported the handler, release them together, and
    return every turn's outcome."""
    processes = [_start(local_stack, session, n) for n in range(PROCESSES)]
    try:
        for process in processes:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.strip() == "READY", f"a chat process did not start: {line!r}"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()  # communicate() below closes it
        outcomes: list[dict[str, Any]] = []
        for process in processes:
            out, err = process.communicate(timeout=240)
            assert process.returncode == 0, err[-2000:]
            outcomes += [json.loads(line[len("RESULT "):]) for line in out.splitlines() if line.startswith("RESULT ")]
        return outcomes
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def _message_items(local_stack: LocalStack, session: str) -> list[dict[str, Any]]:
    client = local_stack.aws_client("dynamodb")
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("query").paginate(
        TableName=local_stack.table_names["SessionsTable"],
        KeyConditionExpression="pk = :pk AND begins_with(sk, :msg)",
        ExpressionAttributeValues={":pk": {"S": f"{PROJECT}#{session}"}, ":msg": {"S": "MSG#"}},
        ConsistentRead=True,
    ):
        items.extend(page["Items"])
    return items


def test_eight_chat_processes_on_one_session_store_every_acknowledged_turn_exactly_once(
    local_stack: LocalStack, record_property: Any
) -> None:
    # Given: one new session of the demo project
    session = f"conc-{uuid.uuid4().hex[:8]}"

    # When: 8 chat processes send two turns each to it, all starting together
    outcomes = _run_together(local_stack, session)

    # Then: every turn was answered, 200 or 409 version_conflict with Retry-After; never a 500
    assert len(outcomes) == PROCESSES * TURNS
    statuses = Counter(o["status"] for o in outcomes)
    record_property("summary", f"chat processes on one session: {PROCESSES} processes x {TURNS} turns, "
                               f"statuses {dict(sorted(statuses.items()))}")
    assert set(statuses) <= {200, 409}, statuses
    for conflict in (o for o in outcomes if o["status"] == 409):
        assert conflict["error"] == "version_conflict"
        assert int(conflict["retry_after"]) >= 1
    acknowledged = [o for o in outcomes if o["status"] == 200]
    assert acknowledged

    # and every acknowledged turn is stored exactly once (its question and its reply), a refused one
    # not at all, and the session's counter agrees with the items
    items = _message_items(local_stack, session)
    by_content = Counter(i["content"]["S"] for i in items if i["role"]["S"] == "user")
    ids = Counter(i["message_id"]["S"] for i in items)
    for turn in acknowledged:
        assert by_content[turn["content"]] == 1, turn
        assert ids[turn["user_message_id"]] == 1 and ids[turn["message_id"]] == 1, turn
    for refused in (o for o in outcomes if o["status"] != 200):
        assert by_content[refused["content"]] == 0, refused
    assert len(items) == 2 * len(acknowledged)
    stored = local_stack.repo.get_session(PROJECT, session)
    assert stored is not None and stored.message_count == len(items)
