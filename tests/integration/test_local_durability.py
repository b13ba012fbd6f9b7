"""The local stack keeps its data across restarts, including a ``kill -9`` (infra.local.moto_persistence).

Each test runs ``python -m infra.local.server`` the way ``make run`` does, with its own
``LOCAL_DATA_DIR``, and checks what was acknowledged over HTTP after the restart.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from botocore.exceptions import ClientError

from infra.local.moto_persistence import LOG_NAME
from infra.local.stack import REPO_ROOT, free_port
from infra.local.token import mint_token

pytestmark = pytest.mark.slow

PROJECT = "demo-iit"
#: The server runs in another process: its seeded demo team's PI (an admin of the demo projects)
#: is the caller (the token is identity; the membership item decides access).
HEADERS = {"Authorization": f"Bearer {mint_token('pi-zhang')}"}


class Server:
    """A running ``infra.local.server`` process: its URL, banner lines and stack description."""

    def __init__(self, process: subprocess.Popen[str], base_url: str, banner: list[str], stack: dict[str, Any]):
        self.process = process
        self.base_url = base_url
        self.banner = banner
        self.stack = stack


@contextmanager
def local_server(data_dir: Path, tmp_path: Path) -> Iterator[Server]:
    """Start the server on ``data_dir``; on exit SIGTERM it unless the test already killed it."""
    port = free_port()
    stack_file = tmp_path / f"stack-{port}.json"
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "AWS_ENDPOINT_URL")}
    env.update({"PORT": str(port), "LOCAL_DATA_DIR": str(data_dir), "LOCAL_STACK_FILE": str(stack_file)})
    # a process group of its own, as `make run` in a terminal has: Ctrl-C signals the whole group
    process = subprocess.Popen([sys.executable, "-m", "infra.local.server"], cwd=REPO_ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
                               start_new_session=True)
    try:
        banner: list[str] = []
        assert process.stdout is not None
        deadline = time.monotonic() + 120
        for line in process.stdout:
            banner.append(line)
            if "Ctrl-C" in line or time.monotonic() > deadline:
                break
        assert any("Ctrl-C" in line for line in banner), f"server did not start: {banner}"
        # the handlers log to stdout (Powertools): keep reading it, or a full pipe blocks the server
        threading.Thread(target=process.stdout.read, daemon=True).start()
        yield Server(process, f"http://127.0.0.1:{port}", banner,
                     json.loads(stack_file.read_text(encoding="utf-8")))
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _ends_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie nobody reaped yet) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def _descendants(pid: int) -> set[int]:
    """Every process started by ``pid`` or by one of its descendants (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _turn(base_url: str, session: str, text: str) -> tuple[str, str] | None:
    """Post one chat turn; its (user message id, reply id) when acknowledged, else None."""
    response = requests.post(f"{base_url}/v1/projects/{PROJECT}/sessions/{session}/messages",
                             json={"content": text}, headers=HEADERS, timeout=60)
    if response.status_code not in (200, 201):
        return None
    body = response.json()
    return body["user_message_id"], body["message_id"]


def _stored_ids(base_url: str, sessions: list[str]) -> set[str]:
    ids: set[str] = set()
    for session in sessions:
        response = requests.get(f"{base_url}/v1/projects/{PROJECT}/sessions/{session}", headers=HEADERS, timeout=30)
        assert response.status_code == 200, response.text
        ids |= {m["message_id"] for m in response.json()["window"]}
    return ids


def _concurrent_turns(base_url: str, sessions: list[str], turns_per_session: int, tag: str) -> set[str]:
    """``turns_per_session`` turns in each session, the sessions in parallel; the acknowledged ids."""

    def run(session: str) -> list[str]:
        acked: list[str] = []
        for i in range(turns_per_session):
            ids = _turn(base_url, session, f"{tag} 第 {i} 条：今天的随访安排好了吗？")
            if ids:
                acked.extend(ids)
        return acked

    with ThreadPoolExecutor(max_workers=len(sessions)) as pool:
        return {message_id for ids in pool.map(run, sessions) for message_id in ids}


def test_every_acknowledged_turn_is_there_after_sigkill_and_after_a_clean_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    sessions = [f"durable-{i}" for i in range(4)]
    # Given a fresh server that acknowledged turns in four sessions at once, then was killed -9
    with local_server(data_dir, tmp_path) as first:
        assert any(f"data:       {data_dir} (new;" in line for line in first.banner)
        acked = _concurrent_turns(first.base_url, sessions, 4, "first")
        assert len(acked) == 4 * 4 * 2
        moto_pid = first.stack["moto_pid"]
        assert moto_pid != first.process.pid  # DynamoDB runs in a process of its own, as a service would
        children = _descendants(first.process.pid)  # moto, the function containers and their fork server
        assert moto_pid in children and len(children) >= 3
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=30)
    # Then moto's process ends with it (it does not keep the data directory locked), and so does
    # every container of the functions
    assert _ends_within(moto_pid, 10)
    assert [pid for pid in children if not _ends_within(pid, 10)] == []
    # When it starts again on the same data directory
    with local_server(data_dir, tmp_path) as second:
        # Then it says it restored the data, and every acknowledged message is there
        assert any(f"data:       {data_dir} (restored in" in line for line in second.banner)
        assert acked <= _stored_ids(second.base_url, sessions)
        # and the demo seed did not run again over the restored data (one set of demo reports)
        more = _concurrent_turns(second.base_url, sessions[:2], 2, "second")
        assert len(more) == 2 * 2 * 2
        # and demo-iit still answers from the local REDCap (started again, on a new port)
        answer = requests.post(f"{second.base_url}/v1/projects/{PROJECT}/sessions/durable-redcap/messages",
                               json={"content": "P001 入组了吗？"}, headers=HEADERS, timeout=60)
        assert answer.status_code == 200, answer.text
        assert "2026-02-05" in answer.json()["reply"]
    # When it was stopped cleanly (SIGTERM) and starts again
    with local_server(data_dir, tmp_path) as third:
        # Then the turns of both runs are there
        assert acked | more <= _stored_ids(third.base_url, sessions)


