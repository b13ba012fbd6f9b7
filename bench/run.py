"""`make bench`: the figures of the chat path, side by side, in one run.

Prints a table and writes bench/results.json (numbers only). Timings live here, never in
tests. Everything runs on this machine: DynamoDB is a moto server on 127.0.0.1 (over
HTTP, like the local stack), the LLM is the offline provider.

One run, no merging: results.json holds exactly the figures this run measured (a section that
failed or did not run is absent, and says why on the console).

Figures (and their targets):
- ddb_round_trips_non_history / ddb_round_trips_history: DynamoDB API calls of one warm
  turn without Idempotency-Key and without a tool call on the demo project, a request to the chat
  function's event handler (the route guard makes the turn's read) (targets <= 2 / <= 3);
- ddb_round_trips_history_3y: the same for a history turn of a project holding >= 156 weekly
  reports and yearly summaries (target <= 3);
- ddb_round_trips_first_patient_turn: the first turn of a new session bound to a patient who
  has earlier diagnoses (target <= 2);
- token_ratio_realistic: prompt tokens of the turns of a mature session (30 turns of a mix of
  data, history and general questions; hot memory near its cap; 3 years of reports) / tokens of
  a naive prompt of the same turn: system + hot memory + the last 50 messages as stored (tool
  results included) + every weekly report (target <= 0.25);
- token_ratio_non_history: prompt tokens of a non-history turn / tokens of a naive prompt
  holding every report and the whole flow log of a project with 3 years of history
  (target <= 0.05);
- import_ratio_no_llm_handler: CPU time of importing functions/api/app.py / of `import boto3`,
  as deployed (the function and the layer byte-compiled like `make build` does, no bytecode
  written at run time); paired and interleaved: each pair is two fresh interpreters, boto3 and
  handler in alternating order, the figure is the median of the pairs' ratios (target <= 1.7);
- warm_turn_ratio: median warm turn (offline LLM) / median GetItem round trip to the same
  moto server (target <= 4), paired and interleaved (two GetItems, one turn per round), with moto
  as the local runtime runs it: a child process answering one request at a time with
  infra/local/moto_patches (item-level transaction rollback, item requests and responses as JSON,
  one size check per item built: emulator costs DynamoDB does not have); the same ratio on CPU
  time (this process and moto's) as warm_turn_ratio_cpu, and on plain moto in this process (as
  moto ships) as warm_turn_ratio_plain_moto;
- symptom_recall_present / symptom_recall_denied / symptom_flip_rate / symptom_precision:
  the offline symptom extractor on ../shared/data/dxy_train.jsonl (bench/symptoms.py;
  targets >= 0.97, >= 0.98, <= 0.005; precision reported only);
- jobs_calls_per_project_ratio_10k_vs_1k: DynamoDB calls per processed project with 10,000
  vs 1,000 projects, worst job (bench/jobs.py; target <= 1.05);
- local_rps_c8, local_rss_growth_mb_1000_turns, restart_seconds_10k_turns: against `make run`
  itself (bench/local.py; targets >= 20, <= 100).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
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
def moto_stack(child: bool = False) -> Any:
    """A moto server with the template's tables; yields (dynamodb client, table names, moto's pid).

    ``child=False``: plain moto (``ThreadedMotoServer``) in a thread of this process, as moto
    ships. ``child=True``: moto as `make run` runs it, a child process with
    ``infra.local.moto_patches`` applied (``infra.local.moto_server.MotoServer``).
    """
    import boto3

    from infra.template_model import create_tables, load_template

    server: Any
    if child:
        from infra.local.moto_server import MotoServer

        server = MotoServer("127.0.0.1", 0)
        server.start()
        url, pid = server.url, server.pid
    else:
        from moto.server import ThreadedMotoServer

        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        url, pid = f"http://{host}:{port}", os.getpid()
    os.environ["AWS_ENDPOINT_URL"] = url
    try:
        client = boto3.client("dynamodb")
        names = create_tables(client, load_template())
        os.environ.update({
            "MEMORY_TABLE": names["MemoryTable"], "SESSIONS_TABLE": names["SessionsTable"],
            "FLOW_LOG_TABLE": names["FlowLogTable"], "IDEMPOTENCY_TABLE": names["IdempotencyTable"],
        })
        yield client, names, pid
    finally:
        server.stop()
        os.environ.pop("AWS_ENDPOINT_URL", None)


def _cpu_clock(pid: int) -> int:
    """The CPU-time clock of process ``pid`` (all its threads, ended ones included), for
    ``time.clock_gettime``: nanosecond resolution, where ``/proc/<pid>/stat`` counts in ticks of
    10 ms (longer than a GetItem). ``clock_getcpuclockid(3)`` from the C library (Linux)."""
    import ctypes

    clock = ctypes.c_int()
    error = ctypes.CDLL(None, use_errno=True).clock_getcpuclockid(pid, ctypes.byref(clock))
    if error:
        raise OSError(error, f"clock_getcpuclockid({pid})")
    return clock.value


def _cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by this process, plus by ``pid`` when it is another process."""
    own = time.process_time()
    if pid == os.getpid():
        return own
    return own + time.clock_gettime(_cpu_clock(pid))


