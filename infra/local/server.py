"""``python -m infra.local.server`` (``make run``): the whole service on this machine.

No AWS account, no Docker, no network: moto serves DynamoDB and Secrets Manager in a child process
(it ends with this one, however this one ends), the tables come from ``template.yaml``, each
function's containers are processes of their own running its real handler (``infra.local.functions``)
behind the local HTTP API, and the LLM is the offline provider unless ``ANTHROPIC_API_KEY`` is set
(then the key is stored in moto Secrets Manager, never in an environment, as in AWS).

Environment: ``PORT`` (default 3000), ``MOTO_PORT`` (default: a free port), ``REDCAP_PORT`` (the
local REDCap server, default 3001: fixed, so a project pointed at it works after a restart),
``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``, ``LOCAL_DATA_DIR`` (default ``.local/data``: the
DynamoDB tables, the secrets and the reminder schedules, kept across restarts and a ``kill -9``),
``LOCAL_CONTAINERS_PER_FUNCTION`` (default 8). Every route but the
public ones needs ``Authorization: Bearer <jwt>``, verified as API Gateway's JWT authorizer does
(``make token`` prints one). Logs one line per request (method, path, status, duration, function).
While it runs, ``.local/stack.json`` (:data:`STACK_FILE`) describes the stack for other processes
(URLs, table / queue / topic names, the functions' environment, no secret): ``make job`` reads it.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from contextlib import suppress
from pathlib import Path
from types import FrameType

from infra.local.provision import DEFAULT_REDCAP_PORT
from infra.local.stack import REPO_ROOT, LocalStack, LocalStackError
from infra.local.token import LOCAL_AUDIENCE, LOCAL_ISSUER

#: Where the running server describes itself (``LocalStack.describe()``); removed on stop.
#: ``LOCAL_STACK_FILE`` overrides it (tests, or two servers side by side).
STACK_FILE = Path(os.environ.get("LOCAL_STACK_FILE") or REPO_ROOT / ".local" / "stack.json")
#: Where the DynamoDB tables are kept across restarts (``infra.local.moto_persistence``);
#: ``LOCAL_DATA_DIR`` overrides it. ``make reset`` deletes it.
DATA_DIR = Path(os.environ.get("LOCAL_DATA_DIR") or REPO_ROOT / ".local" / "data")

EXAMPLE_DATA_QUESTION = "P001 入组了吗？"
EXAMPLE_HISTORY_QUESTION = "最近入组太慢了，我们之前有没有讨论过怎么解决？"
#: The shell line that puts a dev token into ``$TOKEN`` (the curl examples use it).
TOKEN_COMMAND = "TOKEN=$(make -s token USER=dev PROJECT=demo-iit ROLE=admin | tail -1)"
AUTH_HEADER = "-H \"Authorization: Bearer $TOKEN\""


def curl_example(base_url: str, content: str, session: str = "demo-1") -> str:
    """A ready-to-paste curl posting ``{"content": ...}`` to the demo project's chat route."""
    return (
        f"curl -s -X POST {base_url}/v1/projects/demo-iit/sessions/{session}/messages \\\n"
        f"    {AUTH_HEADER} -H 'content-type: application/json' \\\n"
        f"    -d '{{\"content\": \"{content}\"}}'"
    )


def _demo_projects(stack: LocalStack) -> str:
    """The banner's demo line: the demo projects still stored (an admin may have removed them)."""
    from agent_memory.domain.errors import ProjectNotFound

    repo, shown = stack.repo, []
    for project_id in ("demo-iit", "demo-clinic"):
        with suppress(ProjectNotFound):
            repo.get_project(project_id)
            reports = f" (hot memory, {len(repo.load_history(project_id, limit_weeks=520))} weekly reports)"
            shown.append(f"project {project_id}{reports if project_id == 'demo-iit' else ''}")
    return ", ".join(shown) or "none (the demo projects were removed; `make reset` seeds them again)"


