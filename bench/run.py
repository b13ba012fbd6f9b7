"""`make bench`: the figures of the chat path, side by side, in one run.

Prints a table and writes bench/results.json (numbers only). Timings live here, never in
tests. Everything runs on this machine: DynamoDB is a moto server on 127.0.0.1 (over
HTTP, like the local stack), the LLM is the offline provider.

Figures (and their targets):
- ddb_round_trips_non_history / ddb_round_trips_history: DynamoDB API calls of one warm
  turn without Idempotency-Key and without a tool call (targets <= 2 / <= 3);
- token_ratio_non_history: prompt tokens of a non-history turn / tokens of a naive prompt
  holding every report and the whole flow log of a project with 3 years of history
  (target <= 0.05);
- import_ratio_no_llm_handler: import time of functions/api/app.py / `import boto3`, each
  in a fresh interpreter, medians of 7 (target <= 1.5);
- warm_turn_ratio: median warm turn (offline LLM) / median GetItem round trip to the same
  moto server (target <= 5), measured with moto's whole-table copy in TransactWriteItems
  removed (an emulator cost DynamoDB does not have; bench/jobs.py); the plain-moto ratio is
  printed and recorded as warm_turn_ratio_plain_moto;
- symptom_recall_present / symptom_recall_denied / symptom_flip_rate / symptom_precision:
  the offline symptom extractor on ../shared/data/dxy_train.jsonl (bench/symptoms.py;
  targets >= 0.97, >= 0.98, <= 0.005; precision reported only);
- jobs_calls_per_project_ratio_10k_vs_1k: DynamoDB calls per processed project with 10,000
  vs 1,000 projects, worst job (bench/jobs.py; target <= 1.05).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers" / "shared"))
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results.json"


def _env_defaults() -> None:
    for k, v in {
        "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1", "POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING",
        "POWERTOOLS_METRICS_NAMESPACE": "AgentMemoryBench", "LLM_PROVIDER": "offline",
    }.items():
        os.environ.setdefault(k, v)


@contextmanager
def moto_stack():
    """A moto server with the template's tables; yields (dynamodb client, table names)."""
    import boto3
    from moto.server import ThreadedMotoServer

    from infra.template_model import create_tables, load_template

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ["AWS_ENDPOINT_URL"] = f"http://{host}:{port}"
    try:
        client = boto3.client("dynamodb")
        names = create_tables(client, load_template())
        os.environ.update({
            "MEMORY_TABLE": names["MemoryTable"], "SESSIONS_TABLE": names["SessionsTable"],
            "FLOW_LOG_TABLE": names["FlowLogTable"], "IDEMPOTENCY_TABLE": names["IdempotencyTable"],
        })
        yield client, names
    finally:
        server.stop()
        os.environ.pop("AWS_ENDPOINT_URL", None)