def warm_turn_ratio(
    client: Any, names: dict[str, str], turn: Any, session: str, moto_pid: int, rounds: int = 40,
) -> tuple[float, ...]:
    """Warm turn / GetItem round trip, paired and interleaved: each round is two GetItems then one
    turn, so a drift of the machine's speed moves both sides alike; medians over ``rounds`` rounds
    after the session's first 3 turns. Returns (GetItem s, turn s, wall ratio, CPU ratio); the CPU ratio
    counts this process and moto's (insensitive to how busy the machine is)."""
    question = "我上次跟你说的那个只要看结果的规矩，你记得吗？"  # MEMORY_RECALL: no tool call
    for _ in range(3):  # the session's first turns (not yet warm)
        turn(question, session)
    get_times, get_cpu, turn_times, turn_cpu = [], [], [], []
    for _ in range(rounds):
        for _ in range(2):
            t, c = time.perf_counter(), _cpu_seconds(moto_pid)
            client.get_item(TableName=names["MemoryTable"], Key={"pk": {"S": "demo-iit"}, "sk": {"S": "HOT"}})
            get_times.append(time.perf_counter() - t)
            get_cpu.append(_cpu_seconds(moto_pid) - c)
        t, c = time.perf_counter(), _cpu_seconds(moto_pid)
        turn(question, session)
        turn_times.append(time.perf_counter() - t)
        turn_cpu.append(_cpu_seconds(moto_pid) - c)
    g, tt = statistics.median(get_times), statistics.median(turn_times)
    return g, tt, tt / g, statistics.median(turn_cpu) / statistics.median(get_cpu)


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

        BaseClient._make_api_call = counting
        return self

    def __exit__(self, *exc: object) -> None:
        from botocore.client import BaseClient

        BaseClient._make_api_call = self._orig

    @property
    def total(self) -> int:
        return sum(self.calls.values())


def chat_figures() -> dict[str, float]:
    """Round trips, token ratio and warm-turn ratio on the demo project."""
    from agent_memory.adapters.dynamo.projects import ProjectRepository
    from agent_memory.chat.prompt import render_history_block
    from agent_memory.chat.turn import handle_message
    from agent_memory.config import get_settings
    from agent_memory.domain.models import WeeklyReport
    from agent_memory.domain.text import estimate_tokens
    from agent_memory.wiring import build_chat_deps, build_members
    from infra.local.demo.seed import seed_demo

    out: dict[str, float] = {}

    def demo_turns() -> Any:
        """Deps on the current tables, the demo seeded, and a turn as a member of the demo team."""
        get_settings.cache_clear()
        deps = build_chat_deps(get_settings())
        seed_demo(ProjectRepository(), now=datetime.now(UTC), members=build_members(get_settings()))

        def turn(text: str, session: str) -> Any:  # membership decides, crc-li is a member
            return handle_message(deps, project_id="demo-iit", session_id=session, user_id="crc-li",
                                  content=text, patient_id=None, deadline=None)

        return deps, turn

    # warm turn vs one GetItem round trip on plain moto (in this process, as moto ships), then
    # below on moto as the local runtime runs it: a child process with infra/local/moto_patches
    # (item-level transaction rollback, item requests and responses as JSON, one size check per
    # item built: emulator costs that DynamoDB does not have)
    with moto_stack() as (client, names, pid):
        _, turn = demo_turns()
        g, tt, raw, _ = warm_turn_ratio(client, names, turn, "bench-warm-raw", pid)
        print(f"  plain moto (in process): GetItem median {g * 1000:.2f} ms; warm turn median {tt * 1000:.2f} ms; "
              f"ratio {raw:.2f}")
        out["warm_turn_ratio_plain_moto"] = round(raw, 3)

    with moto_stack(child=True) as (client, names, pid):
        deps, turn = demo_turns()
        g, tt, fair, cpu = warm_turn_ratio(client, names, turn, "bench-warm", pid)
        print(f"  moto as the local runtime runs it (child process, patched): GetItem {g * 1000:.2f} ms; "
              f"warm turn {tt * 1000:.2f} ms; ratio {fair:.2f} (on CPU time, this process and moto's: {cpu:.2f})")
        out["warm_turn_ratio"] = round(fair, 3)
        out["warm_turn_ratio_cpu"] = round(cpu, 3)

        # warm up the session and the container
        for _ in range(3):
            turn("你好，今天有什么安排？", "bench-rt")
        non_history = "我上次跟你说的那个只要看结果的规矩，你记得吗？"  # MEMORY_RECALL: no tool call
        history = "我们为什么暂停了筛选？"
        # through the chat function, as a request: the route guard makes the turn's read and hands it on
        request = chat_function_requests(deps)
        with CallCounter() as c1:
            r1 = request(non_history, "bench-rt", None)
        with CallCounter() as c2:
            request(history, "bench-rt", None)
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

        out.update(_first_patient_turn(request))
        _add_three_years(deps.store.projects)
        with CallCounter() as c3:
            r3 = turn(history, "bench-rt")
        out["ddb_round_trips_history_3y"] = c3.total
        print(f"  history turn with {len(deps.store.load_history('demo-iit', limit_weeks=520))} weekly reports: "
              f"{dict(c3.calls)} (history weeks in the prompt: {r3.calls[-1].history_weeks})")
        out.update(_token_ratio_realistic(deps, turn))
    return out


