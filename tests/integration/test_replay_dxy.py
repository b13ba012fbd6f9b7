"""Real input: replay real paediatric consultations (../shared/data/dxy_train.jsonl) through
HTTP against the local endpoint.

Each consultation is its own session; each patient turn is one message. Every turn must
answer 200, the flow log must hold every message exactly once, and the prompt must carry
at most the last 10 turns.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "dxy_train.jsonl"
FALLBACK = Path(__file__).resolve().parents[1] / "fixtures" / "dxy_sample.jsonl"
PROJECT = "demo-clinic"
N_CONSULTATIONS = 60


def _consultations() -> list[dict[str, Any]]:
    path = DATA if DATA.exists() else FALLBACK
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    # The source has a few repeated consult ids: keep the first of each (one session each).
    unique = list({row["consult_id"]: row for row in reversed(rows)}.values())[::-1]
    return unique[:N_CONSULTATIONS]


def _flow_log(stack: Any) -> list[dict[str, Any]]:
    client = stack.aws_client("dynamodb")
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("scan").paginate(TableName=stack.table_names["FlowLogTable"]):
        items.extend(page["Items"])
    return items


@pytest.mark.slow
def test_replay_real_consultations_every_turn_recorded_once(local_stack: Any, api: Any) -> None:
    # Given real consultations, each replayed into its own session
    consultations = _consultations()
    assert len(consultations) >= 50
    sent: dict[str, list[str]] = {}
    max_recent = 0
    for row in consultations:
        session = f"dxy-{row['consult_id']}"
        sent[session] = []
        for turn in row["turns"]:
            if turn["role"] != "patient":
                continue
            # When each patient turn is posted
            resp = api.post(
                f"{local_stack.base_url}/v1/projects/{PROJECT}/sessions/{session}/messages",
                json={"content": turn["content"], "patient_id": f"pt-{row['consult_id']}"},
                timeout=30,
            )
            # Then it is answered
            assert resp.status_code == 200, resp.text
            body = resp.json()
            assert body["provider"] == "offline"
            for call in body["calls"]:
                assert call["recent_turns"] <= 10
                max_recent = max(max_recent, call["recent_turns"])
            sent[session].append(turn["content"])

    # Then the flow log holds every message of these sessions exactly once
    items = [i for i in _flow_log(local_stack) if i["session_id"]["S"] in sent]
    ids = Counter(i["message_id"]["S"] for i in items)
    assert all(n == 1 for n in ids.values())
    for session, contents in sent.items():
        mine = [i for i in items if i["session_id"]["S"] == session]
        users = sorted((i for i in mine if i["role"]["S"] == "user"), key=lambda i: i["sk"]["S"])
        assistants = [i for i in mine if i["role"]["S"] == "assistant"]
        assert [u["content"]["S"] for u in users] == contents
        assert len(assistants) == len(contents)
    assert max_recent >= 1


@pytest.mark.slow
def test_replay_long_visit_prompt_carries_the_last_ten_turns_dropped_in_blocks(local_stack: Any, api: Any) -> None:
    # Given one long visit: the patient turns of several consultations in one session
    turns = [t["content"] for row in _consultations()[:8] for t in row["turns"] if t["role"] == "patient"]
    assert len(turns) > 12
    session = "dxy-long-visit"
    seen = []
    for content in turns:
        resp = api.post(
            f"{local_stack.base_url}/v1/projects/{PROJECT}/sessions/{session}/messages",
            json={"content": content}, timeout=30,
        )
        assert resp.status_code == 200, resp.text
        seen.append(resp.json()["calls"][0]["recent_turns"])
    # Then the prompt grows one turn at a time, and once it holds 10 turns it keeps the last 10 and
    # drops the older ones 5 at a time (10 to 14 turns; docs/architecture.md, "Prompt caching")
    assert seen[:11] == list(range(11))[:len(seen[:11])]
    assert all(10 <= n <= 14 for n in seen[10:])
    # And the context endpoint shows exactly those turns for the last reply
    last_id = resp.json()["message_id"]
    ctx = api.get(
        f"{local_stack.base_url}/v1/projects/{PROJECT}/sessions/{session}/messages/{last_id}/context", timeout=30
    )
    assert ctx.status_code == 200, ctx.text
    blocks = {b["name"]: b for b in ctx.json()["calls"][0]["blocks"]}
    assert blocks["recent_turns"]["text"].count("user: ") == seen[-1]
    assert blocks["user_message"]["text"] == turns[-1]