def _refused(exc: requests.ConnectionError) -> bool:
    """Whether the connection was refused (nothing listening), not reset or dropped once made."""
    return "Connection refused" in str(exc)  # urllib3's NewConnectionError carries the errno's text


@pytest.mark.parametrize("stop", ["sigterm", "ctrl-c"])
def test_a_graceful_stop_under_load_keeps_every_acknowledged_turn(tmp_path: Path, stop: str) -> None:
    data_dir = tmp_path / "data"
    sessions = [f"stop-{i}" for i in range(6)]
    acked: set[str] = set()
    statuses: list[int] = []
    dropped: list[str] = []
    gateway_503s: list[tuple[Any, int]] = []
    started = threading.Event()
    guard = threading.Lock()

    def keep_chatting(base_url: str, session: str) -> None:
        for i in range(200):
            try:
                response = requests.post(f"{base_url}/v1/projects/{PROJECT}/sessions/{session}/messages",
                                         json={"content": f"停止前第 {i} 条：今天的随访安排好了吗？"},
                                         headers=HEADERS, timeout=60)
            except requests.ConnectionError as exc:
                if not _refused(exc):
                    with guard:
                        dropped.append(repr(exc))
                return  # the server stopped listening
            with guard:
                statuses.append(response.status_code)
                if response.status_code == 503:  # the gateway's, as it stops: the client waits out Retry-After
                    gateway_503s.append((response.json(), int(response.headers["Retry-After"])))
                    return
                if response.status_code == 200:
                    acked.update((response.json()["user_message_id"], response.json()["message_id"]))
                    if len(acked) >= 12:
                        started.set()

    # Given a server answering turns in six sessions at once
    with local_server(data_dir, tmp_path) as first, ThreadPoolExecutor(max_workers=len(sessions)) as pool:
        for session in sessions:
            pool.submit(keep_chatting, first.base_url, session)
        assert started.wait(timeout=120)
        moto_pid = first.stack["moto_pid"]
        # When it is stopped gracefully while turns are in flight: SIGTERM to the server, or Ctrl-C
        # in its terminal (SIGINT to its whole process group, moto's process included if it were there)
        if stop == "sigterm":
            first.process.send_signal(signal.SIGTERM)
        else:
            os.killpg(first.process.pid, signal.SIGINT)
        first.process.wait(timeout=90)
    assert first.process.returncode == 0
    assert _ends_within(moto_pid, 10)
    # Then no request got a server error or a reset connection while it stopped (a late one gets
    # 503, then connections are refused), and after a restart every acknowledged message is there
    assert set(statuses) <= {200, 409, 503}, sorted(set(statuses))
    assert dropped == []
    assert all(body == {"message": "Service Unavailable"} and wait > 0 for body, wait in gateway_503s), gateway_503s
    with local_server(data_dir, tmp_path) as second:
        assert acked <= _stored_ids(second.base_url, sessions)


def test_a_write_cut_short_by_a_crash_is_dropped_and_the_rest_restored(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # Given a server that acknowledged turns and was killed while writing a line (a torn last line)
    with local_server(data_dir, tmp_path) as first:
        acked = _concurrent_turns(first.base_url, ["torn"], 3, "torn")
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=30)
    with (data_dir / LOG_NAME).open("a", encoding="utf-8") as log:
        log.write('{"t":"w","a":"123456789012","r":"eu-west-1","w":[["Sess')
    # When it starts again, Then it starts and every acknowledged turn is there
    with local_server(data_dir, tmp_path) as second:
        assert acked <= _stored_ids(second.base_url, ["torn"])