def chat_function_requests(deps: Any) -> Any:
    """``request(text, session, patient_id) -> ChatResult``: one request to the chat function's event
    handler on ``deps`` (the route guard, its one read, then the turn), as the demo team's crc-li."""
    from agent_memory.chat.turn import ChatResult
    from agent_memory.config import get_settings
    from agent_memory.http.routes.chat import ChatFunctionDeps, chat_app
    from agent_memory.wiring import build_members
    from infra.local.events import LocalLambdaContext, build_http_api_event

    app = chat_app(ChatFunctionDeps(chat=deps, members=build_members(get_settings()), idempotency_table="unused",
                                    api_gateway_timeout_s=30, response_reserve_s=3))

    def request(text: str, session: str, patient_id: str | None) -> ChatResult:
        project = "demo-clinic" if patient_id else "demo-iit"
        body = json.dumps({"content": text, **({"patient_id": patient_id} if patient_id else {})}).encode()
        event = build_http_api_event(
            "POST", f"/v1/projects/{project}/sessions/{session}/messages", {"content-type": "application/json"}, "",
            body, "POST /v1/projects/{project_id}/sessions/{session_id}/messages",
            {"project_id": project, "session_id": session}, {"sub": "crc-li"},
        )
        context: Any = LocalLambdaContext("ChatFunction", 60, 1024)
        response = app.resolve(event, context)
        if response["statusCode"] != 200:
            raise RuntimeError(f"the chat function answered {response['statusCode']}: {response['body'][:200]}")
        return ChatResult.model_validate_json(response["body"])

    return request


def _first_patient_turn(request: Any) -> dict[str, float]:
    """DynamoDB calls of the first turn of a new session bound to a patient with earlier visits
    (a request to the chat function)."""
    with CallCounter() as c:
        request("孩子又咳嗽了，晚上更厉害，没有发烧。", "bench-new-visit", "pt-001")
    print(f"  first turn of a patient's new session: {dict(c.calls)}")
    return {"ddb_round_trips_first_patient_turn": c.total}


#: A weekly report of a busy project, about the length the archiver writes.
_REPORT_TEXT = (
    "[进度]: 本周入组 3 人，累计 {n} 人；2 个中心完成启动访视。\n"
    "[决策]: PI 会议决定调整随访窗口 ±3 天，并复核上月的 AE 报告。\n"
    "[问题]: 2 个中心 CRF 录入延迟，已安排 CRC 跟进；1 例方案偏离待伦理备案。"
)


def _add_three_years(store: Any) -> None:
    """demo-iit gets the weekly reports of 2023-2025 (156 weeks) and those years' summaries
    (``store``: the project's partition, a ``ProjectRepository``)."""
    from agent_memory.domain.models import WeeklyReport, YearlySummary

    start = datetime(2023, 1, 2, 1, 0, tzinfo=UTC)  # Monday of 2023-W01
    for w in range(156):
        monday = start + timedelta(weeks=w)
        year, week, _ = monday.isocalendar()
        store.put_weekly_report(WeeklyReport(
            project_id="demo-iit", iso_week=f"{year}-W{week:02d}", summary=_REPORT_TEXT.format(n=3 * w),
            created_at=monday + timedelta(days=7)))
    for year in (2023, 2024, 2025):
        store.put_yearly_summary(YearlySummary(
            project_id="demo-iit", year=year, weeks=[],
            summary=f"{year} 年：入组 150 人，关键决策 6 项，主要问题为 CRF 录入延迟。",
            created_at=datetime(year + 1, 1, 10, tzinfo=UTC)))


