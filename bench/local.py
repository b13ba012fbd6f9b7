"""`make bench`, the local runtime: figures measured against `make run` itself.

Each figure starts ``python -m infra.local.server`` (what `make run` runs) as a child process with
a data directory of its own under a temporary folder, and talks to it over HTTP with dev tokens:

- local_rps_c8: chat turns per second (offline LLM, no tool call) with 8 clients at once, each in
  its own session (target >= 20);
- local_rss_growth_mb_1000_turns: resident memory of the server's processes (the server, its moto
  child, the fork server and every function container: one process each since the containers
  became processes, so pages they share are counted once per process) after 1,000 more turns minus
  before them (VmRSS summed, MB; target <= 100), with
  the median turn time of the first and the last 100 turns (flat = the last within 1.5x the first);
- restart_seconds_10k_turns: seconds from starting the server to its banner with 10,000 turns
  stored, in the worst case (the after-image log of all 10,000 turns not yet compacted, as after a
  ``kill -9``) and after the compaction of that start (the next restart). The 10,000 turns are the
  log lines of real turns of this server, repeated under other session and message ids (same
  items, same sizes), because producing them over HTTP takes longer than the bench's budget.
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "demo-iit"
QUESTION = "今天有什么安排？"  # GENERAL intent: no tool call, no history


@contextmanager
def local_server(data_dir: Path) -> Iterator[tuple[subprocess.Popen[str], str, float]]:
    """`make run` on ``data_dir``; yields (process, base URL, seconds until its banner was printed)."""
    from infra.local.stack import free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "AWS_ENDPOINT_URL")}
    env.update({"PORT": str(port), "LOCAL_DATA_DIR": str(data_dir), "LOCAL_STACK_FILE": str(data_dir / "stack.json"),
                "LLM_PROVIDER": "offline"})
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "infra.local.server"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if "Ctrl-C" in line:
                break
        else:
            raise RuntimeError("the local server did not start")
        # the handlers log to stdout (Powertools): keep reading it, or a full pipe blocks the server
        threading.Thread(target=process.stdout.read, daemon=True).start()
        yield process, f"http://127.0.0.1:{port}", time.perf_counter() - started
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _headers() -> dict[str, str]:
    from infra.local.token import mint_token

    # the demo projects' seeded PI is their admin (membership decides access, the token is identity)
    return {"Authorization": f"Bearer {mint_token('pi-zhang')}"}


def _turn(http: requests.Session, base_url: str, session: str) -> float:
    started = time.perf_counter()
    response = http.post(f"{base_url}/v1/projects/{PROJECT}/sessions/{session}/messages",
                         json={"content": QUESTION}, timeout=60)
    if response.status_code != 200:
        raise RuntimeError(f"turn failed: {response.status_code} {response.text[:200]}")
    return time.perf_counter() - started


def _turns(base_url: str, count: int, clients: int, prefix: str) -> tuple[float, list[float]]:
    """``count`` turns by ``clients`` clients at once (each its own sessions of 20 turns);
    (wall seconds, per-turn seconds in completion order)."""
    headers = _headers()
    per_client = count // clients

    def client(index: int) -> list[tuple[float, float]]:
        http = requests.Session()
        http.headers.update(headers)
        out = []
        for i in range(per_client):
            seconds = _turn(http, base_url, f"{prefix}-{index}-{i // 20}")
            out.append((time.perf_counter(), seconds))
        return out

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        results = [r for rs in pool.map(client, range(clients)) for r in rs]
    wall = time.perf_counter() - started
    return wall, [seconds for _, seconds in sorted(results)]


def _rss_mb(pid: int) -> float:
    """Resident memory (MB) of process ``pid`` and all its descendants (moto and the function
    containers run as descendants of `make run`'s process)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        parents[int(stat.parent.name)] = int(fields[1])
    tree, grew = {pid}, True
    while grew:
        more = {child for child, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    total_kb = 0
    for member in tree:
        try:
            status = Path(f"/proc/{member}/status").read_text()
        except OSError:
            continue
        total_kb += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total_kb / 1024


def throughput_and_memory() -> dict[str, float]:
    """local_rps_c8, local_rss_growth_mb_1000_turns and the median turn of the first / last 100 turns."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp, local_server(Path(tmp)) as (process, url, _):
        _turns(url, 48, 8, "warm")  # every container started, caches warm
        wall, _ = _turns(url, 240, 8, "rps")
        out["local_rps_c8"] = round(240 / wall, 2)
        print(f"  240 turns at concurrency 8 in {wall:.1f} s: {240 / wall:.1f} turns/s")
        before = _rss_mb(process.pid)
        wall, times = _turns(url, 1000, 8, "rss")
        after = _rss_mb(process.pid)
        first, last = statistics.median(times[:100]), statistics.median(times[-100:])
        out["local_rss_growth_mb_1000_turns"] = round(after - before, 1)
        out["local_turn_median_ms_first_100"] = round(first * 1000, 1)
        out["local_turn_median_ms_last_100"] = round(last * 1000, 1)
        print(f"  RSS {before:.0f} MB -> {after:.0f} MB after 1,000 turns at concurrency 8 ({wall:.0f} s); "
              f"median turn {first * 1000:.0f} ms (first 100) -> {last * 1000:.0f} ms (last 100)")
    return out


_ID = re.compile(r'"(m[0-9a-f]{16,})"')


def restart_figures(turns: int = 10_000, sample_turns: int = 40) -> dict[str, float]:
    """restart_seconds_10k_turns (uncompacted log, as after a kill -9) and after compaction."""
    from infra.local.moto_persistence import LOG_NAME

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as tmp:
        data = Path(tmp)
        log = data / LOG_NAME
        with local_server(data) as (process, url, fresh_seconds):
            mark = log.stat().st_size
            headers = _headers()
            http = requests.Session()
            http.headers.update(headers)
            for i in range(sample_turns):
                _turn(http, url, f"sample-{i // 20}")
            process.send_signal(signal.SIGKILL)
            process.wait()
        with log.open("rb") as f:
            f.seek(mark)
            sample = f.read().decode("utf-8").splitlines()
        # the same lines again under other sessions and message ids, until `turns` turns are stored
        with log.open("a", encoding="utf-8") as f:
            for copy in range(1, turns // sample_turns):
                renamed = rf'"\1c{copy}"'
                for line in sample:
                    f.write(_ID.sub(renamed, line.replace("sample-", f"copy{copy}-")) + "\n")
        size_mb = log.stat().st_size / 1e6
        with local_server(data) as (_, url, seconds_uncompacted):
            check = requests.get(f"{url}/v1/projects/{PROJECT}/sessions/copy{turns // sample_turns - 1}-1",
                                 headers=_headers(), timeout=30)
            assert check.status_code == 200 and check.json()["message_count"] == 40, check.text[:200]
        with local_server(data) as (_, url, seconds_compacted):
            pass
        print(f"  start with no data: {fresh_seconds:.1f} s; with {turns:,} turns stored: "
              f"{seconds_uncompacted:.1f} s (log of {size_mb:.0f} MB not compacted, as after kill -9), "
              f"{seconds_compacted:.1f} s (compacted, {log.stat().st_size / 1e6:.0f} MB)")
        out["restart_seconds_10k_turns"] = round(seconds_uncompacted, 2)
        out["restart_seconds_10k_turns_compacted"] = round(seconds_compacted, 2)
        out["start_seconds_no_data"] = round(fresh_seconds, 2)
    return out


def run() -> dict[str, Any]:
    """Every local-runtime figure."""
    return {**throughput_and_memory(), **restart_figures()}