def test_a_cancelled_transaction_leaves_no_trace_after_a_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # Given a server whose embedded DynamoDB cancels a transaction after applying its first write
    with local_server(data_dir, tmp_path) as first:
        client = boto3.client("dynamodb", endpoint_url=first.stack["moto_url"], region_name="eu-west-1",
                              aws_access_key_id="local", aws_secret_access_key="local")
        table = first.stack["table_names"]["MemoryTable"]
        with pytest.raises(ClientError) as cancelled:
            client.transact_write_items(TransactItems=[
                {"Put": {"TableName": table, "Item": {"pk": {"S": "tx-probe"}, "sk": {"S": "A"}}}},
                {"Put": {"TableName": table, "Item": {"pk": {"S": "tx-probe"}, "sk": {"S": "B"}},
                         "ConditionExpression": "attribute_exists(pk)"}},
            ])
        assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
        client.put_item(TableName=table, Item={"pk": {"S": "tx-probe"}, "sk": {"S": "C"}})
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=30)
    # When it starts again, Then only the acknowledged write is there
    with local_server(data_dir, tmp_path) as second:
        client = boto3.client("dynamodb", endpoint_url=second.stack["moto_url"], region_name="eu-west-1",
                              aws_access_key_id="local", aws_secret_access_key="local")
        items = client.query(TableName=table, KeyConditionExpression="pk = :p",
                             ExpressionAttributeValues={":p": {"S": "tx-probe"}})["Items"]
        assert [i["sk"]["S"] for i in items] == ["C"]


def test_a_project_stored_before_the_patient_references_gets_them_at_the_next_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    refs_key = {"pk": {"S": "demo-clinic#PATIENT#pt-001"}, "sk": {"S": "DIAGREFS"}}
    project_key = {"pk": {"S": "demo-clinic"}, "sk": {"S": "PROJECT"}}

    def client(server: Server) -> Any:
        return boto3.client("dynamodb", endpoint_url=server.stack["moto_url"], region_name="eu-west-1",
                            aws_access_key_id="local", aws_secret_access_key="local")

    # Given demo-clinic stored as before the patients' references items: no mark, no item for
    # pt-001, whose seeded diagnosis exists
    with local_server(data_dir, tmp_path) as first:
        tables = first.stack["table_names"]
        dynamodb = client(first)
        assert "Item" in dynamodb.get_item(TableName=tables["SessionsTable"], Key=refs_key)
        dynamodb.update_item(TableName=tables["MemoryTable"], Key=project_key,
                             UpdateExpression="REMOVE patient_refs_since")
        dynamodb.delete_item(TableName=tables["SessionsTable"], Key=refs_key)
    # When the server starts again on that data
    with local_server(data_dir, tmp_path) as second:
        dynamodb = client(second)
        # Then the project was backfilled: pt-001's item names the diagnosis, the project is marked
        item = dynamodb.get_item(TableName=tables["SessionsTable"], Key=refs_key, ConsistentRead=True)["Item"]
        assert [r["diagnosis_id"] for r in json.loads(item["refs"]["S"])] == ["dx-pt001-1"]
        project = dynamodb.get_item(TableName=tables["MemoryTable"], Key=project_key, ConsistentRead=True)["Item"]
        assert "patient_refs_since" in project


def test_a_second_server_on_the_same_data_directory_refuses_to_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with local_server(data_dir, tmp_path):
        env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "AWS_ENDPOINT_URL")}
        env.update({"PORT": str(free_port()), "LOCAL_DATA_DIR": str(data_dir),
                    "LOCAL_STACK_FILE": str(tmp_path / "other.json")})
        other = subprocess.run([sys.executable, "-m", "infra.local.server"], cwd=REPO_ROOT, env=env,
                               capture_output=True, text=True, timeout=120)
        assert other.returncode == 1
        assert "in use by another local server" in other.stderr


def test_the_server_stops_when_its_moto_process_dies(tmp_path: Path) -> None:
    # Given a running server
    data_dir = tmp_path / "data"
    with local_server(data_dir, tmp_path) as server:
        # When its moto process is killed (say, by the out-of-memory killer)
        os.kill(server.stack["moto_pid"], signal.SIGKILL)
        # Then the server stops on its own with exit code 1 instead of answering 503 forever
        assert server.process.wait(timeout=30) == 1
    # and the next start restores every acknowledged turn from the data directory
    with local_server(data_dir, tmp_path) as again:
        assert any(f"data:       {data_dir} (restored in" in line for line in again.banner)


def test_a_server_on_a_taken_port_fails_before_writing_anything(tmp_path: Path) -> None:
    # Given a port another program listens on
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        data_dir = tmp_path / "data"
        env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "AWS_ENDPOINT_URL")}
        env.update({"PORT": str(port), "LOCAL_DATA_DIR": str(data_dir), "LOCAL_STACK_FILE": str(tmp_path / "s.json")})
        # When the server is started on it
        started = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "infra.local.server"], cwd=REPO_ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
    # Then it fails saying so, before moto started or the demo data was seeded into the directory
    assert run.returncode == 1
    assert "in use" in run.stderr.lower() or "address already" in run.stderr.lower()
    assert not (data_dir / LOG_NAME).exists()
    assert time.monotonic() - started < 30