#: A realistic session: data questions (tool calls), history, memory recall and small talk.
_MATURE_MIX = (
    "P001 入组了吗？",
    "我们为什么暂停了筛选？",
    "P003 最近一次访视的数据齐了吗？",
    "你好，今天有什么安排？",
    "我上次跟你说的那个只要看结果的规矩，你记得吗？",
    "P002 有没有不良事件？",
)


def _token_ratio_realistic(deps: Any, turn: Any) -> dict[str, float]:
    """Prompt tokens of a mature session's turns / a naive prompt (last 50 messages + every report)."""
    from agent_memory.chat.prompt import render_history_block
    from agent_memory.domain.models import HotMemoryLine
    from agent_memory.domain.text import estimate_tokens

    store = deps.store
    projects = store.projects  # the chat store's project partition (the seeding write)
    from agent_memory.config import get_settings

    cap = get_settings().hot_memory_token_cap
    hot = projects.load_hot_memory("demo-iit")
    lines = list(hot.lines)
    n = 0
    while estimate_tokens(hot.model_copy(update={"lines": lines}).render()) < 0.9 * cap:
        base = hot.lines[n % len(hot.lines)]
        extra = {"line_id": f"bench-{n}", "text": f"{base.text}（补充 {n}）"}
        lines.append(HotMemoryLine(**{**base.model_dump(), **extra}))
        n += 1
    grown = hot.model_copy(update={"lines": lines})
    projects.save_hot_memory(grown, expected_version=hot.version, actor="bench", reason="bench", now=deps.now(),
                             tokens=estimate_tokens(grown.render()))
    hot_tokens = estimate_tokens(grown.render())
    reports = store.load_history("demo-iit", limit_weeks=520)
    all_reports_tokens = estimate_tokens(render_history_block(reports))

    ratios: list[tuple[int, int]] = []
    for i in range(30):
        result = turn(_MATURE_MIX[i % len(_MATURE_MIX)], "bench-mature")
        if i < 20:
            continue  # the session is mature from here on: its window is full
        previous = store.messages_between("demo-iit", "bench-mature", after_id=None, before_id=result.user_message_id,
                                          limit=50)
        last_50 = sum(estimate_tokens(m.content) + sum(estimate_tokens(tc.model_dump_json()) for tc in m.tool_calls)
                      for m in previous)
        ours = sum(c.prompt_tokens for c in result.calls)
        naive = result.calls[0].layers.get("system", 0) + hot_tokens + last_50 + all_reports_tokens
        ratios.append((ours, naive))
    per_turn = [o / n for o, n in ratios]
    overall = sum(o for o, _ in ratios) / sum(n for _, n in ratios)
    print(f"  mature session (hot memory {hot_tokens} tokens of {cap}, {len(reports)} reports = "
          f"{all_reports_tokens} tokens), last 10 of 30 turns: prompt / naive per turn {min(per_turn):.3f} .. "
          f"{max(per_turn):.3f}; all their tokens / all naive tokens {overall:.3f}")
    return {"token_ratio_realistic": round(overall, 4)}


def _deployed_copy(tmp: Path) -> dict[str, str]:
    """The API function and the layer as `make build` ships them: sources plus bytecode compiled
    ahead (``compileall``, unchecked-hash), in ``tmp``; the environment that imports them there:
    the API function's variables from template.yaml (Globals merged), no bytecode written at run
    time (Lambda's file system is read-only)."""
    function, layer = tmp / "function", tmp / "layer"
    shutil.copytree(ROOT / "functions" / "api", function, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "layers" / "shared", layer, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash", str(tmp)],
                   check=True)
    from infra.template_model import function_specs, load_template

    template = load_template()
    tables = {logical_id: logical_id.lower() for logical_id in ("FlowLogTable", "MemoryTable", "SessionsTable",
                                                                 "IdempotencyTable")}
    api = next(spec for spec in function_specs(template, tables) if spec.logical_id == "ApiFunction")
    env = dict(os.environ)
    env.update(api.environment)  # the function's environment as the template deploys it
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": f"{layer}:{function}"})
    return env


