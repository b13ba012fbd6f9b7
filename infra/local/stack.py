"""The local stack: moto + the template's tables + the real handlers behind a local HTTP API.

``LocalStack`` is what ``python -m infra.local.server`` runs and what the integration tests use:

1. start moto (an embedded DynamoDB / Secrets Manager server);
2. create the tables declared in ``template.yaml`` (through ``infra.template_model``, the one
   reader of the template);
3. build the functions' environment from the template (plus local overrides), check that every
   function agrees on it (locally they share one process, so one ``os.environ``), and put the
   Anthropic key, when there is one, into Secrets Manager instead of the environment;
4. import each handler from its file (both are ``app.py``, so each gets a unique module name):
   the first container of the function's pool (:class:`LocalFunction`; more start on demand);
5. seed the demo projects (``infra.local.demo.seed``);
6. serve HTTP: each request becomes an API Gateway HTTP API payload-2.0 event for the function
   that owns the route, and the Lambda proxy result becomes the HTTP response.

With ``data_dir`` the DynamoDB tables are restored from and logged to that directory
(:mod:`infra.local.moto_persistence`); without it they live in memory only.

Isolation (``isolated=True``, what the tests use): the stack's AWS environment is applied only
while the stack starts and while a handler runs (one invocation at a time, under a process-wide
lock), and the PynamoDB models are re-bound to the stack's tables before each invocation. So
tests in the same process that use moto's ``mock_aws`` and ``bind_tables`` for their own tables
neither see this stack's ``AWS_ENDPOINT_URL`` nor break it. Use ``moto_mode="process"`` with it:
moto's in-process backends are global, and a ``mock_aws()`` elsewhere in the process resets them.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import logging
import os
import re
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as wait_for_futures
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, Literal

from werkzeug.exceptions import BadRequest, MethodNotAllowed, NotFound, RequestEntityTooLarge
from werkzeug.routing import Map, RequestRedirect, Rule
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from infra.local.events import LocalLambdaContext, build_http_api_event, new_request_id
from infra.template_model import (
    FunctionSpec,
    LocalResource,
    RouteSpec,
    create_queues,
    create_schedule_groups,
    create_tables,
    create_topics,
    function_specs,
    load_template,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
LAYER_PATH = REPO_ROOT / "layers" / "shared"
LOCAL_REGION = "eu-west-1"
#: While stopping, the local HTTP API closes its listener once no request has come for this many
#: seconds, answering 503 + ``Retry-After`` meanwhile, or after STOP_503_MAX_S seconds of arrivals.
STOP_QUIET_S = 0.25
STOP_503_MAX_S = 3.0
#: API Gateway HTTP API integration timeout (AWS quota): past it the client gets 503.
GATEWAY_TIMEOUT_S = 30.0
#: API Gateway HTTP API payload quota (10 MB): a longer request body is refused with 413 before
#: it is read (also when its Content-Length only claims to be longer).
MAX_REQUEST_BODY_BYTES = 10 * 1024 * 1024

log = logging.getLogger("infra.local")

#: Dummy credentials: the local stack never talks to a real AWS account.
_DUMMY_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_SESSION_TOKEN": "local",
}
#: Never visible to a handler locally (the key goes to Secrets Manager, as in AWS).
_REMOVED_FROM_ENV = ("ANTHROPIC_API_KEY", "AWS_PROFILE", "AWS_DEFAULT_PROFILE")
#: Shell variables passed to the functions as they are, when set.
DEMO_CLINICAL_DATA_FILE = Path(__file__).resolve().parent / "demo" / "clinical_data.json"
#: demo-iit's REDCap token secret (under the template's ClinicalTokenSecretPrefix).
DEMO_REDCAP_SECRET = "agent-memory/redcap/demo-iit"
#: ``ANTHROPIC_BASE_URL`` + ``ANTHROPIC_API_KEY`` point the stack at any Messages-API server;
#: ``LLM_PROVIDER=bedrock`` with ``ANTHROPIC_BEDROCK_BASE_URL`` at a Bedrock endpoint.
_PASS_THROUGH = (
    "LLM_PROVIDER",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "BEDROCK_REGION",
    "ANTHROPIC_SECRET_MAX_AGE_S",
    "CHAT_MODEL_ID",
    "FAST_MODEL_ID",
    "LLM_MAX_OUTPUT_TOKENS",
    "LLM_EFFORT_CHAT",
    "LLM_EFFORT_INTENT",
    "LLM_EFFORT_SYMPTOMS",
    "LLM_EFFORT_SUMMARY",
    "LLM_EFFORT_DISTILL",
    "LLM_EFFORT_ARCHIVE",
    "LLM_EFFORT_COMPACT",
    "INTENT_CLASSIFIER",
    "SYMPTOM_EXTRACTOR",
    "SESSION_SUMMARISER",
    "LLM_MAX_RETRIES",
    "LOG_LEVEL",
)


#: Names a file to which every local stack appends one line per answered request:
#: ``{status} {method} {raw path} [{function}]`` (no query string, headers or body).
STATUS_LOG_ENV = "LOCAL_STACK_STATUS_LOG"


def record_status(path: str, status: int, method: str, raw_path: str, function: str) -> None:
    """Append one answered request to the status log ``path`` (one short line, one ``write`` in
    append mode, so lines of several stacks writing the same file never interleave)."""
    line = f"{status} {method} {raw_path} [{function}]\n"
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line)


class LocalStackError(RuntimeError):
    """The local stack cannot start as configured (the message says why)."""


class Unauthorized(Exception):
    """The request's token is unusable: API Gateway answers 401 without invoking the function."""