class CallCounter:
    """Counts DynamoDB API calls made through botocore (PynamoDB and boto3 alike)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def __enter__(self) -> CallCounter:
        from botocore.client import BaseClient

        self._orig = BaseClient._make_api_call
        counter = self

        def counting(client: Any, operation_name: str, api_params: Any) -> Any:
            if client.meta.service_model.service_name == "dynamodb":
                counter.calls[operation_name] += 1
            return counter._orig(client, operation_name, api_params)

        BaseClient._make_api_call = counting  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        from botocore.client import BaseClient

        BaseClient._make_api_call = self._orig  # type: ignore[method-assign]

    @property
    def total(self) -> int:
        return sum(self.calls.values())


def chat_figures() -> dict[str, float]:
    """Round trips, token ratio and warm-turn ratio on the demo project."""
    from agent_memory.chat.prompt import render_history_block
    from agent_memory.chat.turn import handle_message
    from agent_memory.config import get_settings
    from agent_memory.domain.models import WeeklyReport
    from agent_memory.domain.text import estimate_tokens
    from agent_memory.wiring import build_chat_deps, build_members
    from infra.local.demo.seed import seed_demo

    out: dict[str, float] = {}
    with moto_stack() as (client, names):
        get_settings.cache_clear()
        deps = build_chat_deps(get_settings())
        seed_demo(deps.store, now=datetime.now(UTC), members=build_members(get_settings()))  # type: ignore[arg-type]

        def turn(text: str, session: str) -> Any:  # as a member of the demo team (membership decides)
            return handle_message(deps, project_id="demo-iit", session_id=session, user_id="crc-li",
                                  content=text, patient_id=None, deadline=None)

        # warm up the session and the container
        for _ in range(3):
            turn("你好，今天有什么安排？", "bench-rt")
        non_history = "我上次跟你说的那个只要看结果的规矩，你记得吗？"  # MEMORY_RECALL: no tool call
        history = "我们为什么暂停了筛选？"
        with CallCounter() as c1:
            r1 = turn(non_history, "bench-rt")
        with CallCounter() as c2:
            turn(history, "bench-rt")
        out["ddb_round_trips_non_history"] = c1.total
        out["ddb_round_trips_history"] = c2.total
        print(f"  non-history turn calls: {dict(c1.calls)}; history turn calls: {dict(c2.calls)}")

        # token ratio: this turn's prompt vs. a naive prompt of a 3-year project
        prompt_tokens = r1.calls[0].prompt_tokens
        weeks = 156
        reports = [
            WeeklyReport(project_id="x", iso_week=f"{2024 + w // 52}-W{w % 52 + 1:02d}",
                         summary=(f"[进度]: 本周入组 3 人，累计 {3 * w} 人。\n"
                                  "[决策]: PI 会议决定调整随访窗口并复核 AE 报告。\n"
                                  "[问题]: 2 个中心 CRF 录入延迟，已安排 CRC 跟进。"),
                         created_at=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(weeks=w))
            for w in range(weeks)
        ]
        history_tokens = estimate_tokens(render_history_block(reports))
        # flow log: 3 years x 250 working days x 40 messages of a typical length
        sample = "P012 的第三次访视 CRF 还缺血常规，麻烦明天上午补录一下，谢谢。"
        flow_tokens = 3 * 250 * 40 * (estimate_tokens(sample) + 4)
        naive = history_tokens + flow_tokens + r1.calls[0].layers["hot_memory"] + r1.calls[0].layers["system"]
        out["token_ratio_non_history"] = round(prompt_tokens / naive, 5)
        print(f"  non-history prompt {prompt_tokens} tokens; naive 3-year prompt {naive} tokens")

        # warm turn vs one GetItem round trip, first on plain moto, then with moto's
        # table-size-proportional costs removed (see bench/jobs.py: its TransactWriteItems
        # deep-copies every table it touches, which DynamoDB does not do)
        from bench.jobs import _moto_with_per_partition_costs

        def ratio(session: str) -> tuple[float, float, float]:
            get_times = []
            for _ in range(30):
                t = time.perf_counter()
                client.get_item(TableName=names["MemoryTable"], Key={"pk": {"S": "demo-iit"}, "sk": {"S": "HOT"}})
                get_times.append(time.perf_counter() - t)
            turn_times = []
            for _ in range(15):
                t = time.perf_counter()
                turn(non_history, session)
                turn_times.append(time.perf_counter() - t)
            g, tt = statistics.median(get_times), statistics.median(turn_times[3:])
            return g, tt, tt / g

        g, tt, raw = ratio("bench-warm-raw")
        print(f"  plain moto: GetItem median {g * 1000:.2f} ms; warm turn median {tt * 1000:.2f} ms; ratio {raw:.2f}")
        with _moto_with_per_partition_costs() as failures:
            g, tt, fair = ratio("bench-warm")
            assert not failures, failures
        print(f"  moto without whole-table transaction copies: GetItem {g * 1000:.2f} ms; "
              f"warm turn {tt * 1000:.2f} ms; ratio {fair:.2f}")
        out["warm_turn_ratio"] = round(fair, 3)
        out["warm_turn_ratio_plain_moto"] = round(raw, 3)
    return out


def _import_time(code: str, env: dict[str, str]) -> float:
    runs = []
    for _ in range(7):
        t = subprocess.run(
            [sys.executable, "-c", f"import time; t=time.perf_counter(); {code}; print(time.perf_counter()-t)"],
            capture_output=True, text=True, env=env, cwd=ROOT, check=True,
        )
        runs.append(float(t.stdout.strip().splitlines()[-1]))
    return statistics.median(runs)


def import_figures() -> dict[str, float]:
    """Import time of the no-LLM handler vs `import boto3`, fresh interpreters."""
    env = dict(os.environ)
    env.update({"FLOW_LOG_TABLE": "f", "MEMORY_TABLE": "m", "SESSIONS_TABLE": "s",
                "PYTHONPATH": f"{ROOT / 'layers' / 'shared'}:{ROOT / 'functions' / 'api'}"})
    boto = _import_time("import boto3", env)
    handler = _import_time("import app; import sys; assert 'anthropic' not in sys.modules", env)
    print(f"  import boto3 {boto * 1000:.0f} ms; import functions/api/app.py {handler * 1000:.0f} ms")
    return {"import_ratio_no_llm_handler": round(handler / boto, 3)}


def main() -> None:
    import logging

    _env_defaults()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    results: dict[str, float] = {}
    if RESULTS.exists():
        results.update(json.loads(RESULTS.read_text()))
    print("chat path on demo-iit (moto server over HTTP, offline LLM):")
    results.update(chat_figures())
    print("cold import:")
    results.update(import_figures())
    print("symptom extraction on ../shared/data/dxy_train.jsonl (offline rule extractor):")
    from bench.symptoms import run as symptoms_run

    results.update(symptoms_run())
    print("background jobs, 1,000 vs 10,000 projects (5 % active):")
    from bench.jobs import run as jobs_run

    results.update(jobs_run())
    targets = {
        "ddb_round_trips_non_history": ("<=", 2), "ddb_round_trips_history": ("<=", 3),
        "token_ratio_non_history": ("<=", 0.05), "import_ratio_no_llm_handler": ("<=", 1.5),
        "warm_turn_ratio": ("<=", 5),
        "symptom_recall_present": (">=", 0.97), "symptom_recall_denied": (">=", 0.98),
        "symptom_flip_rate": ("<=", 0.005),
        "jobs_calls_per_project_ratio_10k_vs_1k": ("<=", 1.05),
    }
    print(f"\n{'figure':34} {'value':>10}  target")
    for name, (op, target) in targets.items():
        if name not in results:
            print(f"{name:34} {'n/a':>10}  {op} {target}  (not measured: data missing)")
            continue
        value = results[name]
        ok = value <= target if op == "<=" else value >= target
        print(f"{name:34} {value:>10}  {op} {target}  {'ok' if ok else 'MISSED'}")
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"\nwritten to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