def _import_cpu(code: str, env: dict[str, str], cwd: Path) -> float:
    """CPU seconds (``time.process_time``) of ``code`` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", f"import time; t=time.process_time(); {code}; print(time.process_time()-t)"],
        capture_output=True, text=True, env=env, cwd=cwd, check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def import_figures(pairs: int = 21) -> dict[str, float]:
    """CPU import time of the no-LLM handler (as deployed) vs `import boto3`: paired, interleaved."""
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        env = _deployed_copy(Path(tmp))
        handler_code = "import app; import sys; assert 'anthropic' not in sys.modules"
        ratios, boto, handler = [], [], []
        for i in range(pairs):
            if i % 2 == 0:
                b = _import_cpu("import boto3", env, Path(tmp))
                h = _import_cpu(handler_code, env, Path(tmp))
            else:
                h = _import_cpu(handler_code, env, Path(tmp))
                b = _import_cpu("import boto3", env, Path(tmp))
            ratios.append(h / b)
            boto.append(b)
            handler.append(h)
    print(f"  import boto3 {statistics.median(boto) * 1000:.0f} ms CPU; import functions/api/app.py "
          f"{statistics.median(handler) * 1000:.0f} ms CPU (medians of {pairs}); median of the pairs' ratios "
          f"{statistics.median(ratios):.3f} (range {min(ratios):.2f} .. {max(ratios):.2f})")
    return {"import_ratio_no_llm_handler": round(statistics.median(ratios), 3)}


def _section(results: dict[str, float], title: str, run: Any) -> None:
    """Run one section; its figures join ``results`` only if it completed."""
    print(title)
    started = time.perf_counter()
    try:
        figures = run()
    except Exception:  # noqa: BLE001 - a failed section is reported and left out, never faked
        traceback.print_exc()
        print(f"  section failed after {time.perf_counter() - started:.0f} s: its figures are absent")
        return
    results.update(figures)
    print(f"  ({time.perf_counter() - started:.0f} s)")


#: Target of each figure (the figures without one are reported only).
TARGETS: dict[str, tuple[str, float]] = {
    "ddb_round_trips_non_history": ("<=", 2), "ddb_round_trips_history": ("<=", 3),
    "ddb_round_trips_history_3y": ("<=", 3), "ddb_round_trips_first_patient_turn": ("<=", 2),
    "token_ratio_non_history": ("<=", 0.05), "token_ratio_realistic": ("<=", 0.25),
    "import_ratio_no_llm_handler": ("<=", 1.7),
    "warm_turn_ratio": ("<=", 4),
    "local_rps_c8": (">=", 20), "local_rss_growth_mb_1000_turns": ("<=", 100),
    "restart_seconds_10k_turns": ("<=", float("inf")),
    "symptom_recall_present": (">=", 0.97), "symptom_recall_denied": (">=", 0.98),
    "symptom_flip_rate": ("<=", 0.005),
    "jobs_calls_per_project_ratio_10k_vs_1k": ("<=", 1.05),
}


def main() -> None:
    import logging

    _env_defaults()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    results: dict[str, float] = {}  # this run's figures only: nothing is carried over from an earlier run
    _section(results, "chat path on demo-iit (moto server over HTTP, offline LLM):", chat_figures)
    _section(results, "cold import (as deployed: byte-compiled, CPU time, paired and interleaved):", import_figures)
    from bench.symptoms import run as symptoms_run

    _section(results, "symptom extraction on ../shared/data/dxy_train.jsonl (offline rule extractor):", symptoms_run)
    from bench.jobs import run as jobs_run

    _section(results, "background jobs, 1,000 vs 10,000 projects (5 % active):", jobs_run)
    from bench.local import run as local_run

    _section(results, "the local runtime (`make run` as a child process, over HTTP):", local_run)

    print(f"\n{'figure':38} {'value':>10}  target")
    for name in sorted(set(TARGETS) | set(results)):
        if name not in results:
            print(f"{name:38} {'absent':>10}  (its section did not run to the end)")
            continue
        value = results[name]
        if name not in TARGETS or TARGETS[name][1] == float("inf"):
            print(f"{name:38} {value:>10.4g}  (reported)")
            continue
        op, target = TARGETS[name]
        ok = value <= target if op == "<=" else value >= target
        print(f"{name:38} {value:>10.4g}  {op} {target}  {'ok' if ok else 'MISSED'}")
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"\nwritten to {RESULTS.relative_to(ROOT)} (this run's figures only)")


if __name__ == "__main__":
    main()