# --------------------------------------------------------------------------------------- claims
def claims_for_request(headers: Mapping[str, str]) -> dict[str, Any]:
    """The JWT claims the HTTP API's JWT authorizer would hand the function for this request.

    Verified the way the authorizer verifies them (``infra.local.token.verify_token``): the
    ``Authorization`` header (``Bearer <jwt>`` or the bare JWT, as the authorizer accepts), an RS256
    signature by the local key, the local issuer and audience, an unexpired ``exp``. ``make token``
    prints tokens it accepts.

    Raises:
        Unauthorized: no header or a token the authorizer would refuse (API Gateway's 401, the
            function is not invoked).
    """
    from infra.local.token import InvalidToken, verify_token

    lowered = {k.lower(): v for k, v in headers.items()}
    authorization = (lowered.get("authorization") or "").strip()
    if not authorization:
        raise Unauthorized("no Authorization header")
    scheme, _, rest = authorization.partition(" ")
    token = rest.strip() if scheme.lower() == "bearer" and rest.strip() else authorization
    try:
        return verify_token(token)
    except InvalidToken as exc:
        raise Unauthorized(str(exc)) from None


# ------------------------------------------------------------------------------------------ moto
def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class MotoServer:
    """moto's server with :mod:`infra.local.moto_patches`, in a thread of this process (``thread``)
    or as a child process (``process``: ``python -m infra.local.moto_patches``, which ends when this
    process does); with ``data_dir`` its DynamoDB is durable (:mod:`infra.local.moto_persistence`).
    ``start()`` returns once it listens (raises :class:`LocalStackError` otherwise); ``url`` and
    ``pid`` say where it is."""

    def __init__(
        self, mode: Literal["thread", "process"], host: str, port: int, data_dir: Path | None = None
    ) -> None:
        self.mode = mode
        self.host = host
        self.port = port
        self.data_dir = data_dir
        #: What the thread-mode restore found (``None`` in process mode or without ``data_dir``).
        self.restored: Any = None
        self._thread_server: Any = None
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def running(self) -> bool:
        """Whether moto still serves: its child process has not ended (``process`` mode), or its
        thread server was started and not stopped (``thread`` mode)."""
        if self._process is not None:
            return self._process.poll() is None
        return self._thread_server is not None

    @property
    def pid(self) -> int:
        """The process moto runs in: the child's in ``process`` mode, else this process's."""
        return self._process.pid if self._process is not None else os.getpid()

    def start(self) -> None:
        if self.mode == "thread":
            from moto.server import ThreadedMotoServer

            from infra.local import moto_patches

            moto_patches.apply()  # per-item transaction rollback under one lock (see the module)
            if self.data_dir is not None:
                from infra.local import moto_persistence

                try:
                    self.restored = moto_persistence.enable(self.data_dir)  # restore, then log every write
                except (moto_persistence.DataDirInUse, ValueError) as exc:
                    raise LocalStackError(str(exc)) from None
            self._thread_server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
            self._thread_server.start()
            self.port = int(self._thread_server.get_host_and_port()[1])
            return
        if self.port == 0:
            self.port = free_port(self.host)
        # moto's server with infra.local.moto_patches applied; the repository root must be importable.
        from infra.local import moto_patches

        python_path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)
        child_env = {**os.environ, "PYTHONPATH": python_path, moto_patches.EXIT_WITH_STDIN_ENV: "1"}
        child_env.pop("MOTO_DATA_DIR", None)
        if self.data_dir is not None:
            child_env["MOTO_DATA_DIR"] = str(self.data_dir)
        # stderr holds warnings and errors only (the access log is off): a file, read if the child fails
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        # stdin: a pipe whose write end only this process holds; the child ends when it closes.
        # A session of its own: Ctrl-C in a terminal signals the whole foreground process group,
        # and moto must outlive the server's drain of the requests in flight (the server stops it).
        self._process = subprocess.Popen(
            [sys.executable, "-m", "infra.local.moto_patches", "-H", self.host, "-p", str(self.port)],
            env=child_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                self._stderr.seek(0)
                lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
                reason = lines[-1] if lines else f"port {self.port} taken?"
                self._process = None
                if code == moto_patches.EXIT_DATA_DIR_UNUSABLE:
                    raise LocalStackError(reason)
                raise LocalStackError(f"moto server exited with code {code} ({reason})")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise LocalStackError(f"moto server did not listen on {self.url} within 60 s")

    def stop(self) -> None:
        if self._thread_server is not None:
            self._thread_server.stop()
            self._thread_server = None
            if self.data_dir is not None:
                from infra.local import moto_persistence

                moto_persistence.disable()
        if self._process is not None:
            assert self._process.stdin is not None
            with suppress(OSError):
                self._process.stdin.close()  # the child ends under its write lock (moto_patches.main)
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


# ------------------------------------------------------------------------------------ functions
#: Most "containers" (handler instances) per function locally; ``LOCAL_CONTAINERS_PER_FUNCTION``
#: overrides it. Lambda runs one request per execution environment at a time and adds
#: environments as requests arrive (docs/architecture.md, "Local runtime"); the pool does the same.
DEFAULT_CONTAINERS_PER_FUNCTION = 8


@dataclass
class Container:
    """One execution environment of a function: its own import of the handler module (its own
    module globals, as a Lambda container has), serving one request at a time."""

    module: ModuleType
    handler: Callable[[dict[str, Any], Any], Any]


@dataclass
class LocalFunction:
    """One Lambda function: its spec and a pool of containers.

    A request takes an idle container, or starts a new one (a cold start: the handler module is
    imported again under a name of its own) while there are fewer than ``max_containers``, or
    waits for one to be released. ``module`` / ``handler`` are the first container's.
    """

    spec: FunctionSpec
    module: ModuleType
    handler: Callable[[dict[str, Any], Any], Any]
    max_containers: int = DEFAULT_CONTAINERS_PER_FUNCTION
    #: Starts a new container (set by the stack: imports the handler file under ``name``).
    start_container: Callable[[str], Container] | None = None
    containers: list[Container] = field(default_factory=list)
    _idle: list[Container] = field(default_factory=list)
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _starting: int = 0
    _started: int = 0

    def __post_init__(self) -> None:
        first = Container(self.module, self.handler)
        self.containers.append(first)
        self._idle.append(first)

    @property
    def name(self) -> str:
        return self.spec.logical_id

    @contextmanager
    def container(self) -> Iterator[Container]:
        """An idle container for one invocation (started if the pool may grow, else waited for)."""
        with self._cond:
            while not self._idle and (
                self.start_container is None or len(self.containers) + self._starting >= self.max_containers
            ):
                self._cond.wait()
            chosen = self._idle.pop() if self._idle else None
            if chosen is None:
                self._starting += 1
                self._started += 1
                name = f"local_fn_{self.spec.logical_id}_{self._started + 1}"
        if chosen is None:
            assert self.start_container is not None
            try:
                chosen = self.start_container(name)
            finally:
                with self._cond:
                    self._starting -= 1
                    self._cond.notify_all()
            with self._cond:
                self.containers.append(chosen)
        try:
            yield chosen
        finally:
            with self._cond:
                self._idle.append(chosen)
                self._cond.notify()


def _route_rule_path(path: str) -> str:
    """``/a/{id}/b/{proxy+}`` -> ``/a/<id>/b/<path:proxy>`` (werkzeug rule syntax)."""
    path = re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\+\}", r"<path:\1>", path)
    return re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", r"<\1>", path)


