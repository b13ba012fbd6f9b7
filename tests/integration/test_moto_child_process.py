"""moto as ``make run`` runs it: a child process (``python -m infra.local.moto_server``) that ends
when its parent's end of its standard input closes — also while it is still restoring the data."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest

from infra.local import moto_persistence, moto_server
from infra.local.stack import REPO_ROOT, free_port

pytestmark = pytest.mark.slow


def _start(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "MOTO_DATA_DIR": str(data_dir),
           moto_server.EXIT_WITH_STDIN_ENV: "1"}
    env.pop("AWS_ENDPOINT_URL", None)
    return subprocess.Popen([sys.executable, "-m", "infra.local.moto_server", "-H", "127.0.0.1", "-p", str(port)],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def test_moto_ends_with_its_parent_even_while_it_restores_a_large_log(tmp_path: Path) -> None:
    # Given a data directory with one table and a large log (200,000 items: seconds to restore)
    data_dir = tmp_path / "data"
    port = free_port()
    first = _start(data_dir, port)
    deadline = time.monotonic() + 60
    while not _listening(port):
        assert time.monotonic() < deadline and first.poll() is None, "moto did not start"
        time.sleep(0.05)
    client = boto3.client("dynamodb", endpoint_url=f"http://127.0.0.1:{port}", region_name="eu-west-1",
                          aws_access_key_id="x", aws_secret_access_key="x")
    client.create_table(TableName="t", BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    assert first.stdin is not None
    first.stdin.close()  # the parent goes away: the child ends
    assert first.wait(timeout=10) == 0
    log = data_dir / moto_persistence.LOG_NAME
    table = json.loads(log.read_text(encoding="utf-8").splitlines()[0])
    items = [["t", {"pk": {"S": f"p{i}"}}, {"pk": {"S": f"p{i}"}, "text": {"S": "患者访视记录" * 4}}]
             for i in range(200_000)]
    with log.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"t": "w", "a": table["a"], "r": table["r"], "w": items}, ensure_ascii=False) + "\n")
    size = log.stat().st_size

    # When a new child starts restoring it and its parent is killed at once (stdin closes)
    second = _start(data_dir, free_port())
    time.sleep(0.5)
    assert second.poll() is None  # still restoring
    started = time.monotonic()
    assert second.stdin is not None
    second.stdin.close()

    # Then it ends right away, not after the restore, and leaves the data whole (the old log or its
    # compacted copy: a compaction replaces the log atomically)
    assert second.wait(timeout=30) == 0
    assert time.monotonic() - started < 2
    records, dropped = moto_persistence._read(log)
    assert not dropped
    restored = {tuple(k["pk"].values()) for r in records if r["t"] == "w" for _, k, _ in r["w"]}
    assert len(restored) == 200_000, size


def test_moto_refuses_a_data_directory_in_use_with_its_exit_code_and_reason(tmp_path: Path) -> None:
    # Given a data directory whose lock another process holds (a running server's moto)
    import fcntl

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    holder = os.open(data_dir / moto_persistence.LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        # When a moto child is started on it, its parent holding its standard input open
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "MOTO_DATA_DIR": str(data_dir),
               moto_server.EXIT_WITH_STDIN_ENV: "1"}
        env.pop("AWS_ENDPOINT_URL", None)
        child = subprocess.Popen([sys.executable, "-m", "infra.local.moto_server", "-H", "127.0.0.1",
                                  "-p", str(free_port())], env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert child.stderr is not None
        err = child.stderr.read()  # to its end: the child has exited (stdin is still open)
        code = child.wait(timeout=60)
    finally:
        os.close(holder)
    # Then it exits with EXIT_DATA_DIR_UNUSABLE and says why on its last stderr line (the thread
    # watching stdin must not abort the interpreter's shutdown: it once ended with SIGABRT, -6)
    assert code == moto_server.EXIT_DATA_DIR_UNUSABLE
    last = err.decode("utf-8").strip().splitlines()[-1]
    assert "is in use by another local server" in last