def banner(stack: LocalStack) -> str:
    """What the server prints once it is ready."""
    if stack.llm_provider == "anthropic":
        llm = "anthropic (Claude; API key read from moto Secrets Manager)"
    else:
        llm = "offline (deterministic, no network; set ANTHROPIC_API_KEY to use Claude)"
    demo = _demo_projects(stack)
    if stack.data_dir is None:
        data = "in memory only (lost when the server stops)"
    elif stack.restarted:
        data = f"{stack.data_dir} (restored in {stack.moto_start_seconds:.1f} s; `make reset` wipes it)"
    else:
        data = f"{stack.data_dir} (new; kept across restarts; `make reset` wipes it)"
    return "\n".join(
        [
            "Agent Memory Service - local stack",
            f"  API:        {stack.base_url}",
            f"  data:       {data}",
            f"  LLM:        {llm}",
            f"  AWS (moto): {stack.moto_url}  tables: {', '.join(sorted(stack.table_names.values()))}",
            f"  auth:       Bearer JWT, verified locally (issuer {LOCAL_ISSUER}, audience {LOCAL_AUDIENCE})",
            f"  demo data:  {demo}",
            *([f"  REDCap:     {stack.redcap.api_url}  (demo-iit's clinical data; token in .local/stack.json)"]
              if stack.redcap is not None else []),
            *([f"  WeCom:      API emulator {stack.wecom.emulator.base_url}; demo-iit's callback "
               f"{stack.base_url}/v1/wecom/demo-iit/callback (WeCom ids crc.li, crc.wang, pi.zhang, dm.chen; "
               "credentials in .local/stack.json)"] if stack.wecom is not None else []),
            f"  console:    {stack.base_url}/console  (sign in with a token from make token)",
            f"  OpenAPI:    {stack.base_url}/v1/openapi.json",
            "",
            "Get a dev token first (in the shell you run curl from):",
            "  " + TOKEN_COMMAND,
            "Ask about current data:",
            "  " + curl_example(stack.base_url, EXAMPLE_DATA_QUESTION),
            "Ask about history (loads the weekly reports):",
            "  " + curl_example(stack.base_url, EXAMPLE_HISTORY_QUESTION),
            "Ask in WeCom (a signed, encrypted message to the callback; prints the answer WeCom received):",
            f"  make wecom-say USER=crc.li TEXT=\"{EXAMPLE_DATA_QUESTION}\"",
            "Health:",
            f"  curl -s {stack.base_url}/v1/health",
            "Background jobs (in another shell; see README 'Background jobs'):",
            "  make job JOB=distill PROJECT=demo-iit DATE=$(TZ=Asia/Shanghai date +%F)",
            "  (DATE = the day to distill, in the project's time zone Asia/Shanghai: here its today,",
            "   which is merged so far but not marked done until the day is over)",
            f"  curl -s {AUTH_HEADER} {stack.base_url}/v1/projects/demo-iit/memory",
            "",
            "Ctrl-C to stop.",
        ]
    )


#: How often the main thread looks at the stop flag (seconds).
POLL_S = 0.2
#: Set by the SIGINT / SIGTERM handler, read by the main loop and by the local gateway on every
#: request (from then on it answers 503: ``LocalStack(stop_requested=...)``). A plain boolean on purpose: a
#: signal handler runs between bytecodes of the main thread, so it must not take a lock (e.g.
#: ``threading.Event.set()`` while the main thread is inside ``Event.wait()`` can deadlock).
_stop_requested = False


def request_stop(signum: int, frame: FrameType | None) -> None:
    """The signal handler: only records the request; shutdown runs in the main thread."""
    global _stop_requested
    _stop_requested = True


def install_stop_handlers() -> None:
    """Route SIGINT (Ctrl-C) and SIGTERM to :func:`request_stop`."""
    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)


def main() -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    logging.getLogger("infra.local").setLevel(logging.INFO)  # one line per request
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's per-call access log
    port = int(os.environ.get("PORT", "3000"))
    moto_port = int(os.environ.get("MOTO_PORT", "0"))
    redcap_port = int(os.environ.get("REDCAP_PORT") or DEFAULT_REDCAP_PORT)

    install_stop_handlers()

    try:
        stack = LocalStack(port=port, moto_port=moto_port, data_dir=DATA_DIR,
                           stop_requested=lambda: _stop_requested, redcap_port=redcap_port).start()
    except (LocalStackError, OSError) as exc:
        print(f"local stack failed to start: {exc}", file=sys.stderr)
        return 1
    clock = None
    try:
        write_stack_file(stack)
        print(banner(stack), flush=True)
        from infra.local.reminder_clock import start_for_server

        clock = start_for_server(stack, out=lambda line: print(line, flush=True))
        while not _stop_requested:
            time.sleep(POLL_S)
            if not stack.moto_running():
                # the data lives in moto's process: without it every request would fail, and its
                # data directory is no longer locked (another server may take it); stop, loudly
                print("moto (the local DynamoDB) ended unexpectedly: stopping the local server; "
                      "`make run` again restores the data", file=sys.stderr, flush=True)
                return 1
        print("\nstopping ...", file=sys.stderr, flush=True)
    finally:
        if clock is not None:
            clock.stop()
        remove_stack_file()
        stack.stop()
    return 0


def write_stack_file(stack: LocalStack) -> None:
    """Describe the running stack in :data:`STACK_FILE` (for ``python -m infra.jobs``), unless
    another server that is still running wrote it (that one keeps it)."""
    try:
        owner = int(json.loads(STACK_FILE.read_text(encoding="utf-8")).get("pid", 0))
    except (OSError, ValueError, TypeError):
        owner = 0
    if owner and owner != os.getpid() and _alive(owner):
        print(f"note: {STACK_FILE} belongs to the local server with pid {owner}; not replaced", file=sys.stderr)
        return
    STACK_FILE.parent.mkdir(parents=True, exist_ok=True)
    STACK_FILE.write_text(json.dumps(stack.describe(), indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stack_file() -> None:
    """Remove :data:`STACK_FILE` if this process wrote it (another server may have replaced it)."""
    with suppress(OSError, ValueError):
        if json.loads(STACK_FILE.read_text(encoding="utf-8")).get("pid") == os.getpid():
            STACK_FILE.unlink()


if __name__ == "__main__":
    sys.exit(main())