def _json_response(status: int, payload: dict[str, Any], headers: Mapping[str, str] | None = None) -> Response:
    return Response(json.dumps(payload), status=status, headers=dict(headers or {}), mimetype="application/json")


def lambda_result_to_response(result: Any) -> Response:
    """Turn a Lambda proxy result (payload format 2.0) into an HTTP response, as API Gateway does.

    A dict with ``statusCode`` is used as is (``headers``, ``cookies``, ``body``,
    ``isBase64Encoded``); any other JSON value means 200 with that value as the JSON body.
    A malformed result is API Gateway's 500 ``{"message": "Internal Server Error"}``.
    """
    if not (isinstance(result, dict) and "statusCode" in result):
        body = result if isinstance(result, str) else json.dumps(result)
        return Response(body, status=200, mimetype="application/json")
    try:
        status = int(result["statusCode"])
        raw_body = result.get("body") or ""
        data = base64.b64decode(raw_body) if result.get("isBase64Encoded") else str(raw_body).encode("utf-8")
        headers = [(str(k), str(v)) for k, v in (result.get("headers") or {}).items()]
        headers += [("Set-Cookie", str(c)) for c in result.get("cookies") or []]
    except (TypeError, ValueError) as exc:
        log.error("malformed Lambda proxy result: %s", type(exc).__name__)
        return _json_response(500, {"message": "Internal Server Error"})
    has_type = any(k.lower() == "content-type" for k, _ in headers)
    return Response(data, status=status, headers=headers, mimetype=None if has_type else "application/json")


class _QuietRequestHandler(WSGIRequestHandler):
    """werkzeug's handler without its access log (it prints query strings); we log our own line."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


def _clear_settings_caches() -> None:
    """Forget the settings the handlers read at import (``get_settings``; the API function's
    ``get_store_settings``), so that the next import reads the current environment."""
    from agent_memory.config import get_settings
    from agent_memory.store_settings import get_store_settings

    get_settings.cache_clear()
    get_store_settings.cache_clear()


# ------------------------------------------------------------------------------------ the stack
class LocalStack:
    """Start moto, tables, environment, handlers, demo data and the HTTP endpoint; stop them all.

    Usage::

        with LocalStack() as stack:
            requests.get(f"{stack.base_url}/v1/health")

    Attributes (after start): ``base_url``, ``moto_url``, ``table_names`` (logical id -> name),
    ``resources`` (queues and topics: logical id -> ``LocalResource``), ``repo`` (a
    ``ChatRepository`` on the stack's tables), ``functions``, ``env``, ``llm_provider``.
    Only one stack may run in a process at a time (handlers share process-wide state).
    """

    _active: LocalStack | None = None
    _env_lock = threading.RLock()

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        moto_port: int = 0,
        moto_mode: Literal["thread", "process"] = "thread",
        isolated: bool = False,
        seed: bool = True,
        now: datetime | None = None,
        env_overrides: Mapping[str, str] | None = None,
        anthropic_api_key: str | None = None,
        template_path: Path | None = None,
        gateway_timeout_s: float = GATEWAY_TIMEOUT_S,
        data_dir: Path | None = None,
        stop_requested: Callable[[], bool] | None = None,
    ) -> None:
        """
        Args:
            port / moto_port: 0 = a free port.
            moto_mode: ``thread`` (ThreadedMotoServer, one process) or ``process`` (a child
                process: moto state isolated from ``mock_aws`` users in this process).
            isolated: apply the stack's environment only during start and invocations.
            seed: seed the demo projects (at ``now``, default the current time).
            env_overrides: function environment variables that win over the template.
            anthropic_api_key: default ``$ANTHROPIC_API_KEY``; when set the provider is
                ``anthropic`` and the key is stored in moto Secrets Manager.
            data_dir: keep the DynamoDB tables there across restarts
                (:mod:`infra.local.moto_persistence`); ``None`` = in memory only. A directory
                that already holds data is restored and not seeded again.
            stop_requested: read on every request; once it returns ``True`` a new request is
                answered 503 with ``Retry-After`` even before :meth:`stop` is called (the
                server's signal handler sets the flag it reads, and the main thread calls
                :meth:`stop` on its next look).
        """
        self._stop_requested = stop_requested
        self._host = host
        self._port = port
        self._moto = MotoServer(moto_mode, host, moto_port, data_dir)
        self.data_dir = data_dir
        self._isolated = isolated
        self._seed = seed
        self._now = now
        self._env_overrides = dict(env_overrides or {})
        self._api_key = anthropic_api_key if anthropic_api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        self._template_path = template_path
        self._gateway_timeout_s = gateway_timeout_s

        self.table_names: dict[str, str] = {}
        self.resources: dict[str, LocalResource] = {}
        self.functions: dict[str, LocalFunction] = {}
        self.env: dict[str, str] = {}
        self.llm_provider = "offline"
        self._routes: dict[str, tuple[LocalFunction, RouteSpec]] = {}
        self._url_map = Map([], merge_slashes=False)  # "/v1/health/" is not "/v1/health", as in API Gateway
        self._saved_env: dict[str, str] | None = None
        self._http: BaseWSGIServer | None = None
        self._http_thread: threading.Thread | None = None
        self._executor: ThreadPoolExecutor | None = None
        #: Guards ``_executor`` and ``_inflight``: a request is either handed to a container before
        #: :meth:`stop` starts draining (and is waited for) or answered 503 (never half-handled).
        self._submit_lock = threading.Lock()
        self._inflight: set[Future[Any]] = set()
        #: ``time.monotonic()`` of the newest request (:meth:`stop` waits for a quiet listener).
        self._last_arrival = 0.0
        self._bound_marker: Any = None
        #: ``True`` when ``data_dir`` already held data at start (restored, not seeded).
        self.restarted = False
        #: Seconds moto took to start (with ``data_dir``: including the restore of the stored data).
        self.moto_start_seconds = 0.0
        self.redcap: Any = None  # the local REDCap API server (infra.local.redcap_server), when seeded
        #: ``LOCAL_STACK_STATUS_LOG``: append every answer's status to this file (the test suite's
        #: proof that no stack served a 500), read once here (isolated mode swaps ``os.environ``).
        self._status_log = os.environ.get(STATUS_LOG_ENV) or None

    # ------------------------------------------------------------------------- lifecycle
    def __enter__(self) -> LocalStack:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> LocalStack:
        """Start everything (see the module docstring for the order); on failure, stop what started."""
        if LocalStack._active is not None:
            raise LocalStackError("another LocalStack is already running in this process")
        LocalStack._active = self
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        if str(LAYER_PATH) not in sys.path:  # the layer is /opt/python in Lambda; it stays importable
            sys.path.insert(0, str(LAYER_PATH))
        # the API's port first: one already taken fails the start before anything is written
        self._http = make_server(
            self._host, self._port, self._wsgi, threaded=True, request_handler=_QuietRequestHandler
        )
        self._port = int(self._http.server_address[1])
        started = time.perf_counter()
        self._moto.start()
        self.moto_start_seconds = time.perf_counter() - started
        template = load_template(self._template_path)
        self.table_names = create_tables(self.aws_client("dynamodb"), template)
        if self.data_dir is not None:
            # A restart: the stored data is the truth, the demo seed must not overwrite edits.
            memory_table = self.table_names["MemoryTable"]
            self.restarted = bool(self.aws_client("dynamodb").scan(TableName=memory_table, Limit=1)["Items"])
        # The job fan-out queues and the admin-alert topic (moto SQS / SNS); the local stack does
        # not poll the queue by itself: `python -m infra.jobs` delivers its messages to the worker.
        self.resources = {
            **create_queues(self.aws_client("sqs"), template),
            **create_topics(self.aws_client("sns"), template),
        }
        # The reminders' schedule group (moto EventBridge Scheduler; infra.local.reminder_clock fires them).
        create_schedule_groups(self.aws_client("scheduler"), template)

        overrides: dict[str, str] = {
            "LLM_PROVIDER": "anthropic" if self._api_key else "offline",
            "POWERTOOLS_TRACE_DISABLED": "true",
            # The demo projects' clinical data lives with the demo data, outside the Lambda layer.
            "CLINICAL_DATA_FILE": str(DEMO_CLINICAL_DATA_FILE),
        }
        for name in _PASS_THROUGH:
            if os.environ.get(name):
                overrides[name] = os.environ[name]
        overrides.update(self._env_overrides)
        specs = function_specs(template, self.table_names, overrides, self.resources)
        function_env = merge_function_environments(specs)
        function_env.setdefault("POWERTOOLS_METRICS_NAMESPACE", "AgentMemory")
        function_env.setdefault("POWERTOOLS_SERVICE_NAME", "agent-memory")
        self.llm_provider = function_env.get("LLM_PROVIDER", "offline")
        if self.llm_provider == "anthropic":
            if not self._api_key:
                raise LocalStackError(
                    "LLM_PROVIDER=anthropic needs ANTHROPIC_API_KEY (it is put into moto Secrets Manager)"
                )
            secret_name = function_env.get("ANTHROPIC_SECRET_NAME")
            if not secret_name:
                raise LocalStackError("the template sets no ANTHROPIC_SECRET_NAME")
            self._put_secret(secret_name, self._api_key)
        self.env = {
            **function_env,
            **_DUMMY_CREDENTIALS,
            "AWS_ENDPOINT_URL": self.moto_url,
            "AWS_REGION": LOCAL_REGION,
            "AWS_DEFAULT_REGION": LOCAL_REGION,
        }

        if not self._isolated:
            self._saved_env = dict(os.environ)
            self._apply_env()
        with self._env_scope():
            _clear_settings_caches()  # handlers read the settings at import: make them read ours
            for spec in specs:
                self.functions[spec.logical_id] = self._import_function(spec)
            _clear_settings_caches()  # do not leave our settings cached for others in this process
            self._bind_models()
            if self._seed:
                from agent_memory.adapters.dynamo.projects import ProjectRepository
                from infra.local.demo.seed import seed_demo

                # The local REDCap and its token secret are not kept across restarts: started on
                # every start, and demo-iit pointed at its new port.
                clinical_data = self._start_redcap()
                if not self.restarted:
                    seed_demo(
                        ProjectRepository(), now=self._now or datetime.now(UTC), clinical_data=clinical_data,
                        members=self.members,
                    )
                else:
                    self._repoint_demo_clinical_data(ProjectRepository(), clinical_data)
            if self.restarted:
                self._backfill_patient_refs()

        for logical_id, function in self.functions.items():
            for route in function.spec.routes:
                key = f"{logical_id} {route.method} {route.path}"
                self._routes[key] = (function, route)
                methods = None if route.method == "ANY" else [route.method]
                path = "/<path:proxy>" if route.path == "$default" else _route_rule_path(route.path)
                self._url_map.add(Rule(path, methods=methods, endpoint=key))
        self._executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="lambda")
        # socketserver's loop, not werkzeug's serve_forever (which closes the listening socket as it
        # returns): stop() answers the connections still queued on it first, then closes it
        self._http_thread = threading.Thread(target=socketserver.BaseServer.serve_forever, args=(self._http,),
                                             name="local-http-api", daemon=True)
        self._http_thread.start()

    def stop(self) -> None:
        """Stop taking requests, let the ones in flight finish (each answered only after its writes
        are stored), then stop moto, unload the handlers and restore the environment.

        A request that arrives while the stack stops is answered 503 with ``Retry-After`` (nothing
        of it runs), including one still queued on the listening socket when it closes; after that
        a client's connection is refused. The in-flight ones get up to the gateway timeout plus
        5 s; one still running after that is abandoned (its client gets no answer, as when API
        Gateway times out).
        """
        with self._submit_lock:
            executor, self._executor = self._executor, None
            inflight = set(self._inflight)
        # The listener keeps accepting while the requests in flight finish, so that an arrival gets
        # its 503: a connection left waiting in the listen backlog is reset when the socket closes.
        if inflight:
            _, pending = wait_for_futures(inflight, timeout=self._gateway_timeout_s + 5)
            if pending:
                log.warning("stopping with %d request(s) still running", len(pending))
        # Then it closes once no request has come for STOP_QUIET_S (a client that got its 503 waits
        # out Retry-After), or after STOP_503_MAX_S of arrivals (a client that ignores Retry-After
        # may then find the socket closing under its connection: reset, not refused).
        quiet_from = time.monotonic()
        while (time.monotonic() - self._last_arrival < STOP_QUIET_S
               and time.monotonic() - quiet_from < STOP_503_MAX_S):
            time.sleep(0.02)
        if self._http is not None and self._http_thread is not None:
            self._http.shutdown()  # serve_forever returns; handler threads of accepted ones go on
            self._answer_listen_backlog(self._http)
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        if self._http is not None:
            self._http.server_close()
            self._http = None
        if self._http_thread is not None:
            self._http_thread.join(timeout=10)
            self._http_thread = None
        for function in self.functions.values():
            for container in function.containers:
                sys.modules.pop(container.module.__name__, None)
        self.functions.clear()
        if self.redcap is not None:
            self.redcap.stop()
            self.redcap = None
        self._moto.stop()
        if self._saved_env is not None:
            os.environ.clear()
            os.environ.update(self._saved_env)
            self._saved_env = None
        if LocalStack._active is self:
            LocalStack._active = None

    @staticmethod
    def _answer_listen_backlog(server: BaseWSGIServer, timeout_s: float = 5.0) -> None:
        """Accept the connections still queued on ``server``'s listening socket and answer each
        (503 with ``Retry-After``: the stack is stopping) before the socket closes.

        Args:
            server: the local HTTP API's server, its ``serve_forever`` loop already ended.
            timeout_s: seconds to wait, in all, for those answers (a client that never sends its
                request is then dropped).
        """
        assert isinstance(server, socketserver.ThreadingMixIn)  # make_server(threaded=True)
        listener = server.socket
        listener.setblocking(False)
        answering: list[threading.Thread] = []
        while True:
            try:
                connection, address = listener.accept()
            except OSError:  # BlockingIOError: the backlog is empty
                break
            connection.setblocking(True)
            thread = threading.Thread(target=server.process_request_thread, args=(connection, address),
                                      name="local-http-api-stopping", daemon=True)
            thread.start()
            answering.append(thread)
        deadline = time.monotonic() + timeout_s
        for thread in answering:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------------------ properties
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the local HTTP API."""
        return f"http://{self._host}:{self._port}"

    @property
    def port(self) -> int:
        return self._port

    @property
    def moto_url(self) -> str:
        """Endpoint of the embedded AWS (``AWS_ENDPOINT_URL`` of the functions)."""
        return self._moto.url

    def moto_running(self) -> bool:
        """Whether the stack's moto still serves (``python -m infra.local.server`` stops when not)."""
        return self._moto.running()

    def describe(self) -> dict[str, Any]:
        """What another process needs to use this stack (``.local/stack.json``, written by
        ``infra.local.server``; read by ``python -m infra.jobs``): the URLs, the table, queue and
        topic names and the functions' environment (no secret: the Anthropic key is in moto
        Secrets Manager, never in the environment)."""
        return {
            "base_url": self.base_url,
            "moto_url": self.moto_url,
            "region": LOCAL_REGION,
            "table_names": dict(self.table_names),
            "resources": {
                k: {"type": r.type, "ref": r.ref, "arn": r.arn, "name": r.name} for k, r in self.resources.items()
            },
            "env": {k: v for k, v in self.env.items() if k not in _REMOVED_FROM_ENV},
            "llm_provider": self.llm_provider,
            "pid": os.getpid(),
            # moto's own process when it runs as a child (it ends with this one), else this one
            "moto_pid": self._moto.pid,
            # The local REDCap server and demo-iit's token (a fictional demo project, local only).
            **({"redcap": self.redcap_info()} if self.redcap is not None else {}),
        }

    def redcap_info(self) -> dict[str, str]:
        """The local REDCap server's API URL, demo-iit's demo token and its secret's name."""
        from infra.local.demo.redcap_project import DEMO_TOKEN

        return {"api_url": self.redcap.api_url, "token": DEMO_TOKEN, "token_secret": DEMO_REDCAP_SECRET}

    def _start_redcap(self) -> Any:
        """Start the local REDCap server with the demo project and put its token into moto
        Secrets Manager; demo-iit's clinical source (``ClinicalDataSource``)."""
        from agent_memory.domain.models import ClinicalDataSource
        from infra.local.demo.redcap_project import DEMO_TOKEN
        from infra.local.redcap_server import demo_server

        self.redcap = demo_server(port=int(os.environ.get("REDCAP_PORT") or 0)).start()
        self._put_secret(DEMO_REDCAP_SECRET, DEMO_TOKEN)
        return ClinicalDataSource(source="redcap", api_url=self.redcap.api_url, token_secret=DEMO_REDCAP_SECRET)

    def _backfill_patient_refs(self) -> None:
        """After a restart: every project stored before the patients' diagnosis references items
        existed gets them (``PatientRefsRepository.backfill_patient_refs``), so its first patient
        turns read them with the turn's one BatchGetItem instead of a Query. Projects already
        marked are skipped (the scan's filter); a project that cannot be finished now (a session
        being erased) keeps the Query until the next start."""
        from agent_memory.adapters.dynamo.patient_refs_upkeep import PatientRefsRepository
        from agent_memory.domain.errors import VersionConflict

        client = self.aws_client("dynamodb")
        repo = PatientRefsRepository()
        paginator = client.get_paginator("scan")
        for page in paginator.paginate(
            TableName=self.table_names["MemoryTable"], ProjectionExpression="pk",
            FilterExpression="sk = :p AND attribute_not_exists(patient_refs_since)",
            ExpressionAttributeValues={":p": {"S": "PROJECT"}},
        ):
            for raw in page["Items"]:
                try:
                    repo.backfill_patient_refs(raw["pk"]["S"], now=self._now or datetime.now(UTC))
                except VersionConflict:
                    logging.getLogger(__name__).warning("patient references of %s not backfilled", raw["pk"]["S"])

    @staticmethod
    def _repoint_demo_clinical_data(repo: Any, clinical_data: Any) -> None:
        """After a restart: demo-iit, while it still reads the demo REDCap secret, reads the local
        REDCap at its new URL (a project an admin pointed elsewhere, or removed, is left alone)."""
        from agent_memory.domain.errors import ProjectNotFound
        from infra.local.demo.hot_memory import DEMO_IIT_PROJECT_ID

        try:
            project = repo.get_project(DEMO_IIT_PROJECT_ID)
        except ProjectNotFound:
            return
        current = project.clinical_data
        if current is not None and current.token_secret == clinical_data.token_secret and current != clinical_data:
            repo.put_project(project.model_copy(update={"clinical_data": clinical_data}))

    @property
    def repo(self) -> Any:
        """A ``ChatRepository`` on this stack's tables (models re-bound if someone re-bound them)."""
        from agent_memory.adapters.dynamo.chat import ChatRepository

        with self._env_scope():
            self._ensure_bound()
        return ChatRepository()

    @property
    def members(self) -> Any:
        """A ``MemberRepository`` (projects and members) on this stack's tables."""
        from agent_memory.adapters.dynamo.members import MemberRepository

        with self._env_scope():
            self._ensure_bound()
        return MemberRepository()

    def aws_client(self, service: str) -> Any:
        """A boto3 client for the embedded AWS (explicit endpoint and dummy credentials)."""
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.moto_url,
            region_name=LOCAL_REGION,
            aws_access_key_id=_DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=_DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=_DUMMY_CREDENTIALS["AWS_SESSION_TOKEN"],
        )

    # ----------------------------------------------------------------------- invocation
    def invoke(self, logical_id: str, event: dict[str, Any], *, request_id: str | None = None) -> Any:
        """Invoke a function's handler with ``event`` and a fresh Lambda context (synchronously)."""
        function = self.functions[logical_id]
        context = LocalLambdaContext(
            function.spec.logical_id, function.spec.timeout_s, function.spec.memory_mb, request_id=request_id
        )
        with function.container() as container, self._env_scope():  # one request at a time per container
            if self._isolated:
                self._ensure_bound()
            return container.handler(event, context)

    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        started = time.monotonic()
        self._last_arrival = started
        request = Request(environ)
        raw_path = str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or request.path).split("?", 1)[0]
        label = "-"
        try:
            response, label = self._handle(request, raw_path)
        except Exception:  # the gateway itself must always answer
            log.exception("local gateway error")
            response = _json_response(500, {"message": "Internal Server Error"})
        log.info(
            "%s %s -> %d (%.0f ms) [%s]",
            request.method, raw_path, response.status_code, (time.monotonic() - started) * 1000, label,
        )
        if self._status_log:
            record_status(self._status_log, response.status_code, request.method, raw_path, label)
        return response(environ, start_response)

    def _handle(self, request: Request, raw_path: str) -> tuple[Response, str]:
        request_id = new_request_id()
        gateway_headers = {"apigw-requestid": request_id}
        adapter = self._url_map.bind_to_environ(request.environ)
        try:
            key, params = adapter.match()
        except MethodNotAllowed as exc:
            allow = ", ".join(sorted(exc.valid_methods or []))
            return _json_response(405, {"message": "Method Not Allowed"}, {**gateway_headers, "Allow": allow}), "-"
        except (NotFound, RequestRedirect):
            return _json_response(404, {"message": "Not Found"}, gateway_headers), "-"
        function, route = self._routes[str(key)]
        if request.method == "HEAD" and route.method not in ("HEAD", "ANY"):
            # werkzeug lets HEAD match a GET rule; API Gateway serves HEAD only where a route declares it
            head = next((r for k, r in self._routes.items() if k.endswith(f" HEAD {route.path}")), None)
            if head is None:
                return _json_response(404, {"message": "Not Found"}, gateway_headers), function.name
            function, route = head
        claims: dict[str, Any] | None = None
        if route.auth:
            try:
                claims = claims_for_request(dict(request.headers.items()))
            except Unauthorized:
                headers = {**gateway_headers, "www-authenticate": 'Bearer error="invalid_token"'}
                return _json_response(401, {"message": "Unauthorized"}, headers), function.name
        if (request.content_length or 0) > MAX_REQUEST_BODY_BYTES:
            return _json_response(413, {"message": "Request Entity Too Large"}, gateway_headers), function.name
        route_key = "$default" if route.path == "$default" else f"{route.method} {route.path}"
        # A chunked body has no Content-Length: it is read up to one byte past the quota (werkzeug
        # stops a stream at max_content_length without saying whether more was sent).
        request.max_content_length = MAX_REQUEST_BODY_BYTES + 1
        body: bytes | None
        try:
            body = request.get_data(cache=False)
        except RequestEntityTooLarge:
            body = None
        except (BadRequest, OSError, ValueError):  # a malformed chunk, a client gone before its body ended
            return _json_response(400, {"message": "Bad Request"}, gateway_headers), function.name
        if body is None or len(body) > MAX_REQUEST_BODY_BYTES:
            return _json_response(413, {"message": "Request Entity Too Large"}, gateway_headers), function.name
        event = build_http_api_event(
            method=request.method,
            path=raw_path,
            headers=list(request.headers.items()),
            query_string=request.environ.get("QUERY_STRING", ""),
            body=body,
            route_key=route_key,
            path_parameters={str(k): str(v) for k, v in params.items()} or None,
            claims=claims,
            request_id=request_id,
            source_ip=request.remote_addr or "127.0.0.1",
        )
        with self._submit_lock:
            if self._executor is None or (self._stop_requested is not None and self._stop_requested()):
                # the stack is stopping: nothing of this request runs
                headers = {**gateway_headers, "Retry-After": "5"}
                return _json_response(503, {"message": "Service Unavailable"}, headers), function.name
            future = self._executor.submit(self.invoke, function.name, event, request_id=str(uuid.uuid4()))
            self._inflight.add(future)
        future.add_done_callback(self._request_done)
        try:
            result = future.result(timeout=self._gateway_timeout_s)
        except FutureTimeout:
            log.warning("%s did not answer within %.0f s (gateway timeout)", function.name, self._gateway_timeout_s)
            return _json_response(503, {"message": "Service Unavailable"}, gateway_headers), function.name
        except Exception as exc:  # an unhandled function error is API Gateway's 500
            log.error("%s raised %s (unhandled function error)", function.name, type(exc).__name__, exc_info=exc)
            return _json_response(500, {"message": "Internal Server Error"}, gateway_headers), function.name
        response = lambda_result_to_response(result)
        for name, value in gateway_headers.items():
            response.headers.setdefault(name, value)
        return response, function.name

    def _request_done(self, future: Future[Any]) -> None:
        with self._submit_lock:
            self._inflight.discard(future)

    # -------------------------------------------------------------------------- helpers
    def _import_function(self, spec: FunctionSpec) -> LocalFunction:
        from infra.local import powertools_patches

        # Containers of all functions run in threads of this process: each request keeps its own
        # Powertools "current event" (see the module; in Lambda one process serves one request).
        powertools_patches.apply()
        first = self._import_container(spec, f"local_fn_{spec.logical_id}")
        maximum = int(os.environ.get("LOCAL_CONTAINERS_PER_FUNCTION") or DEFAULT_CONTAINERS_PER_FUNCTION)
        return LocalFunction(
            spec=spec, module=first.module, handler=first.handler, max_containers=max(1, maximum),
            start_container=lambda name: self._start_container(spec, name),
        )

    def _start_container(self, spec: FunctionSpec, name: str) -> Container:
        """A cold start while serving: the handler imported again, with the stack's settings."""
        with self._env_scope():
            if self._isolated:
                _clear_settings_caches()
            container = self._import_container(spec, name)
            if self._isolated:
                _clear_settings_caches()
        log.info("%s: new container %s (cold start)", spec.logical_id, name)
        return container

    def _import_container(self, spec: FunctionSpec, name: str) -> Container:
        module_path, _, attribute = spec.handler.rpartition(".")
        if not module_path:
            raise LocalStackError(f"{spec.logical_id}: handler {spec.handler!r} is not 'module.function'")
        file = REPO_ROOT / spec.code_uri / (module_path.replace(".", "/") + ".py")
        if not file.is_file():
            raise LocalStackError(f"{spec.logical_id}: handler file {file} does not exist")
        module_spec = importlib.util.spec_from_file_location(name, file)
        if module_spec is None or module_spec.loader is None:
            raise LocalStackError(f"{spec.logical_id}: cannot import {file}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        handler = getattr(module, attribute, None)
        if not callable(handler):
            raise LocalStackError(f"{spec.logical_id}: {file} has no callable {attribute!r}")
        return Container(module=module, handler=handler)

    def _put_secret(self, name: str, value: str) -> None:
        client = self.aws_client("secretsmanager")
        try:
            client.create_secret(Name=name, SecretString=value)
        except client.exceptions.ResourceExistsException:
            client.put_secret_value(SecretId=name, SecretString=value)

    def _apply_env(self) -> None:
        os.environ.update(self.env)
        for name in _REMOVED_FROM_ENV:
            os.environ.pop(name, None)

    @contextmanager
    def _env_scope(self) -> Iterator[None]:
        """The stack's environment, for the duration of the block (isolated mode only)."""
        if not self._isolated:
            yield
            return
        with LocalStack._env_lock:
            saved = dict(os.environ)
            self._apply_env()
            try:
                yield
            finally:
                os.environ.clear()
                os.environ.update(saved)

    def _bind_models(self) -> None:
        """Bind the PynamoDB models to this stack's tables.

        Isolated mode also creates every model's client now, inside the stack's environment:
        a botocore client reads ``AWS_ENDPOINT_URL`` when it is created, and code outside an
        invocation (``stack.repo`` in a test) runs without that variable. So every module of
        models is imported (registered) first, whether or not a handler imported it.
        """
        from agent_memory.adapters.dynamo import conversation_tables, record_tables, tables  # noqa: F401 - registered
        from agent_memory.adapters.dynamo.pynamodb_internals import create_client

        binding = tables.bind_tables(
            memory_table=self.table_names["MemoryTable"],
            sessions_table=self.table_names["SessionsTable"],
            flow_log_table=self.table_names["FlowLogTable"],
        )
        if self._isolated:
            for model, _table in binding.models():
                create_client(model)
        self._bound_marker = binding

    def _ensure_bound(self) -> None:
        """Bind again when someone else bound the models since (``bind_tables`` in a test)."""
        from agent_memory.adapters.dynamo import tables

        if tables.current_binding() is not self._bound_marker:
            self._bind_models()


def merge_function_environments(specs: list[FunctionSpec]) -> dict[str, str]:
    """The one environment every function gets locally (they share ``os.environ``).

    Raises:
        LocalStackError: two functions set the same variable to different values (locally
            one of them would silently run with the other's value).
    """
    merged: dict[str, str] = {}
    owner: dict[str, str] = {}
    conflicts: list[str] = []
    for spec in specs:
        for name, value in spec.environment.items():
            if name in merged and merged[name] != value:
                conflicts.append(f"{name}: {owner[name]}={merged[name]!r} vs {spec.logical_id}={value!r}")
                continue
            merged.setdefault(name, value)
            owner.setdefault(name, spec.logical_id)
    if conflicts:
        raise LocalStackError(
            "functions disagree on environment variables, which the local runtime shares: " + "; ".join(conflicts)
        )
    return merged
